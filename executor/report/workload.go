package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/load"
)

// quantilesOf returns the nearest-rank quantiles of v (sorted in place).
func quantilesOf(v []float64) evidence.Quantiles {
	sort.Float64s(v)
	return evidence.Quantiles{P50: load.NearestRank(v, 0.5), P90: load.NearestRank(v, 0.9), P95: load.NearestRank(v, 0.95), P99: load.NearestRank(v, 0.99)}
}

// requestMix compares a lane's planned workload with its runs' records;
// nil for lanes that send fixed sizes.
func requestMix(l *planner.Lane, runs []RunData) *evidence.RequestMix {
	in := &l.Inputs
	w := in.Workload
	if !w.Active() {
		return nil
	}
	m := &evidence.RequestMix{Spec: w}
	var prompts, outputs, planIn, planOut []float64
	var planned load.Stats
	var cachedTokens, reportedPrompt int64
	var serverQueried, serverHits float64
	reported, counted := false, len(runs) > 0
	if w.Session != nil {
		m.Sessions = &evidence.SessionMix{Turns: w.Session.Turns}
	}
	for _, r := range runs {
		seed := in.Seed + int64(r.Run-1)
		seq := w.Sequence(seed, in.Requests, in.InputTokens, in.OutputTokens)
		if sm := m.Sessions; sm != nil {
			addSessions(sm, load.Sessions(seq, sm.Turns), r.Records)
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
	m.InputTokens = evidence.LengthMix{Intended: quantilesOf(planIn), Sent: quantilesOf(prompts), Samples: len(prompts)}
	m.OutputTokens = evidence.LengthMix{Intended: quantilesOf(planOut), Sent: quantilesOf(outputs), Samples: len(outputs)}
	if w.Prefix != nil || w.Session != nil {
		pc := &evidence.PrefixCacheMix{Intended: planned.HitRatio(), PromptTokens: reportedPrompt, CachedTokens: cachedTokens}
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

// addSessions counts one run into sm: its planned sessions' statistics and the turns its
// succeeded measured records reached.
func addSessions(sm *evidence.SessionMix, planned load.SessionStats, records []loadgen.Record) {
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
func requestMixTable(ev *evidence.Evidence) reportTable {
	t := reportTable{Title: "Workload as sent",
		Intro:   "Intended percentiles are those of the planned requests (after clipping to the window); sent ones are what the server counted for succeeded requests.",
		Header:  []string{"model", "shape", "input p50/p95/p99 intended", "sent", "output p50/p95/p99 intended", "sent", "clipped", "prefix-cache hit intended", "achieved"},
		Numeric: []bool{false, false, false, false, false, false, true, true, true}}
	q := func(x evidence.Quantiles) string { return fmt.Sprintf("%.0f / %.0f / %.0f", x.P50, x.P95, x.P99) }
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
			t.Rows = append(t.Rows, []string{m.Model, c.ShapeWords(),
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
				c.ShapeWords(), m.Model, sm.Turns, sm.Intended.Sessions, sm.Intended.Restarted, turnsWord(sm.Intended.MostTurns),
				sm.SentSessions, sm.SentFull, turnsWord(sm.SentMostTurns)))
		}
	}
	return t
}

// writeRequestMix writes the Markdown table of drawn workloads.
func writeRequestMix(b *strings.Builder, ev *evidence.Evidence) {
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
