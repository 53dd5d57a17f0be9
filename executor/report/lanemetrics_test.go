package report

import (
	"slices"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
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
	full := &Campaign{CoefficientOfVariation: map[string]float64{}}
	for _, p := range full.Aggregate.Latencies.fields() {
		*p = ptr(1)
	}
	for _, p := range full.Pooled.fields() {
		*p = ptr(1)
	}
	full.Aggregate.Goodput, full.Aggregate.GoodFraction = ptr(1), ptr(1)
	for _, m := range append(append([]string{}, throughputMetrics...), percentileMetrics...) {
		full.CoefficientOfVariation[m] = 0.1
	}
	full.Runs = []RunEvidence{{}}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"lane": laneValue(full)}}
	for _, n := range names {
		expr, diags := hclsyntax.ParseExpression([]byte("lane."+n), "t.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if _, diags := expr.Value(ctx); diags.HasErrors() {
			t.Errorf("lane.%s does not evaluate: %v", n, diags)
		}
	}
}
