package loadgen_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

// TestRecoversConstantTiming drives the simulated engine in constant mode
// (the ground truth) and checks that the measured TTFT and ITL medians are
// within 2% and 0.5 ms of the configured values, with exact request counts.
func TestRecoversConstantTiming(t *testing.T) {
	const ttft, itl = 50 * time.Millisecond, 5 * time.Millisecond
	url := startSim(t, sim.Options{TTFT: ttft, ITL: itl})
	for _, c := range []struct{ concurrency, requests int }{{1, 8}, {256, 512}} {
		cfg := baseConfig(url)
		cfg.Concurrency, cfg.Requests, cfg.OutputTokens, cfg.Warmup = c.concurrency, c.requests, 12, 2
		res, err := loadgen.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if s.Requests != c.requests || s.Succeeded != c.requests || len(res.Records) != c.requests+2 {
			t.Fatalf("c=%d: requests %d succeeded %d records %d, want %d", c.concurrency, s.Requests, s.Succeeded, len(res.Records), c.requests)
		}
		if s.OutputTokens != int64(12*c.requests) || s.PromptOffTarget != 0 {
			t.Errorf("c=%d: output tokens %d, prompts off target %d", c.concurrency, s.OutputTokens, s.PromptOffTarget)
		}
		check := func(name string, got float64, want time.Duration) {
			w := float64(want) / 1e6
			tol := math.Min(0.02*w, 0.5)
			t.Logf("c=%d %s p50 %.3f ms (configured %.3f, error %+.3f ms, tolerance %.3f)", c.concurrency, name, got, w, got-w, tol)
			if math.Abs(got-w) > tol {
				t.Errorf("c=%d: %s p50 %.3f ms, configured %.3f ms (tolerance %.3f ms)", c.concurrency, name, got, w, tol)
			}
		}
		check("ttft", s.TTFTMs.P50, ttft)
		check("itl", s.ITLMs.P50, itl)
	}
}
