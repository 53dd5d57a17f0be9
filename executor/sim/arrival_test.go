package sim

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTimedFromTheRequestsBytesNotItsHandler: the engine counts a request's
// time from when its first bytes reached it, not from when its handler ran
// (issue 26 item 8: a wave of 256 requests is read and dispatched one after
// another, and the later handlers' delay landed in every client's TTFT).
// The client sends the first line of the request, then, 50 ms later, the
// rest: the handler cannot start before the rest came, so an engine that
// times from its handler puts the arrival after the second write began;
// one that times from the bytes puts it before, unless the server was so
// busy that it read nothing of the first line in those 50 ms. Ten tries
// for one such read.
func TestTimedFromTheRequestsBytesNotItsHandler(t *testing.T) {
	url, e := start(t, Options{Model: "m", TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	addr := strings.TrimPrefix(url, "http://")
	body := `{"model":"m","prompt":"hi","max_tokens":2,"ignore_eos":true,"stream":true}`
	early := 0
	for try := 0; try < 10 && early == 0; try++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		if _, err := io.WriteString(c, "POST /v1/completions HTTP/1.1\r\n"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // a client slow to send the rest
		rest := time.Now()
		if _, err := fmt.Fprintf(c, "Host: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "[DONE]") {
			t.Fatalf("try %d: status %d, body %q", try, resp.StatusCode, b)
		}
		arrivals := e.Arrivals()
		at := arrivals[len(arrivals)-1]
		if at.Before(before.Add(-time.Millisecond)) {
			t.Fatalf("try %d: arrival %v before the client began sending", try, before.Sub(at))
		}
		if at.Before(rest) {
			early++
		}
	}
	if early == 0 {
		t.Fatal("in 10 requests the engine's arrival was never before the request's second write: it times requests from their handler, not from their bytes")
	}
}
