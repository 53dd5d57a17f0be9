package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/load"
)

// RequestMix sets what a lane's drawn workload asked for beside what its
// runs sent and what the server did with it: the length distributions, the
// draws clipped to the window, and prefix-cache reuse.
type RequestMix struct {
	// Spec is the workload as planned (distributions, prefix, session).
	Spec *load.Spec `json:"spec"`
	// InputTokens and OutputTokens compare the intended percentiles with
	// those of the measured requests (server-counted prompt and completion
	// tokens of succeeded requests, nearest rank).
	InputTokens  LengthMix `json:"input_tokens"`
	OutputTokens LengthMix `json:"output_tokens"`
	// Clipped counts the draws of all runs cut to the window.
	Clipped int `json:"clipped"`
	// PrefixCache is set for shapes with a prefix or sessions.
	PrefixCache *PrefixCacheMix `json:"prefix_cache,omitempty"`
	// Sessions is set for shapes with sessions: the turns they ask for
	// beside the turns the planned and the sent conversations reached.
	Sessions *SessionMix `json:"sessions,omitempty"`
}

// SessionMix compares a session shape's turns with its conversations,
// over the measured requests of every run.
type SessionMix struct {
	// Turns is the turns each session asks for.
	Turns int `json:"turns"`
	// Intended sums the runs' planned sessions: a session restarts (a new
	// conversation at turn 1) when its next turn would overflow the window.
	Intended load.SessionStats `json:"intended"`
	// SentSessions counts the sessions with a succeeded turn, SentFull
	// those whose every one of Turns turns succeeded, and SentMostTurns is
	// the most turns of one session that succeeded (a failed turn ends its
	// session).
	SentSessions  int `json:"sent_sessions"`
	SentFull      int `json:"sent_full"`
	SentMostTurns int `json:"sent_most_turns"`
}

// LengthMix is one length's intended percentiles (of the planned requests,
// after clipping to the window) and sent ones.
type LengthMix struct {
	Intended Quantiles `json:"intended"`
	Sent     Quantiles `json:"sent"`
	Samples  int       `json:"samples"`
}

// Quantiles are p50, p90, p95 and p99.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// PrefixCacheMix is the intended and achieved prefix-cache hit ratio
// (cached over prompt tokens of measured requests).
type PrefixCacheMix struct {
	// Intended follows from the drawn requests: whole blocks of a prompt
	// that an earlier request of its group or session left in a cache of
	// unbounded size (the warm-up requests fill it first).
	Intended float64 `json:"intended"`
	// Achieved is what the server reported, from AchievedSource: its
	// prefix-cache counters over the measured requests of every run when
	// it exports them (vLLM does), else usage.prompt_tokens_details (vLLM
	// fills it only with --enable-prompt-tokens-details); nil when neither.
	Achieved       *float64 `json:"achieved,omitempty"`
	AchievedSource string   `json:"achieved_source,omitempty"`
	// PromptTokens and CachedTokens sum usage over the measured requests
	// that reported cached tokens; ServerQueriedTokens and ServerHitTokens
	// are the counters' change.
	PromptTokens        int64   `json:"prompt_tokens"`
	CachedTokens        int64   `json:"cached_tokens"`
	ServerQueriedTokens float64 `json:"server_queried_tokens,omitempty"`
	ServerHitTokens     float64 `json:"server_hit_tokens,omitempty"`
}

// quantilesOf returns the nearest-rank quantiles of v (sorted in place).
func quantilesOf(v []float64) Quantiles {
	sort.Float64s(v)
	return Quantiles{load.NearestRank(v, 0.5), load.NearestRank(v, 0.9), load.NearestRank(v, 0.95), load.NearestRank(v, 0.99)}
}

// requestMix compares a lane's planned workload with its runs' records;
// nil for lanes that send fixed sizes.
func requestMix(l *planner.Lane, runs []RunData) *RequestMix {
	in := &l.Inputs
	w := in.Workload
	if !w.Active() {
		return nil
	}
	m := &RequestMix{Spec: w}
	var prompts, outputs, planIn, planOut []float64
	var planned load.Stats
	var cachedTokens, reportedPrompt int64
	var serverQueried, serverHits float64
	reported, counted := false, len(runs) > 0
	if w.Session != nil {
		m.Sessions = &SessionMix{Turns: w.Session.Turns}
	}
	for _, r := range runs {
		seed := in.Seed + int64(r.Run-1)
		seq := w.Sequence(seed, in.Requests, in.InputTokens, in.OutputTokens)
		if sm := m.Sessions; sm != nil {
			sm.add(load.Sessions(seq, sm.Turns), r.Records)
		}
		for _, q := range seq {
			planIn, planOut = append(planIn, float64(q.Input)), append(planOut, float64(q.Output))
		}
		st := load.Summarize(w.Warmup(seed, in.Warmup, in.InputTokens, in.OutputTokens), seq, w.BlockSize)
		planned.Clipped += st.Clipped
		planned.PromptTokens += st.PromptTokens
		planned.CachedTokens += st.CachedTokens
		if v := r.ServerView; v != nil && v.PrefixCache != nil {
			serverQueried += v.PrefixCache.QueriedTokens
			serverHits += v.PrefixCache.HitTokens
		} else {
			counted = false
		}
		for _, rec := range r.Records {
			if rec.Warmup || !rec.OK() {
				continue
			}
			prompts = append(prompts, float64(rec.PromptTokens))
			outputs = append(outputs, float64(rec.OutputTokens))
			if rec.CachedTokens != nil {
				reported = true
				cachedTokens += int64(*rec.CachedTokens)
				reportedPrompt += int64(rec.PromptTokens)
			}
		}
	}
	m.Clipped = planned.Clipped
	m.InputTokens = LengthMix{Intended: quantilesOf(planIn), Sent: quantilesOf(prompts), Samples: len(prompts)}
	m.OutputTokens = LengthMix{Intended: quantilesOf(planOut), Sent: quantilesOf(outputs), Samples: len(outputs)}
	if w.Prefix != nil || w.Session != nil {
		pc := &PrefixCacheMix{Intended: planned.HitRatio(), PromptTokens: reportedPrompt, CachedTokens: cachedTokens}
		switch {
		case counted && serverQueried > 0:
			pc.Achieved = ptr(serverHits / serverQueried)
			pc.AchievedSource = "vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total"
			pc.ServerQueriedTokens, pc.ServerHitTokens = serverQueried, serverHits
		case reported && reportedPrompt > 0:
			pc.Achieved = ptr(float64(cachedTokens) / float64(reportedPrompt))
			pc.AchievedSource = "usage.prompt_tokens_details.cached_tokens"
		}
		m.PrefixCache = pc
	}
	return m
}

// add counts one run: its planned sessions' statistics and the turns its
// succeeded measured records reached.
func (sm *SessionMix) add(planned load.SessionStats, records []loadgen.Record) {
	sm.Intended.Sessions += planned.Sessions
	sm.Intended.Restarted += planned.Restarted
	sm.Intended.MostTurns = max(sm.Intended.MostTurns, planned.MostTurns)
	ok := map[int]int{} // session -> succeeded turns
	for _, rec := range records {
		if !rec.Warmup && rec.OK() {
			ok[rec.Session]++
		}
	}
	for _, n := range ok {
		sm.SentSessions++
		sm.SentMostTurns = max(sm.SentMostTurns, n)
		if n >= sm.Turns {
			sm.SentFull++
		}
	}
}

// requestMixTable sets drawn workloads' intended lengths beside those
// sent, with clipped draws, prefix-cache reuse and sessions (empty when
// no lane drew its workload).
func requestMixTable(ev *Evidence) reportTable {
	t := reportTable{Title: "Workload as sent",
		Intro:   "Intended percentiles are those of the planned requests (after clipping to the window); sent ones are what the server counted for succeeded requests.",
		Header:  []string{"model", "shape", "input p50/p95/p99 intended", "sent", "output p50/p95/p99 intended", "sent", "clipped", "prefix-cache hit intended", "achieved"},
		Numeric: []bool{false, false, false, false, false, false, true, true, true}}
	q := func(x Quantiles) string { return fmt.Sprintf("%.0f / %.0f / %.0f", x.P50, x.P95, x.P99) }
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			x := c.RequestMix
			if x == nil {
				continue
			}
			intended, achieved := "-", "-"
			if pc := x.PrefixCache; pc != nil {
				intended = fmt.Sprintf("%.1f%%", 100*pc.Intended)
				achieved = "not reported"
				if pc.Achieved != nil {
					achieved = fmt.Sprintf("%.1f%% (%s)", 100**pc.Achieved, pc.AchievedSource)
				}
			}
			t.Rows = append(t.Rows, []string{m.Model, c.shapeWords(),
				q(x.InputTokens.Intended), q(x.InputTokens.Sent), q(x.OutputTokens.Intended), q(x.OutputTokens.Sent),
				fmt.Sprint(x.Clipped), intended, achieved})
		}
	}
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			if c.RequestMix == nil || c.RequestMix.Sessions == nil {
				continue
			}
			sm := c.RequestMix.Sessions
			t.Notes = append(t.Notes, fmt.Sprintf("Sessions of %s on %s, %d turns each: planned %d, %d of them restarted early (the next turn would overflow the window), the longest %s; sent %d, %d with every turn succeeded, the longest %s.",
				c.shapeWords(), m.Model, sm.Turns, sm.Intended.Sessions, sm.Intended.Restarted, turnsWord(sm.Intended.MostTurns),
				sm.SentSessions, sm.SentFull, turnsWord(sm.SentMostTurns)))
		}
	}
	return t
}

// writeRequestMix writes the Markdown table of drawn workloads.
func writeRequestMix(b *strings.Builder, ev *Evidence) {
	t := requestMixTable(ev)
	t.markdown(b)
}

// turnsWord is "1 turn" or "N turns".
func turnsWord(n int) string {
	if n == 1 {
		return "1 turn"
	}
	return fmt.Sprintf("%d turns", n)
}
