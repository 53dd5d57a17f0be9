package report

import (
	"fmt"
	"strings"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/search"
)

// GateFindings lists the gates of screen sc that can never be judged on
// lane l, whatever its runs measure, which evaluateGate would call
// INCONCLUSIVE after the runs: a metric the lane will not have (see
// absentMetric) is a preflight error, refused before anything is
// deployed; min_runs above the lane's runs, or max_cv where no coefficient
// of variation exists, a warning (the gate's own bar for a conclusive
// result, which an exploratory screen may knowingly not reach). cmd passes
// GateFindings in planner.Options.Checks.
func GateFindings(sc *planner.Screen, l *planner.Lane) []planner.Finding {
	if sc == nil {
		return nil
	}
	var out []planner.Finding
	bad := func(sev planner.Severity, g planner.Gate, summary, why string) {
		f := planner.Finding{Severity: sev, Lane: l.ID, Screen: sc.Name,
			Summary: fmt.Sprintf("gate %q can never be judged on lane %s: %s", g.Name, l.Key, summary),
			Detail: fmt.Sprintf("lane %s (%s): %s. Whatever the runs measure, gate %q would be INCONCLUSIVE on this lane; change the gate, or leave it out of screen %q's gates.",
				l.Key, l.ID, why, g.Name, sc.Name)}
		if sev == planner.SeverityWarning {
			f.Summary = fmt.Sprintf("gate %q will be INCONCLUSIVE on lane %s: %s", g.Name, l.Key, summary)
			f.Detail = fmt.Sprintf("lane %s (%s): %s. The gate's own threshold for a conclusive result cannot be met by this screen, so gate %q will be INCONCLUSIVE (exit 4) whatever the runs measure.",
				l.Key, l.ID, why, g.Name)
		}
		out = append(out, f)
	}
	for _, g := range sc.GateSpecs {
		for _, m := range g.Metrics {
			if why := absentMetric(l, m); why != "" {
				bad(planner.SeverityError, g, "lane."+m+" is never measured", why)
			}
		}
		// min_runs and max_cv are the gate's own bar for a conclusive
		// result; a screen with fewer runs is an exploratory one the plan
		// warns about (as it does below 5 runs), not an error.
		searched := l.Inputs.Search != nil
		switch {
		case g.MinRuns > 0 && !searched && l.Runs < g.MinRuns:
			bad(planner.SeverityWarning, g, fmt.Sprintf("min_runs = %d", g.MinRuns),
				fmt.Sprintf("the gate needs min_runs = %d completed runs and screen %q plans %d; raise runs in the screen to %d or lower min_runs", g.MinRuns, sc.Name, l.Runs, g.MinRuns))
		case g.MaxCV > 0 && searched:
			bad(planner.SeverityWarning, g, fmt.Sprintf("max_cv = %g", g.MaxCV),
				"max_cv judges the variation of throughput across runs, and a capacity search's lane aggregates its one point at capacity; remove max_cv")
		case g.MaxCV > 0 && l.Runs < 2:
			bad(planner.SeverityWarning, g, fmt.Sprintf("max_cv = %g", g.MaxCV),
				fmt.Sprintf("max_cv judges the variation of throughput across runs, which needs at least 2 runs, and screen %q plans %d; raise runs to 2 or more (5 for decision grade) or remove max_cv", sc.Name, l.Runs))
		}
	}
	return out
}

// absentMetric says why lane l will have no lane.METRIC (a dotted name
// as planner.Gate.Metrics lists them), or "" when it will have it or that
// is not known before the runs. The rules are the report's: laneValue
// holds what aggregate, coefficientOfVariation, pooledLatencies and
// buildCapacity produce from the lane's runs.
func absentMetric(l *planner.Lane, metric string) string {
	in := &l.Inputs
	group, name, grouped := strings.Cut(metric, ".")
	if !grouped {
		group, name = "", metric
	}
	if group == "failures" {
		return "" // every failure class is always present
	}
	if group == "cv" {
		if in.Search != nil {
			return "lane.cv.* is the variation across runs, and a capacity search's lane aggregates its one point at capacity"
		}
		if l.Runs < 2 {
			return fmt.Sprintf("lane.cv.* is the variation across runs, which needs at least 2 runs, and screen %q plans %d; raise runs to 2 or more (5 for decision grade)", l.Screen, l.Runs)
		}
	}
	for _, c := range evidence.CapacityMetrics {
		if name != c || group != "" {
			continue
		}
		switch {
		case in.Search == nil:
			return fmt.Sprintf("only a lane with a capacity search has lane.%s, and shape %q has no search; set search in the shape or gate on the lane's own figures", name, l.Shape)
		case name == "capacity_rps" && in.Search.Vary == search.VaryConcurrency:
			return fmt.Sprintf("search %q varies concurrency, so its capacity is lane.capacity_concurrency", in.Search.Name)
		case name == "capacity_concurrency" && in.Search.Vary != search.VaryConcurrency:
			return fmt.Sprintf("search %q varies request_rate, so its capacity is lane.capacity_rps", in.Search.Name)
		}
		return ""
	}
	family, _, _ := strings.Cut(name, "_")
	switch {
	case (family == "ttft" || family == "tpot" || family == "itl") && !in.Streaming:
		return fmt.Sprintf("shape %q does not stream (streaming = false), so first tokens and gaps between tokens are never seen and ttft, tpot and itl are not measured; set streaming = true or gate on latency", l.Shape)
	case (family == "tpot" || family == "itl") && in.Workload == nil && len(in.Pending) == 0 && in.OutputTokens == 1:
		return fmt.Sprintf("shape %q has output_tokens = 1, which leaves no gap between tokens, so tpot and itl are not measured; raise output_tokens or gate on ttft or latency", l.Shape)
	case (name == "goodput" || name == "good_fraction") && in.SLOTTFTMs == 0 && in.SLOTPOTMs == 0 && in.SLOLatencyMs == 0:
		return fmt.Sprintf("goodput and good_fraction count the requests that meet the lane's SLOs, and shape %q has no slo block; add one (ttft_ms, tpot_ms or latency_ms) or gate on other figures", l.Shape)
	}
	return ""
}
