package arrival

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestReadIsStampedWithTheKernelsReceiveTime: bytes a server reads late
// are stamped with when the client's write delivered them (the kernel's
// receive timestamp), not when the server got round to reading them.
// Before this package the engine's clock started at the handler, after
// the read. Timestamps start a moment after the first socket on the
// machine asks for them, so a few connections may be stamped at the read
// (never earlier than the bytes came), and at least one must carry the
// kernel's stamp.
func TestReadIsStampedWithTheKernelsReceiveTime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel's receive timestamp is read on Linux only")
	}
	ln := Listener(mustListen(t))
	defer ln.Close()
	kernel := 0
	for try := 0; try < 20 && kernel < 3; try++ {
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		sc, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		c := sc.(*conn)
		before := time.Now()
		if _, err := client.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		written := time.Now()
		// The server reads the bytes 20 ms after they came (a busy server).
		time.Sleep(20 * time.Millisecond)
		readAt := time.Now()
		buf := make([]byte, 64)
		if n, err := c.Read(buf); err != nil || n == 0 {
			t.Fatalf("read %d bytes: %v", n, err)
		}
		at := base.Add(time.Duration(c.first.Load()))
		switch {
		case at.Before(before.Add(-time.Millisecond)):
			t.Fatalf("try %d: stamped %v before the client began writing", try, before.Sub(at))
		case !at.After(written):
			kernel++
		case at.Before(readAt):
			t.Fatalf("try %d: stamped %v after the write returned but %v before the server read", try, at.Sub(written), readAt.Sub(at))
		}
		client.Close()
		c.Close()
	}
	if kernel == 0 {
		t.Fatal("no read in 20 carried the kernel's receive timestamp: every stamp was the read's own time")
	}
}

// TestEachRequestOnAConnectionHasItsOwnArrival: on a keep-alive
// connection the second request's arrival is its own bytes', not the
// first's (a stale stamp would start its clock early and make its tokens
// early), and a request whose body is read by the handler is timed from
// its headers.
func TestEachRequestOnAConnectionHasItsOwnArrival(t *testing.T) {
	type seen struct {
		at, start time.Time
		ok        bool
	}
	got := make(chan seen, 4)
	srv := &http.Server{ConnContext: ConnContext, Handler: Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		_, _ = io.Copy(io.Discard, r.Body)
		at, ok := Of(r)
		got <- seen{at, start, ok}
		fmt.Fprint(w, "ok")
	}))}
	ln := mustListen(t)
	go srv.Serve(Listener(ln))
	defer srv.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	br := bufio.NewReader(client)
	var prev time.Time
	for i := 0; i < 3; i++ {
		sent := time.Now()
		body := strings.Repeat("x", 100)
		if _, err := fmt.Fprintf(client, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		s := <-got
		if !s.ok {
			t.Fatalf("request %d: no arrival", i)
		}
		if s.at.Before(sent.Add(-time.Millisecond)) || s.at.After(s.start) {
			t.Fatalf("request %d: arrival %v after the send, %v before the handler: want between", i, s.at.Sub(sent), s.start.Sub(s.at))
		}
		if !s.at.After(prev) {
			t.Fatalf("request %d: arrival %v, not after the previous request's %v", i, s.at, prev)
		}
		prev = s.at
	}
}

// TestOfKnowsNothingOffAWrappedConnection: a request served without
// Listener (httptest, another server) has no arrival.
func TestOfKnowsNothingOffAWrappedConnection(t *testing.T) {
	r, _ := http.NewRequest("GET", "http://x/", nil)
	if _, ok := Of(r); ok {
		t.Fatal("Of reported an arrival for a request that came on no wrapped connection")
	}
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
