//go:build unix

package sim

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) this process has used, which,
// unlike wall time, other processes on a busy machine barely disturb.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
