package sim

import (
	"bytes"
	"net"
	"net/http"
	"testing"
	"time"
)

// slowEnd passes an engine's response through and holds the write that
// ends a stream ([DONE]) for hold: a loaded machine that did not run the
// engine between its last token and the end of the answer.
type slowEnd struct {
	http.ResponseWriter
	hold time.Duration
}

func (s slowEnd) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("[DONE]")) {
		time.Sleep(s.hold)
	}
	return s.ResponseWriter.Write(b)
}

func (s slowEnd) FlushError() error {
	return http.NewResponseController(s.ResponseWriter).Flush()
}

// TestE2ELatencyEndsAtTheLastToken: the engine's end-to-end latency (the
// vllm:e2e_request_latency_seconds histogram) ends when the last token was
// generated, as vLLM's does, so a client never reads less than the engine's
// latency. Before, the engine observed it after writing the end of the
// answer: with that write held 200 ms, the engine's latency was 200 ms
// over the client's last token (TestDeployRunTeardown in plugins/modal, which
// checks the client's mean is at least the engine's, failed 1 run in 20 at
// load average 10).
func TestE2ELatencyEndsAtTheLastToken(t *testing.T) {
	_, e := start(t, Options{Model: "m", TTFT: time.Millisecond, ITL: time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.ServeHTTP(slowEnd{w, 200 * time.Millisecond}, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	res := post(t, http.DefaultClient, "http://"+ln.Addr().String()+"/v1/completions",
		map[string]any{"model": "m", "prompt": "hi", "max_tokens": 8, "ignore_eos": true, "stream": true})
	if res.err != nil || res.status != 200 || !res.done || len(res.times) != 8 {
		t.Fatalf("status %d, %d tokens, done %v, err %v", res.status, len(res.times), res.done, res.err)
	}
	_, n, sum := e.metrics.e2e.snapshot()
	if last := res.times[len(res.times)-1]; n != 1 || time.Duration(sum*1e9) > last {
		t.Fatalf("%d requests, engine e2e latency %.1f ms, the client's last token after %.1f ms: the engine's latency must end by then", n, sum*1e3, float64(last)/1e6)
	}
}
