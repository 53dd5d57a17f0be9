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

// TestSlowLorisHeadersAreCutOff trickles request headers: the server
// closes the connection after ReadHeaderTimeout instead of holding it.
func TestSlowLorisHeadersAreCutOff(t *testing.T) {
	_, addr := listenLimited(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, c)
		close(closed)
	}()
	header := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	for i := 0; i < len(header); i++ {
		select {
		case <-closed:
			if el := time.Since(start); el > 3*time.Second {
				t.Fatalf("closed only after %v", el)
			}
			return
		default:
		}
		c.Write([]byte{header[i]})
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("the server held a connection whose headers trickled in for seconds")
	}
}

// TestSlowBodyIsCutOff sends headers promptly and then trickles the body:
// after BodyTimeout the server answers 408 and closes the connection (the
// client may see only the close: a socket closed with unread input resets).
func TestSlowBodyIsCutOff(t *testing.T) {
	_, addr := listenLimited(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`
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
	start := time.Now()
	for i := 0; i < len(body); i++ {
		select {
		case a := <-got:
			if a.status != 0 && (a.status != http.StatusRequestTimeout || !strings.Contains(a.body, "did not arrive within")) {
				t.Fatalf("status %d: %s", a.status, a.body)
			}
			if el := time.Since(start); el > 3*time.Second {
				t.Fatalf("cut off only after %v", el)
			}
			return
		default:
		}
		c.Write([]byte{body[i]})
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the whole body trickled in over seconds and was accepted")
}
