package loadgen_test

import (
	"context"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

// TestParseHistogramsVLLM reads a /metrics page captured from vLLM 0.32.0
// (CPU build, the integration model) and checks the histograms against the
// lines of the page.
func TestParseHistogramsVLLM(t *testing.T) {
	f, err := os.Open("testdata/vllm-0.32.0-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hs, err := loadgen.ParseHistograms(f, loadgen.ServerTTFT, loadgen.ServerITL, loadgen.ServerTPOT, loadgen.ServerLatency, loadgen.ServerITLLegacy)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := hs[loadgen.ServerITLLegacy]; ok {
		t.Errorf("vLLM 0.32 has no %s, but one was parsed", loadgen.ServerITLLegacy)
	}
	ttft := hs[loadgen.ServerTTFT]
	if ttft == nil {
		t.Fatalf("no %s in %v", loadgen.ServerTTFT, hs)
	}
	// From the page: 22 finite buckets, le=0.02 holds 1008, count 1397.
	if len(ttft.Le) != 22 || ttft.Le[3] != 0.02 || ttft.Counts[3] != 1008 || ttft.Count != 1397 || math.Abs(ttft.Sum-33.676058530807495) > 1e-12 {
		t.Errorf("ttft histogram = %+v", ttft)
	}
	for _, n := range []string{loadgen.ServerITL, loadgen.ServerTPOT, loadgen.ServerLatency} {
		h := hs[n]
		if h == nil || h.Count <= 0 || len(h.Le) != len(h.Counts) {
			t.Errorf("%s = %+v", n, h)
		}
	}
}

// vLLM's own split of a request's TTFT, its time queued in the engine and
// prefilling (request_queue_time and request_prefill_time), comes into the
// server view as their means: from the page, 1,397 requests queued 0.052 s
// and prefilled 21.36 s in all.
func TestServerViewSplitsTheTTFTAsVLLMDoes(t *testing.T) {
	f, err := os.Open("testdata/vllm-0.32.0-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hs, err := loadgen.ParseHistograms(f, loadgen.ServerQueue, loadgen.ServerPrefill)
	if err != nil {
		t.Fatal(err)
	}
	v := loadgen.NewServerView(hs)
	q, p := v.QueueMs, v.PrefillMs
	if q == nil || p == nil || q.Count != 1397 || p.Count != 1397 ||
		math.Abs(q.Mean-1e3*0.05197039900161826/1397) > 1e-9 || math.Abs(p.Mean-1e3*21.360894216001668/1397) > 1e-9 {
		t.Errorf("queue %+v, prefill %+v", q, p)
	}
}

// TestHistogramQuantile checks interpolation against hand-computed values
// (Prometheus's histogram_quantile rule).
func TestHistogramQuantile(t *testing.T) {
	h := &loadgen.Histogram{Le: []float64{0.01, 0.02, 0.04}, Counts: []float64{10, 30, 40}, Count: 40, Sum: 0.8}
	for _, c := range []struct{ q, want float64 }{
		{0.25, 0.01},  // rank 10: the top of the first bucket
		{0.5, 0.015},  // rank 20: halfway through (0.01, 0.02]
		{0.95, 0.036}, // rank 38: eight tenths through (0.02, 0.04]
		{0.1, 0.004},  // rank 4 in the first bucket, from 0
	} {
		if got := h.Quantile(c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(%g) = %g, want %g", c.q, got, c.want)
		}
	}
	if b := h.Bound(0.5); b != 0.02 {
		t.Errorf("Bound(0.5) = %g, want 0.02", b)
	}
	// 8 observations, 4 at most 60 ms and 4 above: numpy's p50 is the mean of
	// the 4th and 5th, so the bound is the 5th's bucket, not the 4th's.
	few := &loadgen.Histogram{Le: []float64{0.06, 0.1, 0.25}, Counts: []float64{4, 4, 8}, Count: 8}
	if b := few.Bound(0.5); b != 0.25 {
		t.Errorf("Bound(0.5) of 8 = %g, want 0.25 (the bucket of the 5th observation)", b)
	}
	over := &loadgen.Histogram{Le: []float64{0.01}, Counts: []float64{1}, Count: 4}
	if got := over.Quantile(0.9); got != 0.01 {
		t.Errorf("a quantile in the +Inf bucket = %g, want the largest finite bound", got)
	}
	if !math.IsInf(over.Bound(0.9), 1) {
		t.Errorf("Bound in the +Inf bucket = %g, want +Inf", over.Bound(0.9))
	}
	before := &loadgen.Histogram{Le: []float64{0.01, 0.02, 0.04}, Counts: []float64{11, 30, 40}, Count: 40}
	if _, err := h.Sub(before); err == nil || !strings.Contains(err.Error(), "went down") {
		t.Errorf("Sub with a shrinking bucket: %v, want an error", err)
	}
}

// TestServerViewAgainstSim runs against the simulated engine, whose
// histograms are vLLM's: the server's view covers exactly the measured
// requests (not the warmup), its TTFT and TPOT means are the configured
// ones, and the client's figures reconcile without a flag.
func TestServerViewAgainstSim(t *testing.T) {
	url := startSim(t, sim.Options{Model: "sim", TTFT: 30 * time.Millisecond, ITL: 12 * time.Millisecond})
	cfg := baseConfig(url)
	cfg.Warmup = 3
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := res.ServerView
	if v == nil || v.TTFTMs == nil || v.TPOTMs == nil || v.ITLMs == nil || v.LatencyMs == nil {
		t.Fatalf("server view = %+v", v)
	}
	if v.TTFTMs.Count != cfg.Requests || v.LatencyMs.Count != cfg.Requests || v.TPOTMs.Count != cfg.Requests {
		t.Errorf("server counted ttft %d, latency %d, tpot %d requests; the run measured %d (plus %d warmup, which must not count)",
			v.TTFTMs.Count, v.LatencyMs.Count, v.TPOTMs.Count, cfg.Requests, cfg.Warmup)
	}
	if want := cfg.Requests * (cfg.OutputTokens - 1); v.ITLMs.Count != want {
		t.Errorf("server counted %d inter-token gaps, want %d", v.ITLMs.Count, want)
	}
	// The engine cannot be early, and the client, whose clock starts before
	// the engine's and stops after it, cannot see less than the engine did
	// (a loaded machine may make both late, so no upper bound on the engine).
	if v.TTFTMs.Mean < 30-0.5 || v.TTFTMs.Mean > res.Summary.TTFTMs.Mean+0.5 {
		t.Errorf("server mean ttft %.2f ms: want >= 30 (configured) and <= the client's %.2f", v.TTFTMs.Mean, res.Summary.TTFTMs.Mean)
	}
	// Constant timing keeps every token on its schedule from the arrival,
	// so a late first token shortens the gaps after it; the last token is
	// never early.
	if floor := 30 + float64(cfg.OutputTokens-1)*12; v.LatencyMs.Mean < floor-0.5 || v.LatencyMs.Mean > res.Summary.LatencyMs.Mean+0.5 {
		t.Errorf("server mean latency %.2f ms: want >= %.0f (configured) and <= the client's %.2f", v.LatencyMs.Mean, floor, res.Summary.LatencyMs.Mean)
	}
	// A single run judged with the floor alone (2 ms) is timing: on a
	// loaded machine the client's read of the loopback may cost more. Only
	// the shape of the reconciliation is asserted here; what is flagged is
	// TestReconcileJudgesByTheServersSpread's, on recorded figures.
	rc := loadgen.Reconcile(&res.Summary, v, loadgen.DefaultMargin)
	if !rc.Comparable || len(rc.Checks) != 12 {
		t.Errorf("reconciliation = %+v", rc)
	}
}

// slowHeaders delays every generation response by d before the client sees
// it: client-side overhead the server's histograms cannot see.
type slowHeaders struct {
	rt http.RoundTripper
	d  time.Duration
}

func (s slowHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.rt.RoundTrip(r)
	if err == nil && strings.HasSuffix(r.URL.Path, "/completions") {
		time.Sleep(s.d)
	}
	return resp, err
}

// TestReconcileFlagsClientOverhead adds 60 ms on the client side of every
// request: the client's TTFT then exceeds the server's by more than the
// margin and the run is flagged, naming the figure. The delay holds the
// response back while the engine writes its tokens, so the client may read
// them in bursts and its TPOT fall below the server's (flagged below: the
// client misses gaps the server spaced), never above.
func TestReconcileFlagsClientOverhead(t *testing.T) {
	url := startSim(t, sim.Options{Model: "sim", TTFT: 20 * time.Millisecond, ITL: 2 * time.Millisecond})
	cfg := baseConfig(url)
	res, err := loadgen.Run(context.Background(), cfg,
		loadgen.WithTransport(slowHeaders{rt: loadgen.NewTransport(cfg.Concurrency, false), d: 60 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	rc := loadgen.Reconcile(&res.Summary, res.ServerView, loadgen.DefaultMargin)
	if rc == nil || !rc.Comparable {
		t.Fatalf("reconciliation = %+v", rc)
	}
	flagged := strings.Join(rc.Flagged, "\n")
	if !strings.Contains(flagged, "ttft mean") || !strings.Contains(flagged, "ttft p50") {
		t.Errorf("60 ms of client overhead on a 20 ms TTFT was not flagged: %q", flagged)
	}
	for _, c := range rc.Checks {
		if c.Metric == "tpot" && c.Outside && c.ClientMs >= c.LowMs {
			t.Errorf("tpot flagged above the server's although the delay is before the first token: %+v", c)
		}
	}
}

// TestReconcileNotComparable: a server that finished more requests than
// the run sent (other traffic) is not compared.
func TestReconcileNotComparable(t *testing.T) {
	s := &loadgen.Summary{Requests: 10, Succeeded: 10, TTFTMs: loadgen.Dist{Count: 10, Mean: 50}}
	v := loadgen.NewServerView(map[string]*loadgen.Histogram{
		loadgen.ServerLatency: {Le: []float64{1}, Counts: []float64{12}, Count: 12, Sum: 6},
		loadgen.ServerTTFT:    {Le: []float64{0.1}, Counts: []float64{12}, Count: 12, Sum: 0.12},
	})
	rc := loadgen.Reconcile(s, v, loadgen.DefaultMargin)
	if rc.Comparable || !strings.Contains(rc.Reason, "finished 12 requests") || len(rc.Flagged) != 0 {
		t.Errorf("reconciliation = %+v", rc)
	}
	if loadgen.Reconcile(s, nil, loadgen.DefaultMargin) != nil {
		t.Error("no view must give no reconciliation")
	}
}
