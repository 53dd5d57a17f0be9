package report

import (
	"slices"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/zclconf/go-cty/cty"
)

// TestLaneMetricNames: the names validate checks gate conditions against
// are the ones the report's lane object provides: each evaluates on a
// campaign with every figure present, and the well-known ones are there.
func TestLaneMetricNames(t *testing.T) {
	names := LaneMetricNames()
	for _, want := range []string{"failed", "succeeded", "runs", "ttft_p95_ms", "tpot_p99_ms", "output_token_throughput", "goodput",
		"failures.timeout", "failures.context_overflow", "cv.output_token_throughput", "pooled.ttft_p95_ms"} {
		if !slices.Contains(names, want) {
			t.Errorf("LaneMetricNames lacks %q: %v", want, names)
		}
	}
	full := &evidence.Campaign{CoefficientOfVariation: map[string]float64{}}
	for _, p := range full.Aggregate.Latencies.Fields() {
		*p = ptr(1)
	}
	for _, p := range full.Pooled.Fields() {
		*p = ptr(1)
	}
	full.Aggregate.Goodput, full.Aggregate.GoodFraction = ptr(1), ptr(1)
	for _, m := range append(append([]string{}, throughputMetrics...), percentileMetrics...) {
		full.CoefficientOfVariation[m] = 0.1
	}
	full.Runs = []evidence.RunEvidence{{}}
	full.ClientVsServer = &evidence.LaneReconciliation{GapMs: map[string]float64{"ttft": 1, "tpot": 1, "itl": 1, "latency": 1}}
	// A searched lane has the capacity metrics of what it varies: every
	// name evaluates on the lane of one of the two kinds of search.
	rate, streams := *full, *full
	rate.Capacity = &evidence.Capacity{Vary: "request_rate", USDPerMTok: ptr(1.0)}
	streams.Capacity = &evidence.Capacity{Vary: "concurrency", USDPerMTok: ptr(1.0)}
	for _, n := range names {
		expr, diags := hclsyntax.ParseExpression([]byte("lane."+n), "t.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		var last hcl.Diagnostics
		ok := false
		for _, c := range []*evidence.Campaign{&rate, &streams} {
			ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"lane": laneValue(c)}}
			if _, last = expr.Value(ctx); !last.HasErrors() {
				ok = true
			}
		}
		if !ok {
			t.Errorf("lane.%s does not evaluate: %v", n, last)
		}
	}
}
