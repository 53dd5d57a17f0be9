//go:build !unix

package planner

import "time"

// cpuTime is unavailable here; the benchmark reports wall time only.
func cpuTime() time.Duration { return 0 }
