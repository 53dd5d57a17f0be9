package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/infercrane/infercrane/executor/sim/internal/arrival"
)

// Server is a simulated engine listening on a TCP address.
type Server struct {
	// URL is the base URL, e.g. http://127.0.0.1:41234.
	URL    string
	Engine *Engine
	srv    *http.Server
	ln     net.Listener
	done   chan error
}

// Listen starts an engine on addr ("127.0.0.1:0" picks a free port),
// serving HTTP/1.1 and unencrypted HTTP/2 (h2c). A crash fault closes the
// listener and drops every connection.
func Listen(addr string, opts Options) (*Server, error) {
	e, err := NewEngine(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("listen on %s: %w; pick another port or use port 0", addr, err)
	}
	o := e.Options()
	// Headers and bodies are bounded in time (slow clients are cut off)
	// and bodies in size (Engine.decode); streams are not (no
	// WriteTimeout), and idle keep-alive connections are closed.
	// Requests are timed from when their bytes reached the socket
	// (package arrival), not from when their handler first ran.
	srv := &http.Server{Handler: arrival.Handler(e), ConnContext: arrival.ConnContext, ReadHeaderTimeout: o.ReadHeaderTimeout, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: nil}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	s := &Server{URL: "http://" + ln.Addr().String(), Engine: e, srv: srv, ln: ln, done: make(chan error, 1)}
	e.OnCrash(func() { _ = srv.Close() })
	// Shutdown closes the listener first and only then runs this: a
	// client whose stream ends finds no server to connect to (the
	// executor's post-run probe tells a dead server from a measured one
	// by that), never a server still accepting.
	srv.RegisterOnShutdown(e.Close)
	go func() {
		err := srv.Serve(arrival.Listener(ln))
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// Shutdown stops accepting, then ends streams in flight (promptly, instead
// of running them to completion) and waits for the server to stop, up to
// ctx's deadline. The order matters: the listener is closed before any
// stream ends (see Listen).
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx) // closes the listener, then calls Engine.Close
	if err != nil {
		_ = s.srv.Close()
	}
	s.Engine.Close() // idempotent; stopped for sure before Shutdown returns
	if serr := <-s.done; err == nil {
		err = serr
	}
	return err
}

// Serve starts an engine on addr for in-process use and returns its base
// URL and a stop function; the server also stops when ctx ends.
func Serve(ctx context.Context, addr string, opts Options) (url string, stop func() error, err error) {
	s, err := Listen(addr, opts)
	if err != nil {
		return "", nil, err
	}
	stopped := make(chan struct{})
	var once sync.Once
	var stopErr error
	stopFn := func() error {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			stopErr = s.Shutdown(sctx)
			close(stopped)
		})
		<-stopped
		return stopErr
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = stopFn()
		case <-stopped:
		}
	}()
	return s.URL, stopFn, nil
}
