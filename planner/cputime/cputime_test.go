//go:build unix

package cputime

import (
	"testing"
	"time"
)

// TestUsedGrowsWithWork: the process's CPU time grows while it works (the
// loop's getrusage calls are system time themselves), and never goes
// back. The minute is a safety stop for a Used that never moves, not a
// timing bound: on Linux it moves within a few milliseconds.
func TestUsedGrowsWithWork(t *testing.T) {
	start, stop := Used(), time.Now().Add(time.Minute)
	if start <= 0 {
		t.Fatalf("a running test has used %v of CPU", start)
	}
	for prev := start; ; {
		now := Used()
		if now < prev {
			t.Fatalf("CPU time went back from %v to %v", prev, now)
		}
		if now > start {
			return
		}
		if time.Now().After(stop) {
			t.Fatalf("CPU time stayed at %v for a minute of work", start)
		}
		prev = now
	}
}
