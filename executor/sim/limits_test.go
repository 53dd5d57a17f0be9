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

func listenLimited(t *testing.T) (*Server, string) {
	t.Helper()
	s, err := Listen("127.0.0.1:0", Options{Model: "m", MaxBodyBytes: 1 << 10, ReadHeaderTimeout: 300 * time.Millisecond, BodyTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(t.Context()) })
	return s, strings.TrimPrefix(s.URL, "http://")
}

// TestBodyOverLimitIs413 sends a body over MaxBodyBytes: the answer is
// 413 naming the limit, and a body under it is still served.
func TestBodyOverLimitIs413(t *testing.T) {
	s, _ := listenLimited(t)
	big := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":%q}],"max_tokens":1}`, strings.Repeat("x", 4<<10))
	resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "over 1024 bytes") {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	small := `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`
	resp, err = http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(small))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a small body: status %d", resp.StatusCode)
	}
}

// hangBound only catches a server that never cuts a trickling client off:
// the cut-offs are due after 300 ms, and a loaded 2-core machine may run
// the server's timers seconds late, never this late.
const hangBound = 30 * time.Second

// TestSlowLorisHeadersAreCutOff trickles request headers, one byte every 50
// ms and without end: the server closes the connection after
// ReadHeaderTimeout instead of holding it. A server without the timeout
// holds it for as long as bytes come, and the test fails at hangBound.
func TestSlowLorisHeadersAreCutOff(t *testing.T) {
	_, addr := listenLimited(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, c)
		close(closed)
	}()
	header := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	for i := 0; ; i++ {
		if i >= len(header) {
			header += fmt.Sprintf("X-Pad-%d: x\r\n", i) // headers that never end
		}
		select {
		case <-closed:
			return
		case <-time.After(50 * time.Millisecond):
		}
		c.Write([]byte{header[i]})
		if i*50 > int(hangBound/time.Millisecond) {
			t.Fatalf("the server held a connection whose headers trickled in for %v", hangBound)
		}
	}
}

// TestSlowBodyIsCutOff sends headers promptly and then trickles the body,
// one byte every 50 ms: after BodyTimeout the server answers 408 and closes
// the connection (the client may see only the close: a socket closed with
// unread input resets). The body is long enough to trickle for longer than
// hangBound, so a server without the timeout fails the test there.
func TestSlowBodyIsCutOff(t *testing.T) {
	_, addr := listenLimited(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Under MaxBodyBytes (1 KiB), so that only the time cuts it off.
	body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"%s"}],"max_tokens":1}`, strings.Repeat("x", 900))
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	type answer struct {
		status int
		body   string
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			got <- answer{}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		got <- answer{resp.StatusCode, string(b)}
	}()
	for i := 0; i < len(body) && i*50 < int(hangBound/time.Millisecond); i++ {
		select {
		case a := <-got:
			if a.status != 0 && (a.status != http.StatusRequestTimeout || !strings.Contains(a.body, "did not arrive within")) {
				t.Fatalf("status %d: %s", a.status, a.body)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
		c.Write([]byte{body[i]})
	}
	t.Fatalf("the body trickled in for %v and was not cut off", hangBound)
}
