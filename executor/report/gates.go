package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/lang"
)

// GateSpec is a gate block as the report evaluates it.
type GateSpec struct {
	Name string
	// Condition is an expression over `lane.*` that must be true to pass.
	Condition hcl.Expression
	// ConditionText is the condition's source, shown in reports.
	ConditionText string
	ErrorMessage  string
	// MinRuns makes the gate inconclusive with fewer completed runs.
	MinRuns int
	// MaxCV makes the gate inconclusive when the CV of a throughput
	// (output_token_throughput or request_throughput) exceeds it.
	MaxCV float64
}

// failureClasses are the classes always present in lane.failures, so that
// `lane.failures.timeout == 0` works on a lane without timeouts.
var failureClasses = loadgen.FailureClasses

// laneValue is the `lane` object a gate condition sees: every aggregate
// figure by its evidence name, plus runs, failures.<class>, cv.<metric>,
// pooled.<metric> and, when the server's histograms could be compared,
// client_vs_server.flagged and client_vs_server.<metric>_gap_ms.
func laneValue(c *evidence.Campaign) cty.Value {
	attrs := map[string]cty.Value{}
	for k, v := range c.Aggregate.Values() {
		attrs[k] = cty.NumberFloatVal(v)
	}
	if c.Capacity != nil {
		for k, v := range c.Capacity.Values() {
			attrs[k] = cty.NumberFloatVal(v)
		}
	}
	attrs["runs"] = cty.NumberIntVal(int64(len(c.Runs)))
	fails := map[string]cty.Value{}
	for _, k := range failureClasses {
		fails[k] = cty.Zero
	}
	for k, n := range c.Aggregate.Failures {
		fails[k] = cty.NumberIntVal(int64(n))
	}
	attrs["failures"] = cty.ObjectVal(fails)
	cv := map[string]cty.Value{}
	for k, v := range c.CoefficientOfVariation {
		cv[k] = cty.NumberFloatVal(v)
	}
	attrs["cv"] = cty.ObjectVal(cv)
	pooled := map[string]cty.Value{}
	for name, p := range c.Pooled.Fields() {
		if *p != nil {
			pooled[name] = cty.NumberFloatVal(**p)
		}
	}
	attrs["pooled"] = cty.ObjectVal(pooled)
	if c.ClientVsServer != nil {
		rc := map[string]cty.Value{}
		for k, v := range c.ClientVsServer.Values() {
			rc[k] = cty.NumberFloatVal(v)
		}
		attrs["client_vs_server"] = cty.ObjectVal(rc)
	}
	return cty.ObjectVal(attrs)
}

// evaluateGate decides one gate on one campaign.
func evaluateGate(g *GateSpec, c *evidence.Campaign) evidence.GateResult {
	res := evidence.GateResult{Gate: g.Name, Condition: g.ConditionText}
	inconclusive := func(format string, args ...any) evidence.GateResult {
		res.Status, res.Reason = evidence.StatusInconclusive, fmt.Sprintf(format, args...)
		return res
	}
	if len(c.Runs) == 0 {
		return inconclusive("incomplete: 0 of %d runs (no completed runs)", c.RunsPlanned)
	}
	if g.Condition == nil {
		return inconclusive("the gate has no condition")
	}
	ctx := &hcl.EvalContext{Functions: lang.Functions(), Variables: map[string]cty.Value{"lane": laneValue(c)}}
	for _, tr := range g.Condition.Variables() {
		if root := tr.RootName(); root != "lane" {
			return inconclusive("the condition refers to %q; a gate condition may only use lane.* metrics", root)
		}
		if _, diags := tr.TraverseAbs(ctx); diags.HasErrors() {
			return inconclusive("metric %s is missing for this lane (%s)", traversalName(tr), firstSummary(diags))
		}
	}
	v, diags := g.Condition.Value(ctx)
	if diags.HasErrors() {
		return inconclusive("the condition could not be evaluated: %s", firstSummary(diags))
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Bool {
		return inconclusive("the condition gave %s, not true or false", v.Type().FriendlyName())
	}
	holds := v.True()
	if !holds {
		res.Status = evidence.StatusFail
		res.Reason = g.ErrorMessage
		if res.Reason == "" {
			res.Reason = "the condition is false"
		}
	}
	if !c.Complete {
		return inconclusive("incomplete: %d of %d runs (condition %s)", min(len(c.Runs), c.RunsPlanned), c.RunsPlanned, holdsWord(holds))
	}
	if g.MinRuns > 0 && len(c.Runs) < g.MinRuns {
		return inconclusive("%d completed run(s), the gate needs min_runs = %d (condition %s)", len(c.Runs), g.MinRuns, holdsWord(holds))
	}
	if g.MaxCV > 0 {
		for _, m := range []string{"output_token_throughput", "request_throughput"} {
			cv, ok := c.CoefficientOfVariation[m]
			if !ok {
				return inconclusive("cv of %s is unknown (needs at least 2 runs), the gate needs max_cv = %g (condition %s)", m, g.MaxCV, holdsWord(holds))
			}
			if cv > g.MaxCV {
				return inconclusive("cv of %s is %.3g, above max_cv = %g (condition %s)", m, cv, g.MaxCV, holdsWord(holds))
			}
		}
	}
	if holds {
		res.Status, res.Reason = evidence.StatusPass, "the condition holds"
	}
	return res
}

func holdsWord(holds bool) string {
	if holds {
		return "holds"
	}
	return "is false"
}

// traversalName renders lane.a.b for messages.
func traversalName(tr hcl.Traversal) string {
	var sb strings.Builder
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			sb.WriteString(s.Name)
		case hcl.TraverseAttr:
			sb.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			if s.Key.Type() == cty.String {
				sb.WriteString(fmt.Sprintf("[%q]", s.Key.AsString()))
			} else {
				sb.WriteString("[…]")
			}
		}
	}
	return sb.String()
}

func firstSummary(diags hcl.Diagnostics) string {
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			if d.Detail != "" {
				return d.Detail
			}
			return d.Summary
		}
	}
	return "unknown error"
}

// summarize counts the gate results of a screen and picks the exit code:
// 3 when any gate failed, else 4 when any was inconclusive or the screen
// is incomplete, else 0.
func summarize(models []evidence.ModelEvidence, comp evidence.Completeness) evidence.GateSummary {
	var s evidence.GateSummary
	for _, m := range models {
		for _, c := range m.Campaigns {
			for _, g := range c.Gates {
				switch g.Status {
				case evidence.StatusPass:
					s.Pass++
				case evidence.StatusFail:
					s.Fail++
				default:
					s.Inconclusive++
				}
			}
		}
	}
	switch {
	case s.Fail > 0:
		s.ExitCode = evidence.ExitFail
	case s.Inconclusive > 0 || !comp.Complete:
		s.ExitCode = evidence.ExitInconclusive
	}
	return s
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// LaneMetricNames lists every name a gate condition may use after lane., as
// dotted paths ("failed", "ttft_p95_ms", "failures.timeout",
// "cv.output_token_throughput", "pooled.ttft_p95_ms"), sorted. It is read off
// the lane object the report evaluates gates against (laneValue of a campaign
// with every figure present), so the list the spec language checks gate
// conditions with at validate time cannot drift from what the report
// provides. cmd passes it to lang.Load as Options.LaneMetrics.
func LaneMetricNames() []string {
	c := &evidence.Campaign{CoefficientOfVariation: map[string]float64{}}
	c.Aggregate.Goodput, c.Aggregate.GoodFraction = ptr(0), ptr(0)
	for _, p := range c.Aggregate.Latencies.Fields() {
		*p = ptr(0)
	}
	for _, p := range c.Pooled.Fields() {
		*p = ptr(0)
	}
	for _, m := range append(append([]string{}, throughputMetrics...), percentileMetrics...) {
		c.CoefficientOfVariation[m] = 0
	}
	c.Runs = []evidence.RunEvidence{{}}
	c.ClientVsServer = &evidence.LaneReconciliation{GapMs: map[string]float64{}}
	for _, m := range loadgen.ReconciledMetrics {
		c.ClientVsServer.GapMs[m] = 0
	}
	var out []string
	v := laneValue(c)
	for name, t := range v.Type().AttributeTypes() {
		if !t.IsObjectType() {
			out = append(out, name)
			continue
		}
		for member := range t.AttributeTypes() {
			out = append(out, name+"."+member)
		}
	}
	// A searched lane adds its capacity metrics (one of capacity_rps and
	// capacity_concurrency, by what it varies).
	out = append(out, evidence.CapacityMetrics...)
	sort.Strings(out)
	return out
}
