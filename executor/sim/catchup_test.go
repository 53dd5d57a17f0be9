package sim

import (
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// slowFirstWrite passes an engine's response through, counting its
// writes, and holds the first write for hold: a write(2) that blocked, or
// an engine that a busy machine did not run, for that long.
type slowFirstWrite struct {
	http.ResponseWriter
	hold   time.Duration
	writes *atomic.Int32
}

func (s slowFirstWrite) Write(b []byte) (int, error) {
	if s.writes.Add(1) == 1 {
		time.Sleep(s.hold)
	}
	return s.ResponseWriter.Write(b)
}

func (s slowFirstWrite) FlushError() error {
	return http.NewResponseController(s.ResponseWriter).Flush()
}

// TestLateStreamCatchesUpInOneWrite: a stream that fell behind (its first
// write held 100 ms, when all 40 of its tokens were due within 40 ms)
// sends the tokens already due in one write, not one write(2) each: the
// client gets them at once either way, and at hundreds of streams a write
// per token is most of what the engine costs, so a late engine fell
// further behind (issue 26 item 8). Before: 41 writes. Every token still
// arrives, in order, none before it was due.
func TestLateStreamCatchesUpInOneWrite(t *testing.T) {
	const tokens = 40
	ttft, itl := time.Millisecond, time.Millisecond
	_, e := start(t, Options{Model: "m", TTFT: ttft, ITL: itl})
	var writes atomic.Int32
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.ServeHTTP(slowFirstWrite{w, 100 * time.Millisecond, &writes}, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	res := post(t, http.DefaultClient, "http://"+ln.Addr().String()+"/v1/completions",
		map[string]any{"model": "m", "prompt": "hi", "max_tokens": tokens, "ignore_eos": true, "stream": true})
	if res.err != nil || res.status != 200 || !res.done || len(res.times) != tokens {
		t.Fatalf("status %d, %d tokens, done %v, err %v", res.status, len(res.times), res.done, res.err)
	}
	for k, at := range res.times {
		if due := ttft + time.Duration(k)*itl; at < due {
			t.Fatalf("token %d arrived after %v, before it was due at %v", k, at, due)
		}
	}
	if res.chunks(t); len(res.text) == 0 {
		t.Fatal("no text streamed")
	}
	// Token 0 held; tokens 1-39, all due by then, in one write; the end.
	if n := writes.Load(); n != 3 {
		t.Errorf("%d writes for %d tokens of a stream held 100 ms: want 3 (the first token, the 39 due since, [DONE])", n, tokens)
	}
}
