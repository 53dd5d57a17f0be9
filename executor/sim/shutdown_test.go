package sim

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestShutdownClosesTheDoorBeforeEndingStreams: a client whose stream
// Shutdown ends must find no server when it looks right after (the
// executor's post-run probe decides from that whether the run measured
// the server or found it gone). Before, Shutdown ended the streams first
// and closed the listener after, so a quick client could still connect.
func TestShutdownClosesTheDoorBeforeEndingStreams(t *testing.T) {
	for i := 0; i < 20; i++ {
		s, err := Listen("127.0.0.1:0", Options{Model: "m", TTFT: time.Millisecond, ITL: time.Millisecond, Faults: Faults{StallAfter: 1, StallFor: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		body := `{"model":"m","prompt":"a","max_tokens":4,"ignore_eos":true,"stream":true}`
		resp, err := http.Post(s.URL+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		if _, err := r.ReadString('\n'); err != nil { // the first token: the stream is in flight
			t.Fatal(err)
		}
		stopped := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang, not a slow machine
			defer cancel()
			stopped <- s.Shutdown(ctx)
		}()
		for { // until Shutdown ends the stream
			if _, err := r.ReadString('\n'); err != nil {
				break
			}
		}
		resp.Body.Close()
		addr := strings.TrimPrefix(s.URL, "http://")
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			<-stopped
			t.Fatalf("try %d: the stream ended while %s still accepted connections", i+1, addr)
		}
		if err := <-stopped; err != nil {
			t.Fatalf("try %d: Shutdown: %v", i+1, err)
		}
	}
}
