//go:build linux

package sim

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerfd is a Linux timerfd read through the runtime's poller: the
// goroutine reading it wakes the moment it expires (within the kernel's
// timer slack, about 50 µs), not on the poller's millisecond grid.
type timerfd struct {
	fd  int
	f   *os.File
	buf [8]byte
}

func newOSTimer() (osTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &timerfd{fd: fd, f: os.NewFile(uintptr(fd), "sim-timerfd")}, nil
}

func (t *timerfd) arm(d time.Duration) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(d, time.Microsecond)))}
	return unix.TimerfdSettime(t.fd, 0, &spec, nil)
}

func (t *timerfd) wait() error {
	_, err := t.f.Read(t.buf[:])
	return err
}

func (t *timerfd) close() error { return t.f.Close() }
