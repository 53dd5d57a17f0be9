//go:build !unix

package cputime

import "time"

// Used is not measured on this system: 0 (a CPU-time check then passes,
// and a benchmark reports wall time only).
func Used() time.Duration { return 0 }
