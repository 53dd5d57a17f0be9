// Package clock wakes goroutines at precise instants. Go's timers wake
// through the runtime's network poller, whose wait is rounded to whole
// milliseconds on Linux, so a time.Timer fires on average about half a
// millisecond late, and later on a busy machine. Where the OS offers a
// precise timer (a timerfd on Linux, which the poller sees as a readable
// file the moment it expires) a Clock keeps one: every Sleeper parks its
// single waiter in a heap ordered by due time, and one goroutine reads the
// timer, wakes every waiter that is due and re-arms the timer for the next.
// Elsewhere, and where the timer cannot be made, New returns nil and each
// Sleeper uses one time.Timer.
//
// No waiter is ever woken before its due time (time.Now, the monotonic
// clock, says so before it is woken), and nothing spins: the goroutines
// block in the kernel until the timer expires.
//
// The package is a leaf: it imports the standard library only, so the
// simulated engine and the load generator (whose sandbox binary stays
// small) can both use it.
package clock

import (
	"container/heap"
	"context"
	"runtime"
	"sync"
	"time"
)

// osTimer is a one-shot OS timer that a goroutine can block on.
type osTimer interface {
	// arm makes the timer fire after d (d > 0), replacing any earlier arming.
	arm(d time.Duration) error
	// wait blocks until the timer fires or the timer is closed (error).
	wait() error
	close() error
}

// waiter is one Sleeper's place in the clock.
type waiter struct {
	due time.Time
	ch  chan struct{}
	idx int // index in the heap, -1 when not queued
}

type waiterHeap []*waiter

// Len is part of heap.Interface.
func (h waiterHeap) Len() int { return len(h) }

// Less orders waiters by due time (heap.Interface).
func (h waiterHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }

// Swap is part of heap.Interface; it keeps each waiter's index current.
func (h waiterHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}

// Push is part of heap.Interface.
func (h *waiterHeap) Push(x any) {
	w := x.(*waiter)
	w.idx = len(*h)
	*h = append(*h, w)
}

// Pop is part of heap.Interface; a popped waiter's index becomes -1.
func (h *waiterHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.idx = -1
	return w
}

// Clock wakes Sleepers at their due time from one OS timer. A nil *Clock
// is valid: its Sleepers use time.Timer.
type Clock struct {
	t     osTimer
	mu    sync.Mutex
	h     waiterHeap
	armed time.Time // due time the OS timer is armed for; zero when idle
	done  chan struct{}
}

// New starts a Clock on a precise OS timer (one file descriptor and one
// goroutine until Close). It returns nil where the OS has no precise
// timer or it cannot be made; NewSleeper(nil) then falls back to
// time.Timer, so callers need not check.
func New() *Clock {
	t, err := newOSTimer()
	if err != nil {
		return nil
	}
	c := &Clock{t: t, done: make(chan struct{})}
	go c.loop()
	return c
}

func (c *Clock) loop() {
	defer close(c.done)
	for {
		if err := c.t.wait(); err != nil {
			return
		}
		c.mu.Lock()
		now := time.Now()
		for len(c.h) > 0 && !c.h[0].due.After(now) {
			w := heap.Pop(&c.h).(*waiter)
			select {
			case w.ch <- struct{}{}:
			default:
			}
		}
		c.armed = time.Time{}
		if len(c.h) > 0 {
			c.armLocked(c.h[0].due)
		}
		c.mu.Unlock()
	}
}

func (c *Clock) armLocked(due time.Time) {
	c.armed = due
	_ = c.t.arm(max(time.Until(due), time.Microsecond))
}

// sleepUntil parks w until due; false when ctx or stop ends first.
func (c *Clock) sleepUntil(ctx context.Context, stop <-chan struct{}, w *waiter, due time.Time) bool {
	select {
	case <-w.ch: // a stale wake from an abandoned wait
	default:
	}
	c.mu.Lock()
	w.due = due
	heap.Push(&c.h, w)
	if c.armed.IsZero() || due.Before(c.armed) {
		c.armLocked(due)
	}
	c.mu.Unlock()
	select {
	case <-w.ch:
		return true
	case <-ctx.Done():
	case <-stop:
	}
	c.mu.Lock()
	if w.idx >= 0 {
		heap.Remove(&c.h, w.idx)
	}
	c.mu.Unlock()
	return false
}

// Close releases the OS timer and stops the clock's goroutine; Sleepers
// still waiting on it are not woken (cancel their contexts first). Close
// on a nil *Clock does nothing.
func (c *Clock) Close() {
	if c == nil {
		return
	}
	_ = c.t.close()
	<-c.done
}

// Sleeper is one goroutine's way to wait: a waiter on a Clock when there is
// one, else one reusable time.Timer. A Sleeper serves one wait at a time.
type Sleeper struct {
	clock *Clock
	w     *waiter
	t     *time.Timer
}

// NewSleeper returns a Sleeper that waits on c, or on a time.Timer when c
// is nil.
func NewSleeper(c *Clock) *Sleeper {
	if c != nil {
		return &Sleeper{clock: c, w: &waiter{ch: make(chan struct{}, 1), idx: -1}}
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Sleeper{t: t}
}

// Until waits until deadline, never returning true before it; it returns
// false when ctx is done or stop is closed first (a nil stop never is).
// A deadline already past returns at once, true unless ctx is done.
func (s *Sleeper) Until(ctx context.Context, stop <-chan struct{}, deadline time.Time) bool {
	if time.Until(deadline) <= 0 {
		return ctx.Err() == nil
	}
	if s.clock != nil {
		return s.clock.sleepUntil(ctx, stop, s.w, deadline)
	}
	s.t.Reset(time.Until(deadline))
	select {
	case <-s.t.C:
		return true
	case <-ctx.Done():
	case <-stop:
	}
	s.t.Stop()
	return false
}

// UntilSpin is Until for a waiter that must not be late by the time a
// thread takes to wake from idle (on a virtual machine about 50-150 µs
// beyond the timer's expiry): it sleeps until early before deadline, then
// yields the processor (runtime.Gosched) in a loop until deadline. The
// spin is bounded by early, and mostly shorter: the wake-up itself comes
// late. Keep early to tens of µs; 0 is Until.
func (s *Sleeper) UntilSpin(ctx context.Context, stop <-chan struct{}, deadline time.Time, early time.Duration) bool {
	if early <= 0 {
		return s.Until(ctx, stop, deadline)
	}
	if !s.Until(ctx, stop, deadline.Add(-early)) {
		return false
	}
	for time.Now().Before(deadline) {
		runtime.Gosched()
	}
	return ctx.Err() == nil
}
