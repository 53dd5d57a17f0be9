package clock

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestPreciseClockNeverEarly parks many waiters with scattered due times
// (every other one through UntilSpin) and checks that each wakes, and never
// before its due time; a cancelled wait leaves the heap.
func TestPreciseClockNeverEarly(t *testing.T) {
	c := New()
	if c == nil {
		t.Skip("no precise OS timer on this platform")
	}
	defer c.Close()
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := NewSleeper(c)
			for k := 0; k < 5; k++ {
				due := time.Now().Add(time.Duration((i*7+k*13)%40+1) * time.Millisecond / 4)
				ok := false
				if i%2 == 0 {
					ok = s.Until(context.Background(), nil, due)
				} else {
					ok = s.UntilSpin(context.Background(), nil, due, 50*time.Microsecond)
				}
				if !ok {
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
	s := NewSleeper(c)
	go func() { time.Sleep(5 * time.Millisecond); cancel() }()
	if s.Until(ctx, nil, time.Now().Add(time.Hour)) {
		t.Fatal("a cancelled wait reported success")
	}
	c.mu.Lock()
	n := len(c.h)
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d waiters left in the heap", n)
	}
}

// TestSleeperWithoutClock checks the time.Timer fallback (a nil Clock,
// what non-Linux platforms get): Until and UntilSpin never return before
// their deadline, a past deadline returns at once, and a cancelled or
// stopped wait returns false.
func TestSleeperWithoutClock(t *testing.T) {
	var c *Clock
	defer c.Close() // a nil Clock's Close does nothing
	s := NewSleeper(c)
	for k := range 10 {
		due := time.Now().Add(time.Duration(k+1) * 300 * time.Microsecond)
		var ok bool
		if k%2 == 0 {
			ok = s.Until(context.Background(), nil, due)
		} else {
			ok = s.UntilSpin(context.Background(), nil, due, 100*time.Microsecond)
		}
		if !ok {
			t.Fatal("a wait without cancellation returned false")
		}
		if now := time.Now(); now.Before(due) {
			t.Fatalf("woke %v early", due.Sub(now))
		}
	}
	if !s.Until(context.Background(), nil, time.Now().Add(-time.Second)) {
		t.Fatal("a past deadline returned false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s.UntilSpin(ctx, nil, time.Now().Add(time.Hour), 50*time.Microsecond) {
		t.Fatal("a cancelled wait reported success")
	}
	stop := make(chan struct{})
	close(stop)
	if s.Until(context.Background(), stop, time.Now().Add(time.Hour)) {
		t.Fatal("a stopped wait reported success")
	}
}

// BenchmarkClockLateness compares the precise clock's wake-up lateness
// with a time.Timer's (the baseline), one waiter, 2.3 ms apart.
func BenchmarkClockLateness(b *testing.B) {
	c := New()
	if c == nil {
		b.Skip("no precise OS timer on this platform")
	}
	defer c.Close()
	measure := func(s *Sleeper, n int) float64 {
		late := make([]float64, 0, n)
		for i := 0; i < n; i++ {
			due := time.Now().Add(2300 * time.Microsecond)
			s.Until(context.Background(), nil, due)
			late = append(late, float64(time.Since(due).Microseconds()))
		}
		slices.Sort(late)
		return late[len(late)/2]
	}
	b.ResetTimer()
	precise := measure(NewSleeper(c), b.N)
	b.StopTimer()
	timer := measure(NewSleeper(nil), b.N)
	b.ReportMetric(precise, "late-p50-µs")
	b.ReportMetric(timer, "timer-late-p50-µs")
	b.ReportMetric(timer/max(precise, 1), "timer-vs-precise")
}
