package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/infercrane/infercrane/executor/affinity"
)

// placeProcess pins this process to the CPUs of list (GOMAXPROCS follows
// unless the GOMAXPROCS variable is set) and sets its scheduler slice; it
// returns 0, or the exit code of a bad value (2) or a refused request (1).
func placeProcess(env *cliEnv, cmd, list string, slice time.Duration) int {
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
		if err := affinity.Slice(slice); err != nil {
			fmt.Fprintf(env.Stderr, "%s: --sched-slice: %v\n", cmd, err)
			return 1
		}
	}
	return 0
}
