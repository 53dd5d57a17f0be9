//go:build linux

package arrival

import (
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// sysConn reads with recvmsg to get the kernel's receive timestamp
// (SO_TIMESTAMPNS) of the bytes read; raw is nil where the timestamp could
// not be turned on, and reads fall back to net.TCPConn's.
type sysConn struct {
	raw syscall.RawConn
	oob [128]byte
}

func newConn(tc *net.TCPConn) *conn {
	c := &conn{TCPConn: tc}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c
	}
	c.sys.raw = raw
	return c
}

// Read reads like net.TCPConn's Read (the same errors: net.OpError, io.EOF)
// and stamps the bytes read.
func (c *conn) Read(b []byte) (int, error) {
	if c.sys.raw == nil {
		n, err := c.TCPConn.Read(b)
		if n > 0 {
			c.stamp(time.Now())
		}
		return n, err
	}
	if len(b) == 0 {
		return 0, nil
	}
	var n, oobn int
	var rerr error
	err := c.sys.raw.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), b, c.sys.oob[:], 0)
			if rerr != syscall.EINTR {
				return rerr != syscall.EAGAIN
			}
		}
	})
	switch {
	case err == nil && rerr != nil:
		err = os.NewSyscallError("recvmsg", rerr)
	case err == nil && n == 0:
		return 0, io.EOF
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	c.stamp(received(c.sys.oob[:oobn], time.Now()))
	return n, nil
}

// received is when the kernel timestamped the bytes that oob's control
// messages came with, on now's monotonic clock; now when oob has no
// timestamp (the kernel turns timestamps on for the first socket that asks
// a moment later) or it lies after now (a wall clock stepped back).
func received(oob []byte, now time.Time) time.Time {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return now
	}
	for _, m := range msgs {
		if m.Header.Level != syscall.SOL_SOCKET || m.Header.Type != syscall.SCM_TIMESTAMPNS || len(m.Data) < int(unsafe.Sizeof(syscall.Timespec{})) {
			continue
		}
		ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
		// Wall clock against wall clock, then onto now's monotonic reading.
		age := now.Sub(time.Unix(int64(ts.Sec), int64(ts.Nsec)))
		if age < 0 {
			return now
		}
		return now.Add(-age)
	}
	return now
}
