package loadgen_test

import (
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/loadgen"
)

// vllmTTFTBuckets are vLLM's time_to_first_token bucket bounds (s), the
// ones the simulated engine exports too.
var vllmTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// steadyView is the server's view of n requests whose TTFT it recorded as
// ttftMs each and whose latency as latencyMs each.
func steadyView(n int, ttftMs, latencyMs float64) *loadgen.ServerView {
	hist := func(le []float64, ms float64) *loadgen.Histogram {
		h := &loadgen.Histogram{Le: le, Counts: make([]float64, len(le)), Count: float64(n), Sum: float64(n) * ms / 1e3}
		for i, b := range le {
			if ms/1e3 <= b {
				h.Counts[i] = float64(n)
			}
		}
		return h
	}
	return loadgen.NewServerView(map[string]*loadgen.Histogram{
		loadgen.ServerTTFT:    hist(vllmTTFTBuckets, ttftMs),
		loadgen.ServerLatency: hist([]float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5}, latencyMs),
	})
}

// clientRun is a run's client summary of n requests whose TTFT read ttftMs
// each and latency latencyMs each.
func clientRun(n int, ttftMs, latencyMs float64) *loadgen.Summary {
	d := func(ms float64) loadgen.Dist { return loadgen.Dist{Count: n, Mean: ms, P50: ms, P95: ms} }
	return &loadgen.Summary{Requests: n, Succeeded: n, TTFTMs: d(ttftMs), LatencyMs: d(latencyMs)}
}

// reconcileLane judges a lane's runs as the report does: the margin from
// the server views of all of them, then each run.
func reconcileLane(clients []*loadgen.Summary, views []*loadgen.ServerView) []*loadgen.Reconciliation {
	m := loadgen.LaneMargin(views)
	out := make([]*loadgen.Reconciliation, len(clients))
	for i := range clients {
		out[i] = loadgen.Reconcile(clients[i], views[i], m)
	}
	return out
}

func flagged(rcs []*loadgen.Reconciliation) string {
	var all []string
	for _, rc := range rcs {
		all = append(all, rc.Flagged...)
	}
	return strings.Join(all, "\n")
}

// TestReconcileJudgesByTheServersSpread: the margin is the server's own
// run-to-run spread (at least the 2 ms floor), in both directions. Before,
// it was a fixed 10 ms + 10% above the server and nothing below it.
func TestReconcileJudgesByTheServersSpread(t *testing.T) {
	// The simulated engine at TTFT 50 ms on a quiet machine records 50.1,
	// 50.3 and 50.2 ms over three runs (latency 370 ms).
	server := []float64{50.1, 50.3, 50.2}
	views := make([]*loadgen.ServerView, 3)
	for i, s := range server {
		views[i] = steadyView(256, s, 370+s-50)
	}
	lane := func(addMs float64) []*loadgen.Reconciliation {
		clients := make([]*loadgen.Summary, 3)
		for i, s := range server {
			clients[i] = clientRun(256, s+addMs, 370+s-50+addMs)
		}
		return reconcileLane(clients, views)
	}
	// A proxy's own cost (0.4 ms) stays within; a planted 5 ms delay in
	// front of the same server is flagged on every run (the old margin
	// allowed 50.2 + 10 + 5.0 = 65.2 ms, so it never was).
	if f := flagged(lane(0.4)); f != "" {
		t.Errorf("a proxy's own 0.4 ms was flagged:\n%s", f)
	}
	f := flagged(lane(5.4))
	if strings.Count(f, "ttft mean") != 3 || !strings.Contains(f, "exceeds") {
		t.Errorf("a planted 5 ms delay was not flagged on each run:\n%s", f)
	}
	// A client that reads less than the server's own clock misses time
	// (a timer started late, a first token taken from the wrong chunk):
	// flagged too. Before, a client reading low was never flagged.
	f = flagged(lane(-4))
	if strings.Count(f, "ttft mean") != 3 || !strings.Contains(f, "below") {
		t.Errorf("a client 4 ms below the server was not flagged:\n%s", f)
	}
}

// TestReconcileMarginGrowsWithTheServersSpread: vLLM on CPU at 8 streams
// varies from run to run by tens of ms (its own TTFT means 182, 231 and
// 207 ms) and its front end queues requests before its clock starts, so
// a client 20-35 ms above it is within what the server itself moves;
// with one run, whose spread is unknown, the floor alone judges and the
// same gap is flagged.
func TestReconcileMarginGrowsWithTheServersSpread(t *testing.T) {
	server := []float64{182, 231, 207}
	gap := []float64{24, 35, 21}
	views := make([]*loadgen.ServerView, 3)
	clients := make([]*loadgen.Summary, 3)
	for i := range server {
		views[i] = steadyView(64, server[i], 1400+server[i])
		clients[i] = clientRun(64, server[i]+gap[i], 1400+server[i]+gap[i])
	}
	rcs := reconcileLane(clients, views)
	if f := flagged(rcs); strings.Contains(f, "ttft mean") {
		t.Errorf("gaps within the server's own spread of 49 ms were flagged:\n%s", f)
	}
	if got := rcs[0].Margin.Ms("ttft"); got != 49 {
		t.Errorf("the ttft margin is %g ms, want the server's spread 49", got)
	}
	one := loadgen.Reconcile(clients[0], views[0], loadgen.DefaultMargin)
	if !strings.Contains(strings.Join(one.Flagged, "\n"), "ttft mean") {
		t.Errorf("one run, 24 ms above the server, with the 2 ms floor: %+v", one)
	}
}
