package sim

import (
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestHistogramConcurrentObservations holds the lock-free histogram to what
// the mutex one did: every observation counted once, in the first bucket
// whose bound is at or above it (above every bound: +Inf only), the
// exposition cumulative with +Inf equal to _count, and the sum exact (the
// values are small integers, so the order goroutines add them in cannot
// change the float sum).
func TestHistogramConcurrentObservations(t *testing.T) {
	h := newHistogram([]float64{1, 2, 4})
	const workers, each = 8, 5000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				h.observe(float64((i + w) % 6)) // 0..5
			}
		}()
	}
	wg.Wait()
	counts, count, sum := h.snapshot()
	// Per worker the values 0..5 occur evenly (5000 is not a multiple of
	// 6, so count them).
	var want [6]uint64
	for w := range workers {
		for i := range each {
			want[(i+w)%6]++
		}
	}
	wantCounts := []uint64{want[0] + want[1], want[2], want[3] + want[4], want[5]}
	var wantSum float64
	for v, n := range want {
		wantSum += float64(v) * float64(n)
	}
	for i := range wantCounts {
		if counts[i] != wantCounts[i] {
			t.Fatalf("bucket %d counted %d, want %d (all: %v, want %v)", i, counts[i], wantCounts[i], counts, wantCounts)
		}
	}
	if count != workers*each || sum != wantSum {
		t.Fatalf("count %d sum %v, want %d and %v", count, sum, workers*each, wantSum)
	}
	var b strings.Builder
	h.write(&b, "x", "help", `a="b"`)
	for _, line := range []string{
		`x_bucket{a="b",le="1"} ` + strconv.FormatUint(wantCounts[0], 10),
		`x_bucket{a="b",le="4"} ` + strconv.FormatUint(wantCounts[0]+wantCounts[1]+wantCounts[2], 10),
		`x_bucket{a="b",le="+Inf"} 40000`,
		`x_count{a="b"} 40000`,
	} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("exposition lacks %q:\n%s", line, b.String())
		}
	}
	if q := h.quantile(0.99); q <= 4 {
		t.Errorf("p99 %v: the values above every bound must land in +Inf", q)
	}
	if n, frac := h.above(2); n != count || frac != float64(wantCounts[2]+wantCounts[3])/float64(count) {
		t.Errorf("above(2) = %d, %v", n, frac)
	}
}
