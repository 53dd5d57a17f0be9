//go:build !unix

package sim

import "time"

// cpuTime is not measured on this system (the CPU check then passes).
func cpuTime() time.Duration { return 0 }
