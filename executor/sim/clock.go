package sim

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Go's timers wake through the runtime's network poller, whose wait is
// rounded to whole milliseconds on Linux, so a time.Timer fires on average
// about half a millisecond late. Constant mode promises token times precise
// to well under that, so where the OS offers a precise timer (a timerfd on
// Linux, which the poller sees as a readable file the moment it expires)
// the engine keeps one: every stream parks its single waiter in a heap
// ordered by due time, and one goroutine reads the timerfd, wakes every
// waiter that is due and re-arms the timer for the next. Elsewhere, and if
// the timerfd cannot be made, each stream uses one time.Timer.

// osTimer is a one-shot OS timer that a goroutine can block on.
type osTimer interface {
	// arm makes the timer fire after d (d > 0), replacing any earlier arming.
	arm(d time.Duration) error
	// wait blocks until the timer fires or the timer is closed (error).
	wait() error
	close() error
}

// waiter is one stream's place in the precise clock.
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

// preciseClock wakes waiters at their due time from one OS timer.
type preciseClock struct {
	t     osTimer
	mu    sync.Mutex
	h     waiterHeap
	armed time.Time // due time the OS timer is armed for; zero when idle
	done  chan struct{}
}

func newPreciseClock() *preciseClock {
	t, err := newOSTimer()
	if err != nil {
		return nil
	}
	c := &preciseClock{t: t, done: make(chan struct{})}
	go c.loop()
	return c
}

func (c *preciseClock) loop() {
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

func (c *preciseClock) armLocked(due time.Time) {
	c.armed = due
	_ = c.t.arm(max(time.Until(due), time.Microsecond))
}

// sleepUntil parks w until due; false when ctx or stop ends first.
func (c *preciseClock) sleepUntil(ctx context.Context, stop <-chan struct{}, w *waiter, due time.Time) bool {
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

func (c *preciseClock) close() {
	_ = c.t.close()
	<-c.done
}

// sleeper is one stream's (or the scheduler's) way to wait: a waiter on the
// engine's precise clock when there is one, else one reusable time.Timer.
type sleeper struct {
	clock *preciseClock
	w     *waiter
	t     *time.Timer
}

func newSleeper(c *preciseClock) *sleeper {
	if c != nil {
		return &sleeper{clock: c, w: &waiter{ch: make(chan struct{}, 1), idx: -1}}
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &sleeper{t: t}
}

// until waits until deadline; it returns false when ctx or stop ends first.
func (s *sleeper) until(ctx context.Context, stop <-chan struct{}, deadline time.Time) bool {
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
