package report

import (
	"slices"
	"testing"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/perf"
)

// TestPredictionRangeFlags: a figure is within its range when it lies
// between the estimate's low and high ends (the catalog's ±50% on TTFT,
// ±25% on the rest) and is listed as outside otherwise. The figures are
// fixed, so this holds on any machine; prediction_range.txtar checks the
// same rows end to end with measured (wall-clock) figures.
func TestPredictionRangeFlags(t *testing.T) {
	l := &planner.Lane{Inputs: planner.LaneInputs{ExecutorType: "sim", Capabilities: lang.BuiltinExecutors["sim"], ExecutorConfig: map[string]any{"timing": "constant"}},
		Estimate: planner.Estimate{Available: true, Estimate: perf.Estimate{TTFTMs: 4.75, TPOTMs: 2.75}}}
	f := func(x float64) *float64 { return &x }
	cases := []struct {
		ttft, tpot float64
		outside    []string
	}{
		{20, 2.74, []string{"ttft_p50_ms"}},
		{4.75, 3.43, nil},
		{2.38, 2.07, nil},
		{2.37, 3.43, []string{"ttft_p50_ms"}},
		{20, 3.5, []string{"ttft_p50_ms", "tpot_p50_ms"}},
		{4, 2.06, []string{"tpot_p50_ms"}},
		{4, 3.44, []string{"tpot_p50_ms"}},
	}
	for _, c := range cases {
		p := prediction(l, &evidence.Metrics{Succeeded: 4, Latencies: evidence.Latencies{TTFTP50Ms: f(c.ttft), TPOTP50Ms: f(c.tpot)}}, nil)
		if p == nil || len(p.Metrics) != 2 {
			t.Fatalf("ttft %v, tpot %v: prediction %+v, want two figures", c.ttft, c.tpot, p)
		}
		if !slices.Equal(p.Outside, append([]string{}, c.outside...)) {
			t.Errorf("ttft %v, tpot %v: outside %q, want %q", c.ttft, c.tpot, p.Outside, c.outside)
		}
		for _, m := range p.Metrics {
			if m.Within == slices.Contains(c.outside, m.Metric) {
				t.Errorf("ttft %v, tpot %v: %s within=%v disagrees with the outside list", c.ttft, c.tpot, m.Metric, m.Within)
			}
		}
	}
}
