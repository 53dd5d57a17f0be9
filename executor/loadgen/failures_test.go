package loadgen_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

// runAgainst runs cfg and returns its summary, failing the test on errors.
func runAgainst(t *testing.T, cfg loadgen.Config) (*loadgen.Result, loadgen.Summary) {
	t.Helper()
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res, res.Summary
}

// TestFailureClassesFromSim injects every fault the simulated engine has and
// checks the class each request lands in and that failures stay out of the
// latency statistics.
func TestFailureClassesFromSim(t *testing.T) {
	fast := sim.Options{TTFT: time.Millisecond, ITL: time.Millisecond, Seed: 1}
	cases := []struct {
		name   string
		faults sim.Faults
		tweak  func(*loadgen.Config)
		want   map[string]int
	}{
		{"status schedule", sim.Faults{FailAt: map[int]int{3: 429, 5: 500, 7: 503}}, nil,
			map[string]int{loadgen.FailRateLimited: 1, loadgen.FailServerError: 2}},
		{"stream cut", sim.Faults{CutAfter: 3}, nil, map[string]int{loadgen.FailStreamBroken: 8}},
		// The client gives up after 150 ms and the engine ends the stalled
		// stream then; the minute-long stall leaves a loaded machine's late
		// timer no chance to see the stream finish (2 s did not).
		{"stall past the timeout", sim.Faults{StallAfter: 2, StallFor: time.Minute},
			func(c *loadgen.Config) { c.TimeoutMs = 150 }, map[string]int{loadgen.FailTimeout: 8}},
		{"prompt alone over the context", sim.Faults{}, func(c *loadgen.Config) { c.InputTokens, c.OutputTokens = 8300, 10 },
			map[string]int{loadgen.FailContextOverflow: 8}},
		{"prompt fills the context", sim.Faults{}, func(c *loadgen.Config) { c.InputTokens, c.OutputTokens = 8192, 10 },
			map[string]int{loadgen.FailContextOverflow: 8}},
		{"max_tokens clamped to the context", sim.Faults{}, func(c *loadgen.Config) { c.InputTokens, c.OutputTokens = 8000, 400 },
			map[string]int{loadgen.FailTruncated: 8}},
		{"max_tokens clamped, whole answers", sim.Faults{}, func(c *loadgen.Config) { c.InputTokens, c.OutputTokens, c.Streaming = 8000, 400, false },
			map[string]int{loadgen.FailTruncated: 8}},
		{"unknown model", sim.Faults{}, func(c *loadgen.Config) { c.Model = "nope" },
			map[string]int{loadgen.FailBadRequest: 8}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := fast
			o.Faults = c.faults
			url := startSim(t, o)
			cfg := baseConfig(url)
			cfg.Concurrency, cfg.Requests = 2, 8
			if c.tweak != nil {
				c.tweak(&cfg)
			}
			res, s := runAgainst(t, cfg)
			total := 0
			for class, n := range c.want {
				total += n
				if s.Failures[class] != n {
					t.Errorf("%s: %d, want %d (all: %v)", class, s.Failures[class], n, s.Failures)
				}
			}
			if s.Failed != total || s.Succeeded != 8-total || s.Requests != 8 {
				t.Errorf("failed %d succeeded %d requests %d, want %d failed", s.Failed, s.Succeeded, s.Requests, total)
			}
			if s.TTFTMs.Count != s.Succeeded || s.LatencyMs.Count != s.Succeeded {
				t.Errorf("failures leaked into latency statistics: ttft %d latency %d", s.TTFTMs.Count, s.LatencyMs.Count)
			}
			for _, r := range res.Records {
				if !r.OK() && r.Error == "" {
					t.Errorf("record %d (%s) has no error message", r.Index, r.ErrorClass)
				}
			}
		})
	}
}

// TestTruncatedAgainstClampingSim reproduces what real vLLM 0.32 did to a
// 1000+100 shape on a 1024 window: 200 answers of 24 tokens, which the load
// generator must fail as truncated, naming both counts and the cause.
func TestTruncatedAgainstClampingSim(t *testing.T) {
	url := startSim(t, sim.Options{MaxModelLen: 1024, ContextOverflow: sim.ContextClamp, TTFT: time.Millisecond, ITL: time.Millisecond})
	cfg := baseConfig(url)
	cfg.InputTokens, cfg.OutputTokens, cfg.Concurrency, cfg.Requests = 1000, 100, 2, 2
	res, s := runAgainst(t, cfg)
	if s.Failures[loadgen.FailTruncated] != 2 || s.Succeeded != 0 || s.OutputTokens != 0 || s.TPOTMs.Count != 0 {
		t.Fatalf("summary %+v, want 2 truncated and no statistics from them", s)
	}
	r := res.Records[0]
	for _, want := range []string{"24 of the 100 requested output tokens", "prompt (1000 tokens) left only 24 tokens of context", "vLLM clamps max_tokens", "reserve more context or shorten the shape"} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("error %q lacks %q", r.Error, want)
		}
	}
	if r.OutputTokens != 24 || r.PromptTokens != 1000 {
		t.Errorf("record %+v", r)
	}
	// The same shape against the older, rejecting behaviour is an overflow.
	url = startSim(t, sim.Options{MaxModelLen: 1024, ContextOverflow: sim.ContextReject, TTFT: time.Millisecond, ITL: time.Millisecond})
	cfg.BaseURL = url
	if _, s := runAgainst(t, cfg); s.Failures[loadgen.FailContextOverflow] != 2 {
		t.Fatalf("reject mode: %v, want 2 context_overflow", s.Failures)
	}
}

// TestCrashAndRefusedConnection crashes the engine mid-run: the streams in
// flight break and later requests cannot connect.
func TestCrashAndRefusedConnection(t *testing.T) {
	e, err := sim.NewEngine(sim.Options{TTFT: 5 * time.Millisecond, ITL: 5 * time.Millisecond, Faults: sim.Faults{CrashAfter: 4}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	defer srv.Close()
	e.OnCrash(func() { srv.Listener.Close(); srv.CloseClientConnections() })
	cfg := baseConfig(srv.URL)
	// Six streams: the first four arrivals are mid-stream when the fifth
	// crashes the engine; everything after cannot connect. The workers
	// start 20 ms apart, so the first four have their headers before the
	// fifth arrives even on a busy machine.
	cfg.Concurrency, cfg.Requests, cfg.OutputTokens, cfg.RampUpMs = 6, 12, 200, 120
	_, s := runAgainst(t, cfg)
	if s.Succeeded != 0 || s.Failures[loadgen.FailStreamBroken] != 4 || s.Failures[loadgen.FailConnection] != 8 {
		t.Errorf("after a crash: %+v, want 4 stream_broken and 8 connection", s.Failures)
	}
}

// fakeServer answers every generation request with body (an SSE stream or
// a JSON document), for the outcomes the simulated engine never produces.
func fakeServer(t *testing.T, status int, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/tokenize" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestOutcomesSimNeverProduces(t *testing.T) {
	const sse = "text/event-stream"
	tok := `data: {"choices":[{"delta":{"content":" a"}}]}` + "\n\n"
	cases := []struct {
		name, body, class string
		stream, missing   bool
	}{
		{"no tokens", `data: {"choices":[{"delta":{"role":"assistant","content":""}}]}` + "\n\ndata: [DONE]\n\n", loadgen.FailNoTokens, true, false},
		{"error event", tok + `data: {"error":{"message":"engine died","code":500}}` + "\n\n", loadgen.FailStreamBroken, true, false},
		{"malformed chunk", tok + "data: {not json\n\n", loadgen.FailStreamBroken, true, false},
		{"clean end without DONE", tok, loadgen.FailStreamBroken, true, false},
		{"usage missing", strings.Repeat(tok, 16) + "data: [DONE]\n\n", "", true, true},
		{"usage missing, short", tok + tok + "data: [DONE]\n\n", loadgen.FailTruncated, true, true},
		{"usage says short", tok + `data: {"choices":[],"usage":{"prompt_tokens":64,"completion_tokens":1}}` + "\n\ndata: [DONE]\n\n", loadgen.FailTruncated, true, false},
		{"whole answer", `{"choices":[{"message":{"content":"hi there"}}],"usage":{"prompt_tokens":64,"completion_tokens":16}}`, "", false, false},
		{"whole answer, no usage", `{"choices":[{"message":{"content":"hi there"}}]}`, "", false, false},
		{"whole answer, short", `{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":64,"completion_tokens":3}}`, loadgen.FailTruncated, false, false},
		{"whole answer, nothing", `{"choices":[{"message":{"content":""}}],"usage":{"prompt_tokens":64,"completion_tokens":0}}`, loadgen.FailNoTokens, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ct := sse
			if !c.stream {
				ct = "application/json"
			}
			cfg := baseConfig(fakeServer(t, 200, ct, c.body))
			cfg.Streaming, cfg.Requests, cfg.Concurrency = c.stream, 3, 1
			res, s := runAgainst(t, cfg)
			r := res.Records[0]
			if r.ErrorClass != c.class {
				t.Fatalf("class %q, want %q (error %q)", r.ErrorClass, c.class, r.Error)
			}
			if c.missing && c.class == "" && (!r.UsageMissing || r.OutputTokens != 16 || s.UsageMissing != 3) {
				t.Errorf("usage missing: %+v", r)
			}
			if c.name == "whole answer" && (r.OutputTokens != 16 || !r.NonStreaming || s.TTFTMs.Count != 0 || s.LatencyMs.Count != 3) {
				t.Errorf("non-streaming: %+v / %+v", r, s)
			}
			if res.Calibrations[0].Method != loadgen.CalibrateApproximate {
				t.Errorf("a server without /tokenize must fall back to the approximation: %+v", res.Calibrations)
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := baseConfig("http://" + addr)
	_, err = loadgen.Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "tokenize") {
		t.Fatalf("calibration against a dead server must fail and say so, got %v", err)
	}
}
