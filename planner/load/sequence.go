package load

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// DefaultBlockSize is vLLM's KV-cache block size (--block-size): prefix
// caching reuses whole blocks only.
const DefaultBlockSize = 16

// Spec is what a lane sends beyond one fixed (input, output) pair. A zero
// Spec sends the shape's fixed token counts with prompts that share nothing.
type Spec struct {
	// Input and Output draw each request's prompt and output length; nil
	// keeps the shape's fixed count.
	Input  *Dist `json:"input,omitempty"`
	Output *Dist `json:"output,omitempty"`
	// Window is the most tokens a request may hold (prompt and output:
	// the model's context window less any template headroom). A draw over
	// it is clipped by the preflight rule: output = min(output, max(1,
	// window/2)), input = window - output.
	Window int `json:"window,omitempty"`
	// BlockSize is the server's KV-cache block size: a prefix cache reuses
	// whole blocks only (0: DefaultBlockSize).
	BlockSize int `json:"block_size,omitempty"`
	// Prefix makes prompts share leading tokens within groups.
	Prefix *Prefix `json:"prefix,omitempty"`
	// Session makes requests multi-turn conversations.
	Session *Session `json:"session,omitempty"`
}

// Prefix describes prompts that share a prefix: every request belongs to
// one of Groups groups, and its first Shared tokens (counted from the start
// of the prompt the server sees, chat template included) are its group's.
type Prefix struct {
	Groups int `json:"groups"`
	// SharedTokens is the shared length of every prompt, or HitRatio the
	// distribution of the shared fraction of each prompt (one is set).
	SharedTokens int   `json:"shared_tokens,omitempty"`
	HitRatio     *Dist `json:"hit_ratio,omitempty"`
}

// Session describes multi-turn conversations: each turn's prompt holds the
// earlier turns' prompts and answers, then a new user message of the
// drawn input length.
type Session struct {
	Turns int `json:"turns"`
}

// Active reports whether s asks for anything beyond fixed sizes.
func (s *Spec) Active() bool {
	return s != nil && (s.Input != nil || s.Output != nil || s.Prefix != nil || s.Session != nil)
}

// Validate reports what makes s unusable.
func (s *Spec) Validate() error {
	if s == nil {
		return nil
	}
	for _, d := range []struct {
		name string
		d    *Dist
	}{{"input", s.Input}, {"output", s.Output}} {
		if d.d == nil {
			continue
		}
		if err := d.d.Validate(); err != nil {
			return fmt.Errorf("%s length distribution: %w", d.name, err)
		}
		if d.d.Fraction {
			return fmt.Errorf("%s length distribution holds fractions; use token counts", d.name)
		}
	}
	if s.Window < 0 {
		return fmt.Errorf("window %d must not be negative", s.Window)
	}
	if p := s.Prefix; p != nil {
		switch {
		case p.Groups < 1:
			return fmt.Errorf("prefix groups %d must be at least 1", p.Groups)
		case (p.SharedTokens > 0) == (p.HitRatio != nil):
			return fmt.Errorf("set exactly one of prefix shared_tokens and hit_ratio")
		case p.SharedTokens < 0:
			return fmt.Errorf("prefix shared_tokens %d must be positive", p.SharedTokens)
		}
		if p.HitRatio != nil {
			if !p.HitRatio.Fraction {
				return fmt.Errorf("prefix hit_ratio must be a distribution of fractions")
			}
			if err := p.HitRatio.Validate(); err != nil {
				return fmt.Errorf("prefix hit_ratio: %w", err)
			}
		}
	}
	if ss := s.Session; ss != nil {
		if ss.Turns < 2 {
			return fmt.Errorf("session turns %d must be at least 2 (one turn is a plain request)", ss.Turns)
		}
		if s.Prefix != nil {
			return fmt.Errorf("a shape has a prefix or a session, not both: a session's turns already share their history")
		}
	}
	return nil
}

// Request is one request of a sequence.
type Request struct {
	// Input is the prompt length the server should count (chat template
	// included); for a session turn, the whole conversation so far plus
	// the new message. Output is max_tokens.
	Input  int `json:"input"`
	Output int `json:"output"`
	// Clipped marks a draw cut to the window.
	Clipped bool `json:"clipped,omitempty"`
	// Group is the prefix group (-1: none) and Shared the leading tokens
	// the prompt shares with it.
	Group  int `json:"group"`
	Shared int `json:"shared,omitempty"`
	// Session and Turn place a session request (Turn 0 is the first);
	// History is the part of Input that earlier turns hold.
	Session int `json:"session,omitempty"`
	Turn    int `json:"turn,omitempty"`
	History int `json:"history,omitempty"`
}

// Sequence returns the n measured requests of a run with seed; fixedIn and
// fixedOut are the shape's token counts where s draws none. The sequence is
// a pure function of its arguments. Lengths are stratified: with n
// requests, each of n equal-probability slices of a distribution gets
// exactly one draw (in a seeded random order), so the sent lengths follow
// the distribution's percentiles closely even for modest n.
func (s *Spec) Sequence(seed int64, n, fixedIn, fixedOut int) []Request {
	return s.generate(seed, n, fixedIn, fixedOut, 0x5e9_0001)
}

// Warmup returns the k warm-up requests sent before the measured ones:
// drawn like the measured ones but from their own stream.
func (s *Spec) Warmup(seed int64, k, fixedIn, fixedOut int) []Request {
	return s.generate(seed, k, fixedIn, fixedOut, 0x3a5_0002)
}

func (s *Spec) generate(seed int64, n, fixedIn, fixedOut int, stream uint64) []Request {
	if s == nil {
		s = &Spec{}
	}
	out := make([]Request, n)
	var ins, outs, hits []float64
	if s.Input != nil {
		ins = stratified(*s.Input, n, uint64(seed), stream+1)
	}
	if s.Output != nil {
		outs = stratified(*s.Output, n, uint64(seed), stream+2)
	}
	if p := s.Prefix; p != nil && p.HitRatio != nil {
		hits = stratified(*p.HitRatio, n, uint64(seed), stream+3)
	}
	groups := rand.New(rand.NewPCG(uint64(seed), stream+4))
	turns := 0
	if s.Session != nil {
		turns = s.Session.Turns
	}
	session, turn, history := 0, 0, 0
	for i := range out {
		r := Request{Input: fixedIn, Output: fixedOut, Group: -1}
		if ins != nil {
			r.Input = roundHalfEven(ins[i])
		}
		if outs != nil {
			r.Output = roundHalfEven(outs[i])
		}
		if turns > 0 {
			// A turn that would overflow the window starts a new session.
			if turn > 0 && (turn >= turns || (s.Window > 0 && history+r.Input+r.Output > s.Window)) {
				session, turn, history = session+1, 0, 0
			}
			r.Session, r.Turn, r.History = session, turn, history
			r.Input += history
		}
		r.Input, r.Output, r.Clipped = Clip(r.Input, r.Output, s.Window)
		if r.History >= r.Input {
			r.History = 0 // clipped away: the turn no longer carries its history
		}
		if turns > 0 {
			history = r.Input + r.Output
			turn++
		}
		if p := s.Prefix; p != nil {
			r.Group = groups.IntN(p.Groups)
			shared := p.SharedTokens
			if hits != nil {
				shared = roundHalfEven(hits[i] * float64(r.Input))
			}
			r.Shared = max(0, min(shared, r.Input-1))
		}
		out[i] = r
	}
	return out
}

// Clip applies the preflight rule to one request: when input + output is
// over window (0: no window), output = min(output, max(1, window/2)) and
// input = window - output.
func Clip(input, output, window int) (int, int, bool) {
	if window <= 0 || input+output <= window {
		return input, output, false
	}
	output = min(output, max(1, window/2))
	return window - output, output, true
}

// stratified returns n draws of d: the i-th of n equal slices of [0, 1) is
// drawn once, at a seeded point inside it, and the slices are shuffled.
func stratified(d Dist, n int, seed, stream uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, stream))
	perm := rng.Perm(n)
	out := make([]float64, n)
	for i, k := range perm {
		out[i] = d.Quantile((float64(k) + rng.Float64()) / float64(n))
	}
	return out
}

// roundHalfEven rounds x to the nearest integer, ties to even, at least 1.
func roundHalfEven(x float64) int {
	return max(1, int(math.RoundToEven(x)))
}

// Stats summarises what a sequence asks of a server.
type Stats struct {
	Requests int `json:"requests"`
	// Clipped counts requests whose draw the window cut.
	Clipped int `json:"clipped"`
	// PromptTokens and CachedTokens sum the prompts and the part of them a
	// prefix cache of unbounded size, reusing whole blocks, would serve.
	PromptTokens int64 `json:"prompt_tokens"`
	CachedTokens int64 `json:"cached_tokens"`
}

// HitRatio is the intended prefix-cache hit ratio: cached over prompt tokens.
func (st Stats) HitRatio() float64 {
	if st.PromptTokens == 0 {
		return 0
	}
	return float64(st.CachedTokens) / float64(st.PromptTokens)
}

// Summarize returns the statistics of the measured requests, with the
// warm-up requests (sent first) filling the cache but not counted; see
// CachedTokens for the cache's rule.
func Summarize(warmup, measured []Request, blockSize int) Stats {
	_, cached := CachedTokens(warmup, measured, blockSize)
	var st Stats
	for i, r := range measured {
		st.Requests++
		if r.Clipped {
			st.Clipped++
		}
		st.PromptTokens += int64(r.Input)
		st.CachedTokens += int64(cached[i])
	}
	return st
}

// ServableTokens is how many of a prompt's prompt tokens a prefix cache
// holding its first cached tokens serves: whole blocks of blockSize, and
// never the prompt's last token (the engine computes it to sample the first
// output token, as vLLM does). The planner's intended hit ratio, the
// estimator's cache and the simulated engine's all apply this one rule.
func ServableTokens(cached, prompt, blockSize int) int {
	return max(min(cached, prompt-1), 0) / blockSize * blockSize
}

// CachedTokens returns, for the warm-up requests and then the measured
// ones in send order, the prompt tokens a prefix cache of unbounded size
// serves, by vLLM's rule: the longest run of whole blocks (blockSize
// tokens; 0: DefaultBlockSize) that an earlier request left, never the
// prompt's last token. A request shares its group's prefix (Shared tokens)
// or, in a session, the previous turn's whole conversation. The rule is
// untimed (every earlier sent request counts, as if its blocks were cached
// the moment it was sent): it is the intended ratio. The estimate and the
// simulated engine time it as vLLM does (planner.PrefixCache): blocks hit
// once the step that computed them completed before the request was first
// scheduled.
func CachedTokens(warmup, measured []Request, blockSize int) (warm, meas []int) {
	if blockSize < 1 {
		blockSize = DefaultBlockSize
	}
	type sessionKey struct {
		measured bool
		id       int
	}
	groupMax := map[int]int{}
	sessionCtx := map[sessionKey]int{}
	visit := func(r Request, measured bool) int {
		key := sessionKey{measured, r.Session}
		cached := 0
		switch {
		case r.Group >= 0:
			cached = min(r.Shared, groupMax[r.Group])
			groupMax[r.Group] = max(groupMax[r.Group], r.Shared)
		case r.Turn > 0:
			cached = min(r.History, sessionCtx[key])
		}
		sessionCtx[key] = r.Input + r.Output
		return ServableTokens(cached, r.Input, blockSize)
	}
	warm, meas = make([]int, len(warmup)), make([]int, len(measured))
	for i, r := range warmup {
		warm[i] = visit(r, false)
	}
	for i, r := range measured {
		meas[i] = visit(r, true)
	}
	return warm, meas
}

// PrefixCut counts the requests of reqs whose prompt is not longer than
// the spec's fixed shared prefix: their shared part is cut to the prompt
// less its last token (which the engine always computes), so the request
// is its group's prefix and nothing of its own. 0 without a fixed prefix.
func (s *Spec) PrefixCut(reqs []Request) int {
	if s == nil || s.Prefix == nil || s.Prefix.SharedTokens < 1 {
		return 0
	}
	n := 0
	for _, r := range reqs {
		if r.Group >= 0 && r.Input <= s.Prefix.SharedTokens {
			n++
		}
	}
	return n
}

// SessionStats says how the sessions of a sequence went against the turns
// its spec asks for.
type SessionStats struct {
	// Sessions counts the sessions (conversations) of the sequence.
	Sessions int `json:"sessions"`
	// Restarted counts the sessions that end before the turns asked for
	// because their next turn would overflow the window (the sequence's
	// last session, which the request count ends, is not counted).
	Restarted int `json:"restarted"`
	// MostTurns is the most turns a session of the sequence holds.
	MostTurns int `json:"most_turns"`
}

// Sessions summarises the sessions of reqs, a sequence of a spec asking
// for turns turns per session.
func Sessions(reqs []Request, turns int) SessionStats {
	var st SessionStats
	length := 0
	for i, r := range reqs {
		if r.Turn == 0 {
			st.Sessions++
			length = 0
		}
		length++
		st.MostTurns = max(st.MostTurns, length)
		if i+1 < len(reqs) && reqs[i+1].Turn == 0 && length < turns {
			st.Restarted++
		}
	}
	return st
}
