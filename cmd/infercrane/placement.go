package main

import (
	"errors"
	"flag"
	"fmt"
	"runtime"
	"time"

	"github.com/infercrane/infercrane/executor/affinity"
)

// defaultSlice is the scheduler slice bench, sim serve and apply ask for
// unless told otherwise: short enough that a thread woken by a token's
// bytes preempts CPU-bound work on a busy host (see docs/benchmarks.md, "The c=1
// TTFT tail on a busy host"), measured not to cost accuracy at 2,048 streams.
const defaultSlice = 100 * time.Microsecond

// placement is where and how eagerly the kernel runs this process: the
// --cpus, --sched-slice and --nice flags bench and sim serve share.
type placement struct {
	cpus  string
	slice sliceFlag
	nice  int
}

// sliceFlag is --sched-slice: a duration that remembers whether the user
// gave it (a default the kernel refuses is dropped silently, a given one
// is an error).
type sliceFlag struct {
	d     time.Duration
	given bool
}

func (f *sliceFlag) String() string { return f.d.String() }

func (f *sliceFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("parse error")
	}
	f.d, f.given = d, true
	return nil
}

// register declares the placement flags on fs; cpusUse is --cpus's usage
// text (what the other CPUs are left for).
func (p *placement) register(fs *flag.FlagSet, cpusUse string) {
	fs.StringVar(&p.cpus, "cpus", "", cpusUse)
	p.slice.d = defaultSlice
	fs.Var(&p.slice, "sched-slice", "ask the kernel scheduler (Linux 6.12+) for this base slice (a `duration`) on every thread, so reads, timers and writes wake sooner on a busy host (0: the kernel's default)")
	fs.IntVar(&p.nice, "nice", 0, "run every thread at this nice value (-20..19, Linux): below the host's other work (0) it gets the CPUs first; a negative value needs root or CAP_SYS_NICE (0: unchanged)")
}

// apply pins this process to the CPUs of --cpus (GOMAXPROCS follows unless
// the GOMAXPROCS variable is set), sets its nice value and its scheduler
// slice; it returns 0, or the exit code of a bad value (2) or a refused
// request (1). A slice the user did not ask for is best effort: a kernel or
// sandbox that refuses it leaves the default in place silently.
func (p *placement) apply(env *cliEnv, cmd string) int {
	if p.cpus != "" {
		cpus, err := affinity.ParseCPUs(p.cpus)
		if err != nil {
			fmt.Fprintf(env.Stderr, "%s: --cpus: %v\n", cmd, err)
			return 2
		}
		if err := affinity.Pin(cpus); err != nil {
			fmt.Fprintf(env.Stderr, "%s: --cpus: %v\n", cmd, err)
			return 1
		}
		if env.Getenv("GOMAXPROCS") == "" {
			runtime.GOMAXPROCS(len(cpus))
		}
	}
	if p.nice != 0 {
		if p.nice < -20 || p.nice > 19 {
			fmt.Fprintf(env.Stderr, "%s: --nice %d: give a value from -20 to 19\n", cmd, p.nice)
			return 2
		}
		if err := affinity.Nice(p.nice); err != nil {
			fmt.Fprintf(env.Stderr, "%s: --nice: %v; run as root (sudo) or drop --nice\n", cmd, err)
			return 1
		}
	}
	if p.slice.d != 0 {
		if err := affinity.Slice(p.slice.d); err != nil && p.slice.given {
			fmt.Fprintf(env.Stderr, "%s: --sched-slice: %v\n", cmd, err)
			return 1
		}
	}
	return 0
}
