package sim

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner/perf"
)

// closedLoop runs c clients, each sending n streaming completions of in
// prompt tokens and out output tokens back to back, client i starting
// after i x stagger, and returns the median TPOT, the mean latency (send to
// last token) and the output token throughput over the window (first send to
// last completion).
func closedLoop(t *testing.T, url string, c, n, in, out int, stagger time.Duration) (tpot, latency time.Duration, tput float64) {
	t.Helper()
	prompt := strings.TrimPrefix(strings.Repeat(" the", in), " ")
	if got := CountTokens(prompt); got != in {
		t.Fatalf("prompt is %d tokens, want %d", got, in)
	}
	body := map[string]any{"model": "m", "prompt": prompt, "max_tokens": out, "ignore_eos": true, "stream": true}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c}}
	var mu sync.Mutex
	var tpots []time.Duration
	var sumLatency time.Duration
	begin := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < c; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * stagger)
			for j := 0; j < n; j++ {
				r := post(t, client, url+"/v1/completions", body)
				if r.status != 200 || len(r.times) != out {
					t.Errorf("status %d, %d tokens, err %v", r.status, len(r.times), r.err)
					return
				}
				mu.Lock()
				tpots = append(tpots, (r.times[out-1]-r.times[0])/time.Duration(out-1))
				sumLatency += r.times[out-1]
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	window := time.Since(begin)
	if len(tpots) == 0 {
		t.Fatal("no request succeeded")
	}
	slices.Sort(tpots)
	return tpots[len(tpots)/2], sumLatency / time.Duration(len(tpots)), float64(len(tpots)*out) / window.Seconds()
}

// TestModelModeMatchesEstimate checks that the simulated engine under
// closed-loop load reproduces a virtual-time run of the same scheduler
// (perf.Lane.Run, what the planner estimates with) for the same model,
// GPU and workload: the median TPOT the clients measure and the output
// throughput at full concurrency (c x output tokens / the mean latency in
// the engine's /metrics) within 5% in `make timing`, within looseTolerance
// (20%) in make test, where a loaded machine's delays to the clients are
// not the engine's (a scheduler of the wrong step size or batch is off by
// more). The full plan-versus-apply agreement, through the load generator,
// is tested in package executor (sim_agreement_test.go).
func TestModelModeMatchesEstimate(t *testing.T) {
	const in, out = 256, 64
	tol := 0.05
	if !strictTiming() {
		tol = looseTolerance
	}
	for _, c := range []int{1, 8, 32} {
		opts := Options{Model: "m", Timing: TimingModel, ModelID: "Qwen/Qwen3-0.6B", GPU: "L40S", MaxModelLen: 4096, Speedup: 1}
		url, e := start(t, opts)
		srv, err := e.opts.server()
		if err != nil {
			t.Fatal(err)
		}
		est, err := srv.Run(perf.Load{InputTokens: in, OutputTokens: out, Concurrency: c, Requests: 4 * c})
		if err != nil {
			t.Fatal(err)
		}
		// A machine busy with other work delays the clients and the
		// engine alike; a wrong scheduler fails every attempt, a busy
		// machine rarely three in a row.
		var problems []string
		for attempt := 1; attempt <= 3; attempt++ {
			sum0, n0 := scrapeE2E(t, url)
			tpot, clientLatency, window := closedLoop(t, url, c, 4, in, out, 0)
			sum1, n1 := scrapeE2E(t, url)
			tpotMs := float64(tpot) / 1e6
			latency := (sum1 - sum0) / float64(n1-n0)
			tput := float64(c*out) / latency
			estTput := float64(c*out) / (est.Latency.Mean / 1000)
			t.Logf("c=%d attempt %d: tpot %.3f ms (estimate %.3f), latency %.1f ms (estimate %.1f; client %.1f), throughput %.0f tok/s (estimate %.0f; client window %.0f); engine timeline resets so far %d",
				c, attempt, tpotMs, est.TPOT.P50, latency*1000, est.Latency.Mean, float64(clientLatency)/1e6, tput, estTput, window, e.metrics.timelineResets.Load())
			problems = problems[:0]
			if rel := math.Abs(tpotMs-est.TPOT.P50) / est.TPOT.P50; rel > tol {
				problems = append(problems, fmt.Sprintf("c=%d: TPOT %.3f ms is %.1f%% off the estimate %.3f ms", c, tpotMs, rel*100, est.TPOT.P50))
			}
			if rel := math.Abs(tput-estTput) / estTput; rel > tol {
				problems = append(problems, fmt.Sprintf("c=%d: throughput %.0f tok/s is %.1f%% off the estimate %.0f", c, tput, rel*100, estTput))
			}
			if len(problems) == 0 || raceEnabled {
				break // under the race detector the figures are only logged
			}
		}
		if n, late := e.Lateness(time.Millisecond); len(problems) > 0 && (late > 0.02 || e.metrics.timelineResets.Load() > 0) {
			t.Skipf("the engine ended %.0f%% of its %d steps over 1 ms late (%d timeline resets): the machine is too busy for a timing comparison; rerun on an idle machine (%s)",
				100*late, n, e.metrics.timelineResets.Load(), strings.Join(problems, "; "))
		}
		if !raceEnabled {
			for _, p := range problems {
				t.Error(p)
			}
		}
	}
}

// TestPreemptionUnderKVPressure runs more sequences than the KV cache holds:
// the scheduler must preempt and recompute, and still deliver every token.
func TestPreemptionUnderKVPressure(t *testing.T) {
	opts := Options{Model: "m", Timing: TimingModel, ModelID: "Qwen/Qwen3-0.6B", GPU: "T4", Runtime: engine.Runtime{GPUMemoryUtil: 0.2}, MaxModelLen: 2048, Speedup: 20}
	url, e := start(t, opts)
	mt := e.timing.(*modelTiming)
	if cap := mt.srv.Engine.KVBlocks * mt.srv.Engine.BlockSize; cap > 6000 || cap < 2048 {
		t.Fatalf("KV capacity %d tokens; the test needs less than 8 x 800", cap)
	}
	prompt := strings.TrimPrefix(strings.Repeat(" the", 400), " ")
	var wg sync.WaitGroup
	peak := 0.0
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() { // watch the KV gauge while the load runs
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, _, kv := e.timing.gauges()
			peak = math.Max(peak, kv)
			time.Sleep(time.Millisecond)
		}
	}()
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := post(t, http.DefaultClient, url+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 400, "ignore_eos": true, "stream": true, "stream_options": map[string]any{"include_usage": true}})
			if len(r.times) != 400 || !r.done {
				t.Errorf("%d tokens, done %v, err %v", len(r.times), r.done, r.err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-watched
	if n := e.metrics.preemptions.Load(); n == 0 {
		t.Fatal("no preemption although the requests need more KV cache than there is")
	}
	if peak > 1 || peak < 0.9 {
		t.Fatalf("peak KV usage %.2f; want the cache nearly full and never over", peak)
	}
	if r, w, kv := e.timing.gauges(); r != 0 || w != 0 || kv != 0 {
		t.Fatalf("after the load: running %d waiting %d kv %.2f", r, w, kv)
	}
}

// scrapeE2E reads the sum and count of vllm:e2e_request_latency_seconds
// from the engine's /metrics.
func scrapeE2E(t *testing.T, url string) (sum float64, count int) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(name, "vllm:e2e_request_latency_seconds_sum{"):
			sum, _ = strconv.ParseFloat(value, 64)
		case strings.HasPrefix(name, "vllm:e2e_request_latency_seconds_count{"):
			count, _ = strconv.Atoi(value)
		}
	}
	return sum, count
}

// TestArrivalsAreTheAdmittedRequests: the engine keeps when each admitted
// generation request arrived, in time order, and not the requests it
// refused.
func TestArrivalsAreTheAdmittedRequests(t *testing.T) {
	url, e := start(t, Options{Model: "m", Timing: TimingModel, ModelID: "Qwen/Qwen3-0.6B", GPU: "L40S", MaxModelLen: 4096, Speedup: 10})
	before := time.Now()
	for range 3 {
		if r := post(t, http.DefaultClient, url+"/v1/completions", map[string]any{"prompt": "a b c", "max_tokens": 2, "ignore_eos": true, "stream": true}); r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
	}
	if r := post(t, http.DefaultClient, url+"/v1/completions", map[string]any{"model": "other", "prompt": "a"}); r.status != 404 {
		t.Fatalf("unknown model: status %d", r.status)
	}
	arr := e.Arrivals()
	if len(arr) != 3 || arr[0].Before(before) || !slices.IsSortedFunc(arr, func(a, b time.Time) int { return a.Compare(b) }) || time.Since(arr[2]) < 0 {
		t.Fatalf("arrivals %v (since %v), want the 3 admitted requests in order", arr, before)
	}
}
