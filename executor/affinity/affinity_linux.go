//go:build linux

package affinity

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// threads lists the thread IDs of this process.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("list this process's threads: %w", err)
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// Pin restricts every thread of this process to cpus. Threads the Go
// runtime starts later inherit the mask from the thread that creates them.
// It fails when a CPU is not online, naming those that are, or when the
// kernel refuses the mask (a container's cpuset).
func Pin(cpus []int) error {
	if online, err := Online(); err == nil {
		on := map[int]bool{}
		for _, c := range online {
			on[c] = true
		}
		for _, c := range cpus {
			if !on[c] {
				return fmt.Errorf("CPU %d is not online (online: %s)", c, Format(online))
			}
		}
	}
	var set unix.CPUSet
	set.Zero()
	for _, c := range cpus {
		set.Set(c)
	}
	tids, err := threads()
	if err != nil {
		return err
	}
	for _, tid := range tids {
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("pin thread %d to CPUs %s: %w (a container's cpuset may not allow them)", tid, Format(cpus), err)
		}
	}
	return nil
}

// Online returns the CPUs the kernel has online.
func Online() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	return ParseCPUs(string(b))
}

// Current returns the CPUs this process's calling thread may run on.
func Current() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Slice asks the kernel's EEVDF scheduler (Linux 6.12 and later) for a
// base slice of d on every thread of this process: a shorter slice gives a
// thread an earlier virtual deadline when it wakes, so it preempts
// CPU-bound work sooner instead of waiting behind it. The process keeps its
// policy and nice value; no privilege is needed. Older kernels ignore the
// value (sched_setattr accepts it and uses the default slice).
func Slice(d time.Duration) error {
	if d < 100*time.Microsecond || d > 100*time.Millisecond {
		return fmt.Errorf("scheduler slice %v is out of the kernel's range 100us..100ms", d)
	}
	tids, err := threads()
	if err != nil {
		return err
	}
	for _, tid := range tids {
		attr, err := unix.SchedGetAttr(tid, 0)
		if err == unix.ESRCH {
			continue
		}
		if err != nil {
			return fmt.Errorf("read the scheduling attributes of thread %d: %w", tid, err)
		}
		if attr.Policy != unix.SCHED_NORMAL && attr.Policy != unix.SCHED_BATCH {
			continue // a real-time or deadline thread keeps what it has
		}
		attr.Size = unix.SizeofSchedAttr
		attr.Runtime = uint64(d.Nanoseconds())
		attr.Flags = 0
		if err := unix.SchedSetAttr(tid, attr, 0); err != nil && err != unix.ESRCH {
			return fmt.Errorf("set a %v scheduler slice on thread %d: %w", d, tid, err)
		}
	}
	return nil
}

// Nice sets the nice value of every thread of this process to n (-20 to
// 19; lower runs sooner): on a host busy with other work, threads at a
// lower value than that work get a larger share of the CPUs and wake ahead
// of it. Linux keeps a nice value per thread; threads the Go runtime starts
// later inherit it from the thread that creates them. Lowering a value
// below the current one needs CAP_SYS_NICE (root) or RLIMIT_NICE; raising
// one is always allowed and cannot be undone without them.
func Nice(n int) error {
	if n < -20 || n > 19 {
		return fmt.Errorf("nice value %d is out of the kernel's range -20..19", n)
	}
	tids, err := threads()
	if err != nil {
		return err
	}
	for _, tid := range tids {
		err := unix.Setpriority(unix.PRIO_PROCESS, tid, n)
		switch {
		case err == nil || err == unix.ESRCH:
		case err == unix.EACCES || err == unix.EPERM:
			return fmt.Errorf("set nice %d on thread %d: %w (a value below the current one needs root, CAP_SYS_NICE or RLIMIT_NICE)", n, tid, err)
		default:
			return fmt.Errorf("set nice %d on thread %d: %w", n, tid, err)
		}
	}
	return nil
}

// ThreadNice returns the nice value of each thread of this process, by
// thread ID.
func ThreadNice() (map[int]int, error) {
	tids, err := threads()
	if err != nil {
		return nil, err
	}
	out := make(map[int]int, len(tids))
	for _, tid := range tids {
		// getpriority(2) returns 20 - nice so that no value is negative.
		v, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
		if err == unix.ESRCH {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the nice value of thread %d: %w", tid, err)
		}
		out[tid] = 20 - v
	}
	return out, nil
}

// CPUWait returns how long, in total since boot, runnable tasks on this
// machine waited for a CPU (/proc/pressure/cpu, "some ... total="), and
// false where the kernel does not report CPU pressure. The change over an
// interval, divided by the interval, is the fraction of it that some task
// was starved: a timing measurement taken then says more about the machine
// than about what it measured.
func CPUWait() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	for _, f := range strings.Fields(strings.SplitN(string(b), "\n", 2)[0]) {
		if v, ok := strings.CutPrefix(f, "total="); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, false
			}
			return time.Duration(us) * time.Microsecond, true
		}
	}
	return 0, false
}
