package main

// The verdict of the fidelity harness (fidelity_test.go, build tag
// integration) as a pure function of recorded numbers, so that it is
// tested in every `go test` run although the harness itself needs vLLM.

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/loadgen"
)

// addedLimitMs is how much further above vLLM's own histograms than vllm
// bench's InferCrane's mean TTFT, TPOT or latency may be. vllm bench starts
// TTFT at the empty role chunk, which vLLM writes 0.1-0.3 ms before the
// first token, so it can read that much lower without its client being
// faster.
const addedLimitMs = 1.0

// fidStat is one metric's mean, p50 and p95 in ms.
type fidStat struct{ Mean, P50, P95 float64 }

// fidWindow is one run of one tool on one metric beside the server's own
// histogram of the same window (the scrape right before the tool ran and
// the one right after).
type fidWindow struct {
	ClientMean, ClientP50 float64
	// ServerMean is exact (sum / count); P50Lo and P50Hi bound the server
	// bucket that holds its median, all that the buckets say about it. NaN
	// when the server's histograms were not read.
	ServerMean, P50Lo, P50Hi float64
}

// fidWindowOf builds a window from a client's figures and the server's view
// of its run, for metric (ttft, tpot, itl or latency).
func fidWindowOf(client fidStat, v *loadgen.ServerView, metric string) fidWindow {
	w := fidWindow{ClientMean: client.Mean, ClientP50: client.P50, ServerMean: math.NaN(), P50Lo: math.NaN(), P50Hi: math.NaN()}
	if v == nil {
		return w
	}
	d := map[string]*loadgen.ServerDist{"ttft": v.TTFTMs, "tpot": v.TPOTMs, "itl": v.ITLMs, "latency": v.LatencyMs}[metric]
	if d == nil || v.Histograms[d.Metric] == nil {
		return w
	}
	h := v.Histograms[d.Metric]
	w.ServerMean, w.P50Lo, w.P50Hi = d.Mean, h.LowerBound(0.5)*1e3, h.Bound(0.5)*1e3
	return w
}

// excess is how far the client's mean sits above the server's.
func (w fidWindow) excess() float64 { return w.ClientMean - w.ServerMean }

// p50Off is how far the client's median lies outside the server's median
// bucket (0 inside it).
func (w fidWindow) p50Off() float64 {
	switch {
	case w.ClientP50 < w.P50Lo:
		return w.P50Lo - w.ClientP50
	case w.ClientP50 > w.P50Hi:
		return w.ClientP50 - w.P50Hi
	}
	return 0
}

// fidJudgement is the verdict on one metric.
type fidJudgement struct {
	Metric string
	// OursExcess and TheirsExcess are the medians over each tool's runs of
	// its mean minus the server's in the same window; Paired the median
	// over the alternating pairs of ours minus theirs (each pair saw the
	// same server and machine, so the server's run-to-run variation
	// cancels out).
	OursExcess, TheirsExcess, Paired float64
	// OursP50Off and TheirsP50Off are the medians of how far each tool's
	// p50 lay outside the server's median bucket of its window.
	OursP50Off, TheirsP50Off float64
	// Fail says why ours fails; empty when it passes.
	Fail []string
}

// judgeFidelity judges the load generator (ours) on one metric against the
// server's own histograms in each run's window, with vllm bench (theirs,
// run alternately with ours) as the reference for what a client adds:
//
//   - ours must not sit more than limitMs further above the server than
//     vllm bench does, or than the server itself where vllm bench reads
//     below it (Paired): the client adds time vllm bench does not;
//   - ours must not read more than limitMs below the server (OursExcess):
//     the client misses time the server counts;
//   - ours' p50 must not lie more than limitMs further outside the
//     server's median bucket than vllm bench's does, or than vllm bench
//     adds to the server's mean (what the first rule allows a client).
//
// The tools are never compared with each other directly: the server's speed
// changes between the windows (vLLM on a busy CPU), and a tool that ran
// while it was slower reads slower without being wrong.
func judgeFidelity(metric string, ours, theirs []fidWindow, limitMs float64) fidJudgement {
	j := fidJudgement{Metric: metric}
	for i, w := range append(append([]fidWindow{}, ours...), theirs...) {
		if math.IsNaN(w.ServerMean) {
			tool, run := "infercrane", i+1
			if i >= len(ours) {
				tool, run = "vllm bench", i-len(ours)+1
			}
			j.Fail = append(j.Fail, fmt.Sprintf("%s run %d has no server view: vLLM's %s histogram was not read from /metrics before and after it", tool, run, metric))
		}
	}
	if len(j.Fail) > 0 || len(ours) == 0 || len(ours) != len(theirs) {
		if len(ours) != len(theirs) {
			j.Fail = append(j.Fail, fmt.Sprintf("%d runs of infercrane, %d of vllm bench: the runs alternate in pairs", len(ours), len(theirs)))
		}
		return j
	}
	paired := make([]float64, len(ours))
	for i := range ours {
		// vllm bench is the reference for what a client may add, never
		// for reading below the server: a vllm bench run that misses time
		// (it did, -0.99 ms ITL, in CI) does not make ours, on the
		// server's own figure, "add" that time.
		paired[i] = ours[i].excess() - math.Max(theirs[i].excess(), 0)
	}
	j.Paired = medianFloat(paired)
	j.OursExcess = medianOver(ours, fidWindow.excess)
	j.TheirsExcess = medianOver(theirs, fidWindow.excess)
	j.OursP50Off = medianOver(ours, fidWindow.p50Off)
	j.TheirsP50Off = medianOver(theirs, fidWindow.p50Off)
	if j.Paired > limitMs {
		j.Fail = append(j.Fail, fmt.Sprintf("%s: infercrane's mean is %.2f ms further above vLLM's own histograms than vllm bench's (median over the alternating pairs), more than %.1f ms: the client adds time vllm bench does not", metric, j.Paired, limitMs))
	}
	if j.OursExcess < -limitMs {
		j.Fail = append(j.Fail, fmt.Sprintf("%s: infercrane's mean is %.2f ms below vLLM's own in the same windows, more than %.1f ms: the client misses time the server counts", metric, -j.OursExcess, limitMs))
	}
	// A client that adds a little to every request moves its p50 by as
	// much; the mean's rule above allows it what vllm bench adds (plus
	// limitMs), so the p50's allows it too: where the server's median
	// sits just under a bucket edge (vLLM's TTFT buckets end at 5, 10, 20
	// ms), a client 1.6 ms slower than the server lies outside it while
	// vllm bench, 2.6 ms slower, ran in windows whose median bucket was
	// the next one (make fidelity in CI, 2026-12-03).
	if j.OursP50Off > math.Max(math.Max(j.TheirsP50Off, j.TheirsExcess), 0)+limitMs {
		j.Fail = append(j.Fail, fmt.Sprintf("%s: infercrane's p50 lies %.2f ms outside the bucket of vLLM's own median in the same windows (vllm bench's %.2f ms), more than %.1f ms further", metric, j.OursP50Off, j.TheirsP50Off, limitMs))
	}
	return j
}

// String is the verdict's line in the harness's output.
func (j fidJudgement) String() string {
	verdict := "ok"
	if len(j.Fail) > 0 {
		verdict = "FAIL: " + strings.Join(j.Fail, "; ")
	}
	return fmt.Sprintf("%-8s mean over vLLM's own: infercrane %+7.2f, vllm bench %+7.2f (paired %+6.2f); p50 outside vLLM's median bucket: %.2f, %.2f  %s",
		j.Metric, j.OursExcess, j.TheirsExcess, j.Paired, j.OursP50Off, j.TheirsP50Off, verdict)
}

func medianOver(ws []fidWindow, f func(fidWindow) float64) float64 {
	xs := make([]float64, len(ws))
	for i, w := range ws {
		xs[i] = f(w)
	}
	return medianFloat(xs)
}

func medianFloat(xs []float64) float64 {
	xs = append([]float64(nil), xs...)
	sort.Float64s(xs)
	n := len(xs)
	return (xs[(n-1)/2] + xs[n/2]) / 2
}

// itlBucket is the bucket of vLLM's inter-token histogram holding ms.
func itlBucket(ms float64) (lo, hi float64) {
	le := []float64{10, 25, 50, 75, 100, 150, 200}
	for _, b := range le {
		if ms <= b {
			return lo, b
		}
		lo = b
	}
	return lo, math.Inf(1)
}

// windows builds windows from client means and p50s and the server's means
// (its median taken as its mean, as on a steady server).
func windows(clientMean, clientP50, serverMean []float64) []fidWindow {
	ws := make([]fidWindow, len(clientMean))
	for i := range ws {
		lo, hi := itlBucket(serverMean[i])
		ws[i] = fidWindow{ClientMean: clientMean[i], ClientP50: clientP50[i], ServerMean: serverMean[i], P50Lo: lo, P50Hi: hi}
	}
	return ws
}

// TestJudgeFidelityITLAgainstTheServer replays the false failure of `make
// fidelity`: ITL p50 infercrane 22.57 ms against vllm bench 24.44 ms with a
// run-to-run spread of 1.75 ms, while vLLM's own inter-token latency was
// slower during vllm bench's runs. The old rule compared the tools with
// each other (|22.57 - 24.44| = 1.87 > 1.75: FAIL, and ITL had no server
// reference at all); judged against the server in the same windows, each
// tool reads what the server recorded, and ours passes.
func TestJudgeFidelityITLAgainstTheServer(t *testing.T) {
	ours := windows([]float64{22.65, 22.21, 23.02}, []float64{22.57, 22.10, 22.95}, []float64{22.60, 22.15, 22.90})
	theirs := windows([]float64{24.51, 25.22, 23.44}, []float64{24.44, 25.10, 23.35}, []float64{24.50, 25.20, 23.40})
	j := judgeFidelity("itl", ours, theirs, addedLimitMs)
	if len(j.Fail) > 0 {
		t.Fatalf("ours reads within 0.1 ms of the server in its own windows, yet: %v", j.Fail)
	}
	if math.Abs(j.Paired) > 0.1 || math.Abs(j.OursExcess) > 0.1 {
		t.Errorf("judgement %+v", j)
	}
}

// TestJudgeFidelityFailsAClientThatAddsTime: the same windows with ours
// 2.5 ms above the server on every run (vllm bench still on it) fail on the
// mean; ours 3 ms below the server fails as a client that misses time; and
// a p50 5 ms outside the server's median bucket fails on the p50.
func TestJudgeFidelityFailsAClientThatAddsTime(t *testing.T) {
	server := []float64{182.0, 231.0, 207.0} // TTFT on a busy CPU, moving by tens of ms
	theirs := windows([]float64{182.4, 231.3, 207.2}, []float64{182.4, 231.3, 207.2}, server)
	for _, tc := range []struct {
		name  string
		add   float64
		p50   float64
		wants string
	}{
		{"adds time", 2.5, 2.5, "further above vLLM's own histograms than vllm bench's"},
		{"misses time", -3, -3, "below vLLM's own"},
		{"within", 0.6, 0.6, ""},
	} {
		mean, p50 := make([]float64, 3), make([]float64, 3)
		for i, s := range server {
			mean[i], p50[i] = s+tc.add, s+tc.p50
		}
		j := judgeFidelity("ttft", windows(mean, p50, server), theirs, addedLimitMs)
		got := strings.Join(j.Fail, "\n")
		if tc.wants == "" && got != "" || !strings.Contains(got, tc.wants) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.wants)
		}
	}
	// ITL as make fidelity measured it on CPU vLLM: ours +0.05 ms over the
	// server's own mean, vllm bench 0.99 ms below it. Ours is the closest;
	// it failed as "1.08 ms further above than vllm bench's".
	itlSrv := []float64{24.1, 23.6, 24.4}
	oursITL := windows([]float64{24.15, 23.65, 24.45}, itlSrv, itlSrv)
	benchITL := windows([]float64{23.11, 22.61, 23.41}, itlSrv, itlSrv)
	if j := judgeFidelity("itl", oursITL, benchITL, addedLimitMs); len(j.Fail) > 0 {
		t.Errorf("ours on the server's own ITL, vllm bench below it: %q", j.Fail)
	}
	// ITL: the means agree, but ours' p50 lies 5 ms above the server's
	// median bucket (10, 25] while vllm bench's is inside it.
	srv := []float64{22.6, 22.2, 22.9}
	ours := windows(srv, []float64{30, 30, 30}, srv)
	them := windows(srv, []float64{22.5, 22.1, 22.8}, srv)
	if j := judgeFidelity("itl", ours, them, addedLimitMs); !strings.Contains(strings.Join(j.Fail, "\n"), "outside the bucket") {
		t.Errorf("a p50 5 ms outside the server's median bucket passed: %+v", j)
	}
	// TTFT as make fidelity measured it on CPU vLLM in CI: the server's
	// median at about 10 ms, in the bucket (5, 10] during ours' runs and
	// (10, 20] during vllm bench's; ours 1.6 ms over the server's mean and
	// its p50 1.3 ms above 10 ms, vllm bench 2.6 ms over it. Ours adds
	// less than vllm bench; it failed as "1.25 ms outside the bucket".
	ttftWin := func(mean, p50, srv, lo, hi float64) fidWindow {
		return fidWindow{ClientMean: mean, ClientP50: p50, ServerMean: srv, P50Lo: lo, P50Hi: hi}
	}
	oursTTFT := []fidWindow{ttftWin(11.63, 11.67, 10.01, 5, 10), ttftWin(13.18, 11.25, 11.38, 5, 10), ttftWin(11.44, 11.32, 9.94, 5, 10)}
	benchTTFT := []fidWindow{ttftWin(13.57, 13.06, 10.93, 10, 20), ttftWin(13.39, 12.82, 10.85, 10, 20), ttftWin(13.20, 12.87, 10.57, 10, 20)}
	if j := judgeFidelity("ttft", oursTTFT, benchTTFT, addedLimitMs); len(j.Fail) > 0 {
		t.Errorf("ours adds less than vllm bench, its p50 just above a bucket edge: %q", j.Fail)
	}
	// A run without the server's histograms cannot be judged.
	ours[1].ServerMean = math.NaN()
	if j := judgeFidelity("itl", ours, them, addedLimitMs); !strings.Contains(strings.Join(j.Fail, "\n"), "infercrane run 2 has no server view") {
		t.Errorf("a window without the server passed: %+v", j)
	}
}
