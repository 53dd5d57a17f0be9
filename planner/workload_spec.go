package planner

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/load"
)

// workloadSpec converts a shape's lengths, prefix and session blocks to the
// load the lane sends; nil when the shape has none of them, so fixed-size
// lanes keep their inputs (and IDs) as before.
func workloadSpec(s *lang.Shape) *load.Spec {
	if s.Lengths == nil && s.Prefix == nil && s.Session == nil {
		return nil
	}
	w := &load.Spec{}
	if ls := s.Lengths; ls != nil {
		w.Input, w.Output = loadDist(ls.Input, false), loadDist(ls.Output, false)
	}
	if p := s.Prefix; p != nil {
		w.Prefix = &load.Prefix{Groups: p.Groups, SharedTokens: p.SharedTokens, HitRatio: loadDist(p.HitRatio, true)}
	}
	if ss := s.Session; ss != nil {
		w.Session = &load.Session{Turns: ss.Turns}
	}
	return w
}

// loadDist converts a spec distribution.
func loadDist(d *lang.Distribution, fraction bool) *load.Dist {
	if d == nil {
		return nil
	}
	if len(d.Points) > 0 {
		out := load.Dist{Kind: load.KindEmpirical, Fraction: fraction}
		for _, p := range d.Points {
			out.Points = append(out.Points, load.Point{Q: p.Q, V: p.V})
		}
		return &out
	}
	if len(d.Percentiles) == 4 {
		p := d.Percentiles
		out := load.FromPercentiles(p[0], p[1], p[2], p[3], fraction)
		return &out
	}
	return &load.Dist{Kind: load.KindLognormal, Median: d.Median, Sigma: d.Sigma}
}

// resolveWorkload fixes what the load generator needs beyond the shape: the
// window draws are clipped to (the server's context less any template
// reserve, see templateReserve) and the server's KV block size (from the
// resolved runtime, vLLM's default without one), which decides the cache
// hits a prefix shape intends.
func resolveWorkload(l *lanePlan) {
	w := l.Inputs.Workload
	if w == nil {
		return
	}
	if ctx, _ := effectiveContext(l); ctx > 0 {
		w.Window = max(ctx-templateReserve(l.Inputs), 0)
	}
	w.BlockSize = load.DefaultBlockSize
	if l.Perf != nil {
		w.BlockSize = l.Perf.Engine.BlockSize
	}
}

// workloadChecks reports what a lane's drawn requests do against its window:
// the fraction clipped, the intended prefix-cache hit ratio, and a load the
// load generator cannot send.
func workloadChecks(l *lanePlan, name string, f *findings) {
	w := l.Inputs.Workload
	if w == nil {
		return
	}
	if err := w.Validate(); err != nil {
		f.add(SeverityError, l.ID, "", fmt.Sprintf("shape %q cannot be sent: %v", l.Shape, err),
			fmt.Sprintf("%s: fix the lengths, prefix or session block of shape %q.", name, l.Shape))
		return
	}
	in := l.Inputs
	seq := w.Sequence(in.Seed, in.Requests, in.InputTokens, in.OutputTokens)
	st := load.Summarize(w.Warmup(in.Seed, in.Warmup, in.InputTokens, in.OutputTokens), seq, w.BlockSize)
	if st.Clipped > 0 {
		frac := float64(st.Clipped) / float64(st.Requests)
		sev := SeverityNote
		if frac > 0.05 {
			sev = SeverityWarning
		}
		f.add(sev, l.ID, "", fmt.Sprintf("%.1f%% of requests clipped to the %d-token window in shape %q", 100*frac, w.Window, l.Shape),
			fmt.Sprintf("%s: %d of %d drawn requests would exceed the context window less template headroom (%d tokens); their output is cut to at most half the window and their prompt fills the rest, as profile shapes are clipped. Raise the context window, or narrow the distribution, to screen the tail as drawn.",
				name, st.Clipped, st.Requests, w.Window))
	}
	if w.Input != nil || w.Output != nil || w.Session != nil {
		tailMemoryCheck(l, name, w, f)
	}
	prefixChecks(l, name, w, seq, f)
	sessionChecks(l, name, w, seq, f)
	if w.Prefix != nil || w.Session != nil {
		off := "A runtime without prefix caching reuses none of them."
		if l.Perf != nil && !l.Perf.Engine.PrefixCaching {
			off = fmt.Sprintf("Runtime %q has prefix caching off, so its server reuses none of them and the estimate prefills every prompt token.", orDefault(l.Runtime, "(none)"))
		}
		f.add(SeverityNote, l.ID, "", fmt.Sprintf("intended prefix-cache hit ratio %.1f%% in shape %q", 100*st.HitRatio(), l.Shape),
			fmt.Sprintf("%s: %d of %d prompt tokens are shared with an earlier sent request in whole %d-token blocks, what an unbounded cache would serve if each request's blocks were cached the moment it was sent; the estimate applies the engine's rule (a request finds the blocks of steps that completed before it was first scheduled, in a cache of the KV cache's size), so requests of a group in flight together reach less. The evidence reports the hit ratio the server achieved beside this one. %s",
				name, st.CachedTokens, st.PromptTokens, w.BlockSize, off))
	}
}

// tailMemoryCheck warns when the drawn requests' tail does not fit the KV
// cache at the shape's concurrency (the median's fit is memoryCheck's): a
// run of long requests would then queue or be preempted.
func tailMemoryCheck(l *lanePlan, name string, w *load.Spec, f *findings) {
	if len(l.missing) > 0 || !l.hwOK {
		return
	}
	in := l.Inputs
	seq := w.Sequence(in.Seed, in.Requests, in.InputTokens, in.OutputTokens)
	sizes := make([]float64, len(seq))
	for i, q := range seq {
		sizes[i] = float64(q.Input + q.Output)
	}
	sort.Float64s(sizes)
	p95 := load.NearestRank(sizes, 0.95)
	capacity := l.kvCapacity()
	if need := float64(in.Concurrency) * p95; need > capacity && capacity > 0 {
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("the tail of shape %q does not fit the KV cache: %d x %.0f tokens (p95 request) > %.0f", l.Shape, in.Concurrency, p95, capacity),
			fmt.Sprintf("%s: when %d of the longest 5%% of requests run together they need %.0f tokens of KV cache and the GPU holds %.0f, so they queue or are preempted and the tail's latency includes it. Lower concurrency in shape %q to %d, or use a larger GPU or more GPUs in gpu %q.",
				name, in.Concurrency, need, capacity, l.Shape, max(1, int(capacity/p95)), l.GPU))
	}
}

// prefixChecks reports a fixed shared prefix that the drawn prompts or the
// server's cache cannot honour: drawn prompts (lengths.input, or clipped to
// the window) not longer than shared_tokens are cut to their group's prefix
// less their last token, all of them an error, some a warning with the
// fraction (the spec's validate already rejects a shared_tokens of a fixed
// input_tokens or more); and a prefix shorter than one KV-cache block is
// never reused, as a prefix cache serves whole blocks only.
func prefixChecks(l *lanePlan, name string, w *load.Spec, seq []load.Request, f *findings) {
	p := w.Prefix
	if p == nil || p.SharedTokens < 1 || len(seq) == 0 {
		return
	}
	at := "in shape " + quote(l.Shape)
	if sh := l.blocks.shape; sh != nil && sh.Prefix != nil {
		sp := sh.Prefix
		if r, ok := sp.AttrRanges["shared_tokens"]; ok {
			at = "at " + posOf(r)
		}
	}
	ins := make([]float64, len(seq))
	for i, q := range seq {
		ins[i] = float64(q.Input)
	}
	sort.Float64s(ins)
	switch cut := w.PrefixCut(seq); {
	case cut == len(seq):
		f.add(SeverityError, l.ID, "", fmt.Sprintf("the prefix of shape %q is not shorter than any drawn prompt", l.Shape),
			fmt.Sprintf("%s: shared_tokens (%d, %s) is at least the length of every drawn prompt (the longest is %.0f tokens, after clipping to the window), so each request would be its group's prefix cut to its prompt less its last token, with nothing of its own. Set shared_tokens below the prompts' lengths (their p10 is %.0f), or use hit_ratio to share a fraction of each prompt.",
				name, p.SharedTokens, at, ins[len(ins)-1], load.NearestRank(ins, 0.1)))
		return
	case cut > 0:
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("%.1f%% of drawn prompts are not longer than the prefix in shape %q", 100*float64(cut)/float64(len(seq)), l.Shape),
			fmt.Sprintf("%s: %d of %d drawn prompts are at most shared_tokens (%d, %s) long; their shared part is cut to the prompt less its last token, so each of them is its group's prefix with nothing of its own (the intended hit ratio counts them so). Set shared_tokens below the short prompts (their p10 is %.0f), or use hit_ratio to share a fraction of each prompt.",
				name, cut, len(seq), p.SharedTokens, at, load.NearestRank(ins, 0.1)))
	}
	if p.SharedTokens < w.BlockSize {
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("the prefix of shape %q is shorter than one %d-token KV-cache block", l.Shape, w.BlockSize),
			fmt.Sprintf("%s: shared_tokens (%d, %s) is below the server's KV-cache block size (%d tokens); a prefix cache reuses whole blocks only, so no request reuses its group's prefix. Set shared_tokens to %d or more.",
				name, p.SharedTokens, at, w.BlockSize, w.BlockSize))
	}
}

// sessionChecks reports sessions that do not run as the shape says: turns
// that would overflow the window start a new session instead (the
// conversation restarts at turn 1), and fewer sessions than streams leave
// streams idle (each stream runs whole sessions, closed loop).
func sessionChecks(l *lanePlan, name string, w *load.Spec, seq []load.Request, f *findings) {
	if w.Session == nil || len(seq) == 0 {
		return
	}
	in, turns := l.Inputs, w.Session.Turns
	st := load.Sessions(seq, turns)
	if st.Restarted > 0 {
		frac := float64(st.Restarted) / float64(st.Sessions)
		sev := SeverityNote
		if frac > 0.05 {
			sev = SeverityWarning
		}
		sum := fmt.Sprintf("%.1f%% of sessions restart before turn %d in shape %q: at most %s fit the %d-token window", 100*frac, turns, l.Shape, plural(st.MostTurns, "turn"), w.Window)
		if st.MostTurns == 1 {
			sum = fmt.Sprintf("no session of shape %q gets past turn 1: a second turn overflows the %d-token window", l.Shape, w.Window)
		}
		f.add(sev, l.ID, "", sum,
			fmt.Sprintf("%s: a turn's prompt holds the conversation so far (the earlier prompts and answers) and its new message; a turn that would overflow the context window less template headroom (%d tokens) starts a new session instead, so %d of %d sessions end before their %d turns and the longest holds %d. The requests are still sent, as shorter conversations, and the intended prefix-cache hit ratio counts only the history they carry. For %d turns of %d + %d tokens the window must hold about %d tokens: lower input_tokens or output_tokens or turns in shape %q, or raise the context window.",
				name, w.Window, st.Restarted, st.Sessions, turns, st.MostTurns, turns, in.InputTokens, in.OutputTokens, turns*(in.InputTokens+in.OutputTokens), l.Shape))
	}
	if st.Sessions < in.Concurrency {
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("%s for concurrency %d in shape %q", plural(st.Sessions, "session"), in.Concurrency, l.Shape),
			fmt.Sprintf("%s: each stream runs whole sessions (every turn waits for the answer to the last), so %d requests in sessions of %d turns keep at most %d of the %d streams busy and the load is lighter than the shape says. Set requests to at least %d (concurrency x turns) or lower concurrency to %d in shape %q.",
				name, in.Requests, turns, st.Sessions, in.Concurrency, in.Concurrency*turns, st.Sessions, l.Shape))
	}
}

// posOf renders a range's start as file:line:col.
func posOf(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}
