//go:build !linux

package arrival

import (
	"net"
	"time"
)

// sysConn is empty where there is no kernel receive timestamp.
type sysConn struct{}

func newConn(tc *net.TCPConn) *conn { return &conn{TCPConn: tc} }

// Read reads like net.TCPConn's Read and stamps the bytes read with the
// moment the read returned.
func (c *conn) Read(b []byte) (int, error) {
	n, err := c.TCPConn.Read(b)
	if n > 0 {
		c.stamp(time.Now())
	}
	return n, err
}
