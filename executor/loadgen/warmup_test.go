package loadgen_test

import (
	"context"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

// TestWarmupByDuration: a warmup bounded by time keeps its streams busy
// until the duration ends, lets the requests in flight finish, and stays
// out of the figures and out of the server's view; a count ends it first
// when it comes first.
func TestWarmupByDuration(t *testing.T) {
	url := startSim(t, sim.Options{Model: "sim", TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond})
	cfg := baseConfig(url) // 4 streams, 16 tokens: ~95 ms a request
	cfg.Concurrency, cfg.Requests = 2, 4
	cfg.WarmupDurationMs = 400
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var warm, measured int
	var lastWarmSend, lastWarmDone, firstMeasured int64 = 0, 0, -1
	for _, r := range res.Records {
		if r.Warmup {
			warm++
			lastWarmSend, lastWarmDone = max(lastWarmSend, r.SentNs), max(lastWarmDone, r.DoneNs)
			if !r.OK() {
				t.Errorf("warmup request %d failed: %s", r.Index, r.Error)
			}
			continue
		}
		measured++
		if firstMeasured < 0 || r.SentNs < firstMeasured {
			firstMeasured = r.SentNs
		}
	}
	// 2 streams for 400 ms of ~95 ms requests: 8 or so (4 at least on a busy machine).
	if warm < 4 || measured != cfg.Requests || res.Summary.Requests != cfg.Requests {
		t.Errorf("%d warmup and %d measured records (summary %d); want >= 4 and %d", warm, measured, res.Summary.Requests, cfg.Requests)
	}
	if time.Duration(lastWarmSend) > 400*time.Millisecond+50*time.Millisecond {
		t.Errorf("a warmup request was sent at %v, after the 400 ms warmup", time.Duration(lastWarmSend))
	}
	if firstMeasured < lastWarmDone {
		t.Errorf("the measured requests started (%v) before the warmup's last request finished (%v)", time.Duration(firstMeasured), time.Duration(lastWarmDone))
	}
	if v := res.ServerView; v == nil || v.LatencyMs == nil || v.LatencyMs.Count != cfg.Requests {
		t.Errorf("server view %+v should count the %d measured requests only", v, cfg.Requests)
	}

	cfg.Warmup = 1 // the count comes first
	res, err = loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	warm = 0
	for _, r := range res.Records {
		if r.Warmup {
			warm++
		}
	}
	if warm != 1 {
		t.Errorf("warmup = 1 with 400 ms: %d warmup requests, want 1", warm)
	}
}
