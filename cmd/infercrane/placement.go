package main

import (
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

// placeProcess pins this process to the CPUs of list (GOMAXPROCS follows
// unless the GOMAXPROCS variable is set) and sets its scheduler slice; it
// returns 0, or the exit code of a bad value (2) or a refused request (1).
// A slice the user did not ask for (explicit false) is best effort: a
// kernel or sandbox that refuses it leaves the default in place silently.
func placeProcess(env *cliEnv, cmd, list string, slice time.Duration, explicit bool) int {
	if list != "" {
		cpus, err := affinity.ParseCPUs(list)
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
	if slice != 0 {
		if err := affinity.Slice(slice); err != nil && explicit {
			fmt.Fprintf(env.Stderr, "%s: --sched-slice: %v\n", cmd, err)
			return 1
		}
	}
	return 0
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
