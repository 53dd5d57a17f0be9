package loadgen_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

// TestRecoversConstantTiming drives the simulated engine in constant mode
// and checks, at concurrency 1 and 256, exact request and token counts and
// that the measured TTFT and ITL medians are within 2% and 0.5 ms (the
// smaller) of the ground truth. The ground truth is what the engine did:
// the engine's flush times are recorded server-side, so the check isolates
// the client's error. The measured medians must also be within 2% or 0.5 ms
// (whichever is larger) of the configured TTFT and ITL, which includes the
// engine's own timer error and the request's transit from client to engine.
//
// Those are the claims `make timing` (INFERCRANE_TIMING_STRICT=1, on an idle
// machine) checks. In make test, on a loaded 2-core machine, the client's
// own wake-ups are late by a scheduler's delay the engine's record does not
// see, so there the client may be 1 ms plus the engine's own p90 lateness
// (the same scheduler's delay, at most 2 ms, else the test skips) from the
// engine's truth, and 20% or 3 ms from the configuration: a client that
// adds a fixed few ms (a missed first chunk, a parse before the timestamp)
// still fails. (make test once measured the client's TTFT p50 1.14 ms over
// the engine's truth while the engine itself was p90 1.14 ms late.) An
// engine whose own median misses its configuration by more than that
// tolerance was disturbed, and the subtest skips.
func TestRecoversConstantTiming(t *testing.T) {
	strict := os.Getenv("INFERCRANE_TIMING_STRICT") == "1"
	for _, c := range []struct {
		concurrency, requests, output int
		ttft, itl                     time.Duration
	}{
		// 256 streams at 50 ms per token keep the loopback pair (engine and
		// client in one process on a 2-core machine) far from saturation.
		{1, 8, 12, 50 * time.Millisecond, 5 * time.Millisecond},
		{256, 512, 4, 200 * time.Millisecond, 100 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("c=%d", c.concurrency), func(t *testing.T) {
			ts := startTruth(t, sim.Options{TTFT: c.ttft, ITL: c.itl})
			cfg := baseConfig(ts.URL)
			cfg.Concurrency, cfg.Requests, cfg.OutputTokens, cfg.Warmup = c.concurrency, c.requests, c.output, 2
			cfg.RampUpMs = c.itl.Milliseconds() // streams out of lockstep
			res, err := loadgen.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			if s.Requests != c.requests || s.Succeeded != c.requests || len(res.Records) != c.requests+2 {
				t.Fatalf("c=%d: requests %d succeeded %d records %d, want %d", c.concurrency, s.Requests, s.Succeeded, len(res.Records), c.requests)
			}
			if s.OutputTokens != int64(c.output*c.requests) || s.ITLMs.Count != (c.output-1)*c.requests || s.PromptOffTarget != 0 {
				t.Errorf("c=%d: output tokens %d, itl samples %d, prompts off target %d", c.concurrency, s.OutputTokens, s.ITLMs.Count, s.PromptOffTarget)
			}
			truthTTFT, truthITL, engineErr := ts.truth(res, c.ttft, c.itl)
			t.Logf("c=%d engine's own lateness on every token: p50 %.3f ms p90 %.3f ms p99 %.3f ms", c.concurrency,
				loadgen.Percentile(engineErr, 50), loadgen.Percentile(engineErr, 90), loadgen.Percentile(engineErr, 99))
			lateness := loadgen.Percentile(engineErr, 90)
			if lateness > 2 {
				// The engine shares this process and its scheduler with the
				// client; when it misses its own deadlines the machine is
				// starved of CPU and no timing here is meaningful.
				t.Skipf("c=%d: the machine is too busy for a timing test (the engine itself was p90 %.1f ms late); rerun on an idle machine", c.concurrency, lateness)
			}
			check := func(name string, got, truth float64, configured time.Duration) {
				conf := float64(configured) / 1e6
				tol := math.Min(0.02*conf, 0.5)
				if !strict {
					tol = 1 + lateness
				}
				t.Logf("c=%d %s p50: measured %.3f ms, engine truth %.3f ms, configured %.3f ms (tolerance %.3f ms)", c.concurrency, name, got, truth, conf, tol)
				if !strict && math.Abs(truth-conf) > tol {
					// The engine's own median missed its configuration by
					// more than its per-token lateness allows: its record of
					// this metric was disturbed (a clean CI of d91c691 run
					// beside another go test measured the client's TTFT p50
					// 50.46 ms, on time, against an engine truth of 53.38 ms
					// for a configured 50 while the engine's p90 lateness was
					// 0.73 ms), so it cannot judge the client here.
					t.Skipf("c=%d: the engine's %s p50 was %.3f ms for a configured %.3f ms, beyond its own lateness; rerun on an idle machine", c.concurrency, name, truth, conf)
				}
				if math.Abs(got-truth) > tol {
					t.Errorf("c=%d: %s p50 %.3f ms, but the engine's flushes say %.3f ms (tolerance %.3f ms)", c.concurrency, name, got, truth, tol)
				}
				// Against the configuration: the bound, 2% or 0.5 ms,
				// whichever is larger (the engine's own timer and the request's
				// transit are in this figure too).
				confTol := math.Max(0.02*conf, 0.5)
				if !strict {
					confTol = math.Max(0.20*conf, 3)
				}
				if math.Abs(truth-conf) > confTol/2 {
					// The engine itself missed its configuration by half the
					// bound or more (make test once measured its TTFT p50 0.98
					// ms over a configured 50 ms, and the client, 0.10 ms
					// from the engine's truth, then 1.08 ms over): the machine
					// is too busy for this half of the check to judge the
					// client, whose own error the check above bounds.
					t.Skipf("c=%d: the engine's %s p50 was %.3f ms for a configured %.3f ms; rerun on an idle machine", c.concurrency, name, truth, conf)
				}
				if math.Abs(got-conf) > confTol {
					t.Errorf("c=%d: %s p50 %.3f ms is more than 2%% and 0.5 ms from the configured %.3f ms", c.concurrency, name, got, conf)
				}
			}
			check("ttft", s.TTFTMs.P50, loadgen.Percentile(truthTTFT, 50), c.ttft)
			check("itl", s.ITLMs.P50, loadgen.Percentile(truthITL, 50), c.itl)
		})
	}
}
