package planner

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/workload"
)

// TestL40SScreenColdTTFTAsTheIssueImplies holds the plan of
// examples/chutes-qwen-l40s to the two cold figures of the real L40S
// screen (vLLM 0.22.1, AIPerf 0.12.0) that can be recovered without the
// screen itself. The screen's figures are kept outside the repository,
// but issue 27 states the plan's error against its cold runs (each
// model's first interactive run): TTFT p95 "within 2% for Qwen3-1.7B and
// 38% low for Qwen3-0.6B". The plan the issue was filed against (the
// commit before e598b14, the README it cites; f275a41 plans the same
// figures) predicted 215.96 ms and 658.07 ms, so the screen measured
// about 215.96 / (1 - 0.38) = 348 ms (Qwen3-0.6B; 346-351 ms over the
// rounding of 38%) and 645-671 ms (Qwen3-1.7B). The issue's goal for the
// screen is no figure off by more than 30%: this test holds the two
// interactive lanes to it, with the recovered figure's own spread
// counted against the plan. Its other figures (throughput, TPOT p95,
// latency p95, "within 1-19%" with no sign) cannot be recovered, and this
// test does not pretend to check them (docs/calibration.md, "Real GPUs").
func TestL40SScreenColdTTFTAsTheIssueImplies(t *testing.T) {
	load := func(o lang.Options) (*lang.Config, hcl.Diagnostics) {
		return lang.Load("../examples/chutes-qwen-l40s", o)
	}
	cfg, diags := workload.LoadSpec(load, lang.Options{}, nil) // the pinned profile: read locally
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	p := build(t, cfg)
	measured := map[string][2]float64{ // TTFT p95 (ms), the range the issue's rounding leaves
		"qwen06": {215.96 / (1 - 0.375), 215.96 / (1 - 0.385)},
		"qwen17": {658.07 / 1.02, 658.07 / 0.98},
	}
	seen := 0
	for _, l := range p.Lanes {
		if l.Screen != "qwen_l40s" || l.Shape != "interactive" {
			continue
		}
		m, ok := measured[l.Model]
		if !ok {
			t.Fatalf("lane %s: model %q is not one of the screen's", l.ID, l.Model)
		}
		seen++
		got := l.Estimate.TTFTP95Ms
		lo, hi := got/m[1]-1, got/m[0]-1
		t.Logf("%s interactive: TTFT p95 %.1f ms against %.0f-%.0f ms: %+.1f%% to %+.1f%%", l.Model, got, m[0], m[1], 100*lo, 100*hi)
		if lo < -0.30 || hi > 0.30 {
			t.Errorf("%s interactive: TTFT p95 %.1f ms is off the screen's cold %.0f-%.0f ms by %+.1f%% to %+.1f%%, beyond the issue's 30%%",
				l.Model, got, m[0], m[1], 100*lo, 100*hi)
		}
	}
	if seen != 2 {
		t.Fatalf("%d interactive lanes of screen qwen_l40s, want 2", seen)
	}
}
