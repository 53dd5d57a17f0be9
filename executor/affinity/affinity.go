// Package affinity places the threads of this process on CPUs and asks the
// kernel scheduler for short wake-up latency, so a load generator and the
// engine it measures can run on separate cores and the client's reads are
// not delayed behind other work. Linux only; elsewhere the functions return
// ErrUnsupported.
package affinity

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrUnsupported is returned on systems without sched_setaffinity and
// sched_setattr (everything but Linux).
var ErrUnsupported = errors.New("CPU affinity and scheduler slices are supported on Linux only")

// ParseCPUs reads a CPU list as taskset -c and cpuset files write it:
// "2", "0,2", "0-3", "0-3,8-11". The result is sorted and without repeats.
func ParseCPUs(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty CPU list; give CPUs as taskset -c does, e.g. 2 or 0-3,8")
	}
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number or range (e.g. 2 or 0-3)", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: %q is not a range low-high with low <= high", s, part)
			}
		}
		if b >= 1<<16 {
			return nil, fmt.Errorf("CPU list %q: CPU %d is out of range", s, b)
		}
		for c := a; c <= b; c++ {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	sortInts(out)
	return out, nil
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// Format writes cpus as a compact list ("0-3,8").
func Format(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Starved starts a measurement of CPU starvation: the function it returns
// reports the fraction of the time since the call that some task on the
// machine waited for a CPU (CPUWait's change over the wall time), 0 where
// the kernel does not say.
func Starved() func() float64 {
	w0, ok := CPUWait()
	t0 := time.Now()
	return func() float64 {
		w1, ok1 := CPUWait()
		el := time.Since(t0)
		if !ok || !ok1 || el <= 0 {
			return 0
		}
		return float64(w1-w0) / float64(el)
	}
}
