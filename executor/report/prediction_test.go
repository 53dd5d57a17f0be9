package report

import (
	"slices"
	"testing"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
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

// The engine's own split of the TTFT (vLLM's request_queue_time and
// request_prefill_time, in each run's server view) is set beside the
// plan's (perf.TTFTParts): the mean over every request the runs counted,
// within the TTFT's range or flagged; a part under 10 ms on both sides is
// left out, as is one a run's server did not measure.
func TestPredictionComparesTheServersTTFTParts(t *testing.T) {
	l := &planner.Lane{Inputs: planner.LaneInputs{ExecutorType: "local", Capabilities: lang.BuiltinExecutors["local"]},
		Estimate: planner.Estimate{Available: true, Estimate: perf.Estimate{TTFTMs: 900,
			TTFTParts: &perf.TTFTParts{MeanMs: 1000, FrontEndMs: 5, QueuedMs: 800, PrefillMs: 195}}}}
	f := func(x float64) *float64 { return &x }
	view := func(queue, prefill float64, n int) *loadgen.ServerView {
		return &loadgen.ServerView{QueueMs: &loadgen.ServerDist{Count: n, Mean: queue}, PrefillMs: &loadgen.ServerDist{Count: n, Mean: prefill}}
	}
	agg := &evidence.Metrics{Succeeded: 40, Latencies: evidence.Latencies{TTFTP50Ms: f(950)}}
	// 10 requests queued 1,000 ms and 30 queued 2,000: a mean of 1,750,
	// outside 800 ms +-50%; their prefill 200 ms, within 195's range.
	runs := []evidence.RunEvidence{{Run: 1, ServerView: view(1000, 200, 10)}, {Run: 2, ServerView: view(2000, 200, 30)}}
	p := prediction(l, agg, runs)
	got := map[string]evidence.PredictedMetric{}
	for _, m := range p.Metrics {
		got[m.Metric] = m
	}
	if q, pf := got["queued_mean_ms"], got["prefill_mean_ms"]; q.Measured != 1750 || q.Predicted != 800 || q.Within || !pf.Within || pf.Measured != 200 ||
		!slices.Equal(p.Outside, []string{"queued_mean_ms"}) {
		t.Errorf("prediction %+v", p)
	}
	// A run whose server did not measure the split leaves it out.
	runs[1].ServerView = &loadgen.ServerView{}
	if p := prediction(l, agg, runs); len(p.Metrics) != 1 {
		t.Errorf("with a run unmeasured: %+v", p.Metrics)
	}
	// Parts under 10 ms on both sides say nothing.
	l.Estimate.TTFTParts = &perf.TTFTParts{MeanMs: 12, FrontEndMs: 5, QueuedMs: 1, PrefillMs: 6}
	runs[0].ServerView, runs[1].ServerView = view(3, 8, 10), view(2, 5, 30)
	if p := prediction(l, agg, runs); len(p.Metrics) != 1 {
		t.Errorf("parts under 10 ms: %+v", p.Metrics)
	}
}
