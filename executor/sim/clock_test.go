package sim

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestPreciseClockNeverEarly parks many waiters with scattered due times
// and checks that each wakes, and never before its due time; a cancelled
// wait leaves the heap.
func TestPreciseClockNeverEarly(t *testing.T) {
	c := newPreciseClock()
	if c == nil {
		t.Skip("no precise OS timer on this platform")
	}
	defer c.close()
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newSleeper(c)
			for k := 0; k < 5; k++ {
				due := time.Now().Add(time.Duration((i*7+k*13)%40+1) * time.Millisecond / 4)
				if !s.until(context.Background(), nil, due) {
					errs <- "a wait without cancellation returned false"
					return
				}
				if now := time.Now(); now.Before(due) {
					errs <- "woke " + due.Sub(now).String() + " early"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := newSleeper(c)
	go func() { time.Sleep(5 * time.Millisecond); cancel() }()
	if s.until(ctx, nil, time.Now().Add(time.Hour)) {
		t.Fatal("a cancelled wait reported success")
	}
	c.mu.Lock()
	n := len(c.h)
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d waiters left in the heap", n)
	}
}

// BenchmarkClockLateness compares the precise clock's wake-up lateness
// with a time.Timer's (the baseline), one waiter, 2.3 ms apart.
func BenchmarkClockLateness(b *testing.B) {
	c := newPreciseClock()
	if c == nil {
		b.Skip("no precise OS timer on this platform")
	}
	defer c.close()
	measure := func(s *sleeper, n int) float64 {
		late := make([]float64, 0, n)
		for i := 0; i < n; i++ {
			due := time.Now().Add(2300 * time.Microsecond)
			s.until(context.Background(), nil, due)
			late = append(late, float64(time.Since(due).Microseconds()))
		}
		return percentile(late, 0.5)
	}
	b.ResetTimer()
	precise := measure(newSleeper(c), b.N)
	b.StopTimer()
	timer := measure(newSleeper(nil), b.N)
	b.ReportMetric(precise, "late-p50-µs")
	b.ReportMetric(timer, "timer-late-p50-µs")
	b.ReportMetric(timer/max(precise, 1), "timer-vs-precise")
}
