//go:build linux

package clock

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// timerfd is a Linux timerfd read through the runtime's poller: the
// goroutine reading it wakes the moment it expires, not on the poller's
// millisecond grid. It calls timerfd_create and timerfd_settime through
// package syscall, so the package imports nothing outside the standard
// library (golang.org/x/sys/unix would grow the sandbox load generator).
type timerfd struct {
	fd  int
	f   *os.File
	buf [8]byte
}

// clockMonotonic is CLOCK_MONOTONIC, the clock Go's monotonic readings use.
const clockMonotonic = 1

// itimerspec is the kernel's struct itimerspec.
type itimerspec struct {
	interval, value syscall.Timespec
}

func newOSTimer() (osTimer, error) {
	// TFD_NONBLOCK and TFD_CLOEXEC are O_NONBLOCK and O_CLOEXEC by definition.
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return nil, os.NewSyscallError("timerfd_create", errno)
	}
	return &timerfd{fd: int(fd), f: os.NewFile(fd, "clock-timerfd")}, nil
}

func (t *timerfd) arm(d time.Duration) error {
	spec := itimerspec{value: syscall.NsecToTimespec(int64(max(d, time.Microsecond)))}
	_, _, errno := syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, uintptr(t.fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	if errno != 0 {
		return os.NewSyscallError("timerfd_settime", errno)
	}
	return nil
}

func (t *timerfd) wait() error {
	_, err := t.f.Read(t.buf[:])
	return err
}

func (t *timerfd) close() error { return t.f.Close() }
