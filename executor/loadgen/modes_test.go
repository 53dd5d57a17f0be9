package loadgen_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

var quick = sim.Options{TTFT: 2 * time.Millisecond, ITL: time.Millisecond}

func TestPromptsHitTheTargetExactly(t *testing.T) {
	url := startSim(t, quick)
	for _, api := range []string{"chat", "completions"} {
		for _, n := range []int{1, 9, 10, 333, 2048} {
			cfg := baseConfig(url)
			cfg.API, cfg.InputTokens, cfg.OutputTokens, cfg.Requests, cfg.Concurrency = api, n, 2, 3, 3
			res, s := runAgainst(t, cfg)
			cal := res.Calibrations[0]
			if cal.Method != loadgen.CalibrateTokenize || cal.Calls > 4 {
				t.Errorf("%s %d: calibration %+v", api, n, cal)
			}
			// Below the chat template's 8 tokens the target is unreachable;
			// the closest prompt is used and the mismatch is counted.
			if api == "chat" && n < 9 {
				if s.PromptOffTarget != 3 || res.Records[0].PromptTokens != 9 {
					t.Errorf("%s %d: %+v", api, n, res.Records[0])
				}
				continue
			}
			for _, r := range res.Records {
				if r.PromptTokens != n || r.InputTokens != n {
					t.Errorf("%s %d: server saw %d prompt tokens", api, n, r.PromptTokens)
				}
			}
		}
	}
}

func TestWarmupExcludedAndDeterministic(t *testing.T) {
	var mu sync.Mutex
	bodies := map[string]string{} // X-Request-Id -> request body
	e, err := sim.NewEngine(quick)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			mu.Lock()
			bodies[r.Header.Get("X-Request-Id")] = string(b)
			mu.Unlock()
		}
		e.ServeHTTP(w, r)
	}))
	defer srv.Close()
	run := func(seed int64) (*loadgen.Result, map[string]string) {
		mu.Lock()
		bodies = map[string]string{}
		mu.Unlock()
		cfg := baseConfig(srv.URL)
		cfg.Warmup, cfg.Requests, cfg.Seed = 3, 5, seed
		res, _ := runAgainst(t, cfg)
		mu.Lock()
		defer mu.Unlock()
		return res, bodies
	}
	res, first := run(7)
	s := res.Summary
	if s.Requests != 5 || len(res.Records) != 8 || len(first) != 8 {
		t.Fatalf("warmup must run but not count: %d requests, %d records, %d sent", s.Requests, len(res.Records), len(first))
	}
	var warmupDone int64
	for i, r := range res.Records {
		if r.Index != i || r.Warmup != (i < 3) {
			t.Errorf("record %d: index %d warmup %v", i, r.Index, r.Warmup)
		}
		if r.Warmup {
			warmupDone = max(warmupDone, r.DoneNs)
		} else if r.SentNs < warmupDone {
			t.Errorf("measured request %d was sent before the warmup ended", i)
		}
	}
	_, again := run(7)
	_, other := run(8)
	distinct := map[string]bool{}
	for id, body := range first {
		if again[id] != body {
			t.Errorf("request %s differs under the same seed", id)
		}
		if other[id] == body {
			t.Errorf("request %s is the same under another seed", id)
		}
		for _, want := range []string{`"max_tokens":16`, `"ignore_eos":true`, `"stream":true`, `"stream_options":{"include_usage":true}`} {
			if !strings.Contains(body, want) {
				t.Errorf("request %s lacks %s: %s", id, want, body)
			}
		}
		distinct[body] = true
	}
	if len(distinct) != len(first) {
		t.Errorf("every request must have its own prompt: %d distinct of %d", len(distinct), len(first))
	}
}

func TestOpenLoopRateAndCap(t *testing.T) {
	url := startSim(t, sim.Options{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	for _, arrival := range []string{"constant", "poisson", "gamma"} {
		cfg := baseConfig(url)
		cfg.Concurrency, cfg.RequestRate, cfg.Arrival, cfg.Burstiness, cfg.Requests, cfg.OutputTokens = 0, 200, arrival, 0.5, 30, 4
		res, s := runAgainst(t, cfg)
		if s.RequestedRate == nil || s.AchievedRate == nil || s.DispatchDelayMs == nil || s.Succeeded != 30 {
			t.Fatalf("%s: open-loop statistics missing: %+v", arrival, s)
		}
		if arrival == "constant" && math.Abs(*s.RequestedRate-200) > 1e-6 {
			t.Errorf("constant schedule rate %g, want 200", *s.RequestedRate)
		}
		// (That the achieved rate keeps up is TestOpenLoopDoesNotDrift's job.)
		// The same seed gives the same schedule.
		again, _ := runAgainst(t, cfg)
		for i := range res.Records {
			if res.Records[i].ScheduledNs-res.Records[0].ScheduledNs != again.Records[i].ScheduledNs-again.Records[0].ScheduledNs {
				t.Fatalf("%s: schedule differs under the same seed at %d", arrival, i)
			}
		}
	}
	// A cap of one in flight at 200 req/s against 20 ms requests: the client
	// queues, dispatch delay grows and from-scheduled TTFT shows it.
	cfg := baseConfig(url)
	cfg.Concurrency, cfg.RequestRate, cfg.Arrival, cfg.Requests, cfg.OutputTokens = 1, 200, "constant", 10, 16
	_, s := runAgainst(t, cfg)
	if s.DispatchDelayMs.Max < 50 || s.TTFTFromScheduledMs.P50 < s.TTFTMs.P50+20 {
		t.Errorf("a concurrency cap must show as dispatch delay: delay %+v, ttft %g vs from scheduled %g",
			*s.DispatchDelayMs, s.TTFTMs.P50, s.TTFTFromScheduledMs.P50)
	}
}

func TestTraceReplay(t *testing.T) {
	url := startSim(t, quick)
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	var lines string
	for i := range 6 {
		lines += fmt.Sprintf(`{"timestamp_ms": %d, "input_tokens": %d, "output_tokens": %d}`+"\n", 1000+i*40, 20+i, 1+i)
	}
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := loadgen.Config{BaseURL: url, Model: "sim", Streaming: true, TraceFile: path, TimeScale: 0.5, Seed: 3}
	res, s := runAgainst(t, cfg)
	if s.Succeeded != 6 || s.PromptOffTarget != 0 || s.OutputTokens != 1+2+3+4+5+6 {
		t.Fatalf("trace replay: %+v", s)
	}
	for i, r := range res.Records {
		if got, want := r.ScheduledNs-res.Records[0].ScheduledNs, int64(i)*20e6; got != want {
			t.Errorf("request %d scheduled at +%d ns, want +%d (time scale 0.5)", i, got, want)
		}
		if r.InputTokens != 20+i || r.PromptTokens != 20+i || r.OutputTokens != 1+i {
			t.Errorf("request %d sizes: %+v", i, r)
		}
	}
	if len(res.Calibrations) != 6 {
		t.Errorf("one calibration per prompt length: %+v", res.Calibrations)
	}
}

// TestDurationWithGrace: a duration run keeps its streams sending until the
// deadline, sends nothing after it, and cancels what is still in flight when
// the grace ends. The first 12 generation requests are served at once by the
// simulated engine (~8 ms each, so the three rounds they take fit the 1 s
// duration some 40 times over: with ~65 ms requests a loaded 2-core machine
// could leave fewer than the 8 successes asked for; a run that stops sending
// after one round still gets only 4); later ones are held by the server until
// the client gives up, so something is surely in flight when the grace ends,
// however late a busy machine runs the timers (with fast requests alone the
// last round could finish between the deadline and the late grace timer and
// nothing would be left to cancel).
func TestDurationWithGrace(t *testing.T) {
	e, err := sim.NewEngine(quick)
	if err != nil {
		t.Fatal(err)
	}
	const fast = 12
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/completions") && n.Add(1) > fast {
			// Read the body first: only then does the server notice the
			// client closing the connection (r.Context() is cancelled).
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			select {
			case <-r.Context().Done():
				return
			case <-time.After(30 * time.Second):
			}
		}
		e.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		e.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	cfg := baseConfig(srv.URL)
	// 1 s of sending with 4 streams; a 1 ms grace cancels what is in flight.
	cfg.Requests, cfg.DurationMs, cfg.GraceMs, cfg.OutputTokens, cfg.Concurrency = 0, 1000, 1, 6, 4
	start := time.Now()
	res, s := runAgainst(t, cfg)
	// Not a speed check: without the grace's cancel the held requests
	// would keep the run going for 30 s.
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("duration run took %v: the grace did not cancel the requests in flight", el)
	}
	if s.Succeeded < 8 || s.Cancelled < 1 || s.Failed != 0 || s.Succeeded > fast {
		t.Errorf("duration run: succeeded %d cancelled %d failed %d; want 8-%d succeeded, at least 1 cancelled, none failed", s.Succeeded, s.Cancelled, s.Failed, fast)
	}
	late := 0
	for _, r := range res.Records {
		// A worker checks the deadline before it builds its request, so a
		// send may follow the deadline by that work (and, on a loaded
		// 2-core machine, by a scheduler delay of some hundreds of ms),
		// not by the 30 s a held request lasts; and only once per worker:
		// a worker that sends past the deadline again never checked it.
		if r.SentNs > int64(time.Duration(cfg.DurationMs)*time.Millisecond) {
			late++
		}
		if r.SentNs > int64(2*time.Second) {
			t.Errorf("request %d sent at %d ms, after the duration", r.Index, r.SentNs/1e6)
		}
	}
	if late > cfg.Concurrency {
		t.Errorf("%d requests sent after the %d ms duration by %d workers: at most one each", late, cfg.DurationMs, cfg.Concurrency)
	}
}

func TestProgressAndH2C(t *testing.T) {
	e, err := sim.NewEngine(quick)
	if err != nil {
		t.Fatal(err)
	}
	var protos sync.Map
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos.Store(r.Proto, true)
		e.ServeHTTP(w, r)
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	defer srv.Close()
	cfg := baseConfig(srv.URL)
	cfg.H2C, cfg.Requests, cfg.Concurrency = true, 20, 8
	var mu sync.Mutex
	var seen []loadgen.Progress
	res, err := loadgen.Run(context.Background(), cfg, loadgen.WithProgress(func(p loadgen.Progress) {
		mu.Lock()
		seen = append(seen, p)
		mu.Unlock()
	}, 5*time.Millisecond))
	if err != nil || res.Summary.Succeeded != 20 {
		t.Fatalf("h2c run: %v %+v", err, res.Summary.Failures)
	}
	if _, ok := protos.Load("HTTP/2.0"); !ok {
		t.Errorf("h2c requested but the server never saw HTTP/2.0")
	}
	last := seen[len(seen)-1]
	if last.Done != 20 || last.Total != 20 || last.Errors != 0 || last.TokensPerSecond <= 0 {
		t.Errorf("final progress %+v", last)
	}
}

func TestCancelStopsTheRun(t *testing.T) {
	url := startSim(t, sim.Options{TTFT: 5 * time.Millisecond, ITL: 20 * time.Millisecond})
	cfg := baseConfig(url)
	cfg.Requests, cfg.OutputTokens = 100, 50
	// Cancelled once requests are in flight (each takes about 1 s), not at
	// a fixed 150 ms: on a busy machine the run could still be sizing its
	// prompts then, with nothing in flight to cancel.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := loadgen.Run(ctx, cfg, loadgen.WithProgress(func(p loadgen.Progress) {
		if !p.Warmup && p.InFlight > 0 {
			cancel()
		}
	}, 5*time.Millisecond))
	if err == nil || res == nil || res.Summary.Cancelled == 0 || len(res.Records) >= 100 {
		t.Fatalf("cancel: err %v, result %+v", err, res)
	}
}

func TestConfigErrorsSayWhatToDo(t *testing.T) {
	for _, c := range []loadgen.Config{
		{},
		{BaseURL: "localhost:8000", Model: "m"},
		{BaseURL: "http://x", Model: "m", InputTokens: 1, OutputTokens: 1, Requests: 1},
		{BaseURL: "http://x", Model: "m", InputTokens: 1, OutputTokens: 1, Concurrency: 1},
		{BaseURL: "http://x", Model: "m", InputTokens: 1, OutputTokens: 1, RequestRate: 1, Arrival: "bursty", Requests: 1},
		{BaseURL: "http://x", Model: "m", API: "responses", InputTokens: 1, OutputTokens: 1, Concurrency: 1, Requests: 1},
	} {
		if _, err := loadgen.Run(context.Background(), c); err == nil {
			t.Errorf("%+v: want an error", c)
		} else {
			t.Log(err)
		}
	}
}
