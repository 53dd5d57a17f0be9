package report

import (
	"fmt"
	"strings"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/planner"
)

// runtimeMetrics are the figures a runtime comparison sets side by side:
// TTFT at three percentiles first (prefix caching moves it most), then
// TPOT, latency and the throughputs.
var runtimeMetrics = []string{
	"ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "tpot_p95_ms", "latency_p95_ms",
	"output_token_throughput", "request_throughput",
}

// compareRuntimes sets every lane of a screen comparing runtimes beside
// its lane on the first runtime. campaigns holds each lane's campaign by
// lane ID (for the hit ratios).
func compareRuntimes(sc *planner.Screen, lanes []*planner.Lane, figures map[string][]runFigures, campaigns map[string]*evidence.Campaign, resamples int) []evidence.RuntimeComparison {
	if len(sc.Runtimes) < 2 {
		return nil
	}
	ref := sc.Runtimes[0]
	base := map[[3]string]*planner.Lane{}
	for _, l := range lanes {
		if l.Runtime == ref {
			base[[3]string{l.Model, l.Shape, l.GPU}] = l
		}
	}
	out := []evidence.RuntimeComparison{}
	for _, l := range lanes {
		b := base[[3]string{l.Model, l.Shape, l.GPU}]
		if l.Runtime == ref || b == nil {
			continue
		}
		c := evidence.RuntimeComparison{
			Profile: l.Shape, GPU: l.GPU, Model: l.Model,
			Candidate: l.Runtime, Baseline: b.Runtime, CandidateLane: l.ID, BaselineLane: b.ID,
			Metrics: []evidence.RuntimeDelta{},
		}
		cf, bf := figures[l.ID], figures[b.ID]
		for _, metric := range runtimeMetrics {
			r, ok := ratioOf(cf, bf, metric, sc.Seed, l.ID+"/"+b.ID+"/"+metric, resamples)
			if !ok {
				continue
			}
			cv, _ := statistic(cf, metric, nil)
			bv, _ := statistic(bf, metric, nil)
			c.Metrics = append(c.Metrics, evidence.RuntimeDelta{Ratio: r, Candidate: cv, Baseline: bv, Delta: cv - bv})
		}
		if c.PrefixCache = hitRatios(campaigns[l.ID], campaigns[b.ID]); c.PrefixCache != nil {
			c.PrefixCache.CandidateCaching, c.PrefixCache.BaselineCaching = prefixCaching(l), prefixCaching(b)
		}
		if len(c.Metrics) > 0 || c.PrefixCache != nil {
			out = append(out, c)
		}
	}
	return out
}

// prefixCaching says whether the plan resolved the lane's engine with
// prefix caching on.
func prefixCaching(l *planner.Lane) bool {
	return l.Perf != nil && l.Perf.Engine.PrefixCaching
}

// hitRatios pairs two campaigns' prefix-cache hit ratios; nil when the
// shape shares no prefix.
func hitRatios(cand, base *evidence.Campaign) *evidence.RuntimeHitRatio {
	pc := func(c *evidence.Campaign) *evidence.PrefixCacheMix {
		if c == nil || c.RequestMix == nil {
			return nil
		}
		return c.RequestMix.PrefixCache
	}
	cp, bp := pc(cand), pc(base)
	if cp == nil || bp == nil {
		return nil
	}
	h := &evidence.RuntimeHitRatio{Intended: cp.Intended, Candidate: cp.Achieved, Baseline: bp.Achieved}
	if cp.Achieved != nil && bp.Achieved != nil {
		h.Delta = ptr(*cp.Achieved - *bp.Achieved)
	}
	return h
}

// runtimeMetricWords names the runtime comparison's metrics in tables.
var runtimeMetricWords = map[string]string{
	"ttft_p50_ms": "p50 TTFT ms", "ttft_p95_ms": "p95 TTFT ms", "ttft_p99_ms": "p99 TTFT ms",
	"tpot_p95_ms": "p95 TPOT ms", "latency_p95_ms": "p95 latency ms",
	"output_token_throughput": "output tok/s", "request_throughput": "requests/s",
}

// runtimeRow is one row of a runtime comparison table, shared by the
// Markdown and HTML reports: metric, reference, candidate, delta, ratio.
func runtimeRows(c *evidence.RuntimeComparison) [][5]string {
	var rows [][5]string
	for _, d := range c.Metrics {
		better := "lower is better"
		if d.HigherIsBetter {
			better = "higher is better"
		}
		ratio := fmt.Sprintf("%.2fx", d.Value)
		switch {
		case d.CI95 == nil:
			ratio += " (no interval: needs 2 runs of each)"
		case d.Note != "":
			ratio += fmt.Sprintf(" (95%% CI %.2f–%.2f; too few runs to call it significant)", d.CI95.Low, d.CI95.High)
		case d.Significant:
			ratio += fmt.Sprintf(" (95%% CI %.2f–%.2f, significant)", d.CI95.Low, d.CI95.High)
		default:
			ratio += fmt.Sprintf(" (95%% CI %.2f–%.2f, not significant)", d.CI95.Low, d.CI95.High)
		}
		rows = append(rows, [5]string{runtimeMetricWords[d.Metric] + " (" + better + ")",
			fmt.Sprintf("%.1f", d.Baseline), fmt.Sprintf("%.1f", d.Candidate), fmt.Sprintf("%+.1f", d.Delta), ratio})
	}
	if h := c.PrefixCache; h != nil {
		pct := func(p *float64, caching bool) string {
			switch {
			case p != nil:
				return fmt.Sprintf("%.1f%%", 100**p)
			case !caching:
				return "none reported (prefix caching off)"
			}
			return "not reported"
		}
		delta := "-"
		if h.Delta != nil {
			delta = fmt.Sprintf("%+.1f pp", 100**h.Delta)
		}
		rows = append(rows, [5]string{fmt.Sprintf("prefix-cache hit ratio achieved (intended %.1f%%)", 100*h.Intended),
			pct(h.Baseline, h.BaselineCaching), pct(h.Candidate, h.CandidateCaching), delta, ""})
	}
	return rows
}

// runtimeTitle heads one runtime comparison.
func runtimeTitle(c *evidence.RuntimeComparison) string {
	return fmt.Sprintf("%s on %s (%s): %s against %s", c.Model, c.Profile, c.GPU, c.Candidate, c.Baseline)
}

// runtimeIntro explains the runtime comparison tables.
const runtimeIntro = "Each lane beside the lane that differs from it only by runtime, on the screen's first runtime (the reference). Delta is candidate minus reference in the metric's unit; the ratio is candidate over reference with a run-level bootstrap interval. The hit ratio is what each server reported (its prefix-cache counters, else usage)."

// writeRuntimeComparisons writes the Markdown tables of a screen that
// compares runtimes.
func writeRuntimeComparisons(b *strings.Builder, ev *evidence.Evidence) {
	if len(ev.RuntimeComparisons) == 0 {
		return
	}
	b.WriteString("\n## Runtime comparisons\n\n" + runtimeIntro + "\n")
	for i := range ev.RuntimeComparisons {
		c := &ev.RuntimeComparisons[i]
		fmt.Fprintf(b, "\n### %s\n\n| metric | %s (reference) | %s | delta | ratio |\n|---|---:|---:|---:|---|\n", runtimeTitle(c), c.Baseline, c.Candidate)
		for _, r := range runtimeRows(c) {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", cell(r[0]), r[1], r[2], r[3], cell(r[4]))
		}
	}
}

// environmentRuntimeWords names the screen's runtime ("vllm 0.22.1"), or
// each runtime it compares by block ("runtimes vllm: vllm 0.22.1, ...").
func environmentRuntimeWords(env evidence.Environment) string {
	if len(env.Runtimes) == 0 {
		return runtimeWords(env.Runtime)
	}
	parts := make([]string, len(env.Runtimes))
	for i, r := range env.Runtimes {
		parts[i] = r.Name + ": " + runtimeWords(r)
		if len(r.Args) > 0 {
			parts[i] += " " + strings.Join(r.Args, " ")
		}
	}
	return "runtimes " + strings.Join(parts, "; ")
}
