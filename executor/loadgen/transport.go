package loadgen

import (
	"net"
	"net/http"
	"time"
)

// NewTransport returns the one tuned transport a run uses: keep-alive
// connections, as many idle and active connections per host as there are
// concurrent streams (so no stream waits behind another on HTTP/1.1; 0
// streams means unbounded, for an uncapped open loop), no
// transparent gzip (which would buffer the stream), TCP_NODELAY (Go's
// default) and, with h2c, HTTP/2 over cleartext with prior knowledge.
func NewTransport(streams int, h2c bool) *http.Transport {
	idle := streams + 16
	if streams <= 0 {
		streams, idle = 0, 1024
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                  nil, // benchmarks talk to the server directly
		DialContext:            d.DialContext,
		MaxIdleConns:           idle,
		MaxIdleConnsPerHost:    idle,
		MaxConnsPerHost:        streams,
		IdleConnTimeout:        90 * time.Second,
		DisableCompression:     true,
		ResponseHeaderTimeout:  0,
		ExpectContinueTimeout:  0,
		WriteBufferSize:        16 << 10,
		ReadBufferSize:         16 << 10,
		MaxResponseHeaderBytes: 64 << 10,
	}
	if h2c {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		t.Protocols = p
	} else {
		p := new(http.Protocols)
		p.SetHTTP1(true)
		t.Protocols = p
	}
	return t
}
