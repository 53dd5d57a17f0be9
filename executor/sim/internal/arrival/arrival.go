// Package arrival tells an HTTP/1.1 handler when its request's bytes
// reached the server's socket, not when the handler first ran. At hundreds
// of connections a wave of requests arriving together is read, parsed and
// dispatched one after another, and the last handler of a wave of 256 on
// two cores starts milliseconds after its bytes came in; an engine that
// counts its time to first token from the handler's start adds that
// dispatch delay to every client's TTFT.
//
// On Linux the arrival is the kernel's receive timestamp of the request's
// first bytes (SO_TIMESTAMPNS on the accepted socket, read with recvmsg):
// the moment the client's write reached the socket, however long the
// server then took to get to it. Elsewhere, or where the kernel gives no
// timestamp, it is the moment the read that returned those bytes
// returned. Neither is ever later than the handler's start, and neither is
// earlier than the first byte's arrival (a read that returns several
// segments is stamped with the last).
//
// Wiring: serve on Listener(ln), with ConnContext as the server's
// ConnContext and the handler wrapped in Handler; handlers then ask Of(r).
// HTTP/2 multiplexes requests on one connection, so Of reports nothing for
// them; nor for requests on connections that did not come from Listener.
package arrival

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// base is the origin of the stamps conns store as integers.
var base = time.Now()

// Listener wraps ln: the TCP connections it accepts stamp the first bytes
// of each request (see Of). Other connections pass through.
func Listener(ln net.Listener) net.Listener { return listener{ln} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	return newConn(tc), nil
}

// conn is an accepted TCP connection that stamps the first read of each
// request.
type conn struct {
	*net.TCPConn
	// first is when the first bytes read since the last request ended
	// arrived, as nanoseconds since base (0: nothing read since).
	first atomic.Int64
	sys   sysConn
}

// stamp records at as the arrival of the bytes just read, unless bytes of
// this request were read before.
func (c *conn) stamp(at time.Time) {
	c.first.CompareAndSwap(0, max(int64(at.Sub(base)), 1))
}

type connKey struct{}

// ConnContext is an http.Server's ConnContext: it lets Of find the
// connection a request came on.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if sc, ok := c.(*conn); ok {
		return context.WithValue(ctx, connKey{}, sc)
	}
	return ctx
}

// Handler wraps h so that each request's arrival is that of its own first
// bytes: when h returns, the connection starts watching for the next
// request's. (A client cannot send the next request on an HTTP/1.1
// connection before this response ends, and the response ends after h
// returns. A pipelining client's next request, if already read, has no
// stamp and Of falls back to the handler's start.)
func Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*conn)
		if c == nil || r.ProtoMajor != 1 {
			h.ServeHTTP(w, r)
			return
		}
		defer c.first.Store(0)
		h.ServeHTTP(w, r)
	})
}

// Of returns when the first bytes of r reached the server (see the package
// comment), never later than now; false when that is not known: HTTP/2, a
// connection not accepted by Listener, or a request read before its
// connection's previous request ended.
func Of(r *http.Request) (time.Time, bool) {
	c, _ := r.Context().Value(connKey{}).(*conn)
	if c == nil || r.ProtoMajor != 1 {
		return time.Time{}, false
	}
	d := c.first.Load()
	if d == 0 {
		return time.Time{}, false
	}
	at := base.Add(time.Duration(d))
	if now := time.Now(); at.After(now) {
		return now, true
	}
	return at, true
}
