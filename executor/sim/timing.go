package sim

import (
	"context"
	"sync/atomic"
	"time"
)

// genState is one generation request in flight.
type genState struct {
	id       uint64
	arrival  time.Time
	prompt   int // prompt tokens
	output   int // tokens this request will generate
	stallAt  int // token index before which a stall is inserted (-1: none)
	stallFor time.Duration

	// Model mode: the scheduler advances generated and signals wake.
	generated atomic.Int64
	wake      chan struct{}
	aborted   atomic.Bool
}

// timing decides when each token of a request is due.
type timing interface {
	// admit registers g; it fails with errQueueFull when the engine cannot
	// take it.
	admit(g *genState) error
	// wait blocks until token k (0-based) of g is due and returns false when
	// ctx ends or stop closes first.
	wait(ctx context.Context, stop <-chan struct{}, g *genState, k int, t *time.Timer) bool
	// release forgets g, finished or abandoned.
	release(g *genState)
	// gauges reports the running and waiting requests and the KV-cache usage
	// fraction.
	gauges() (running, waiting int, kvUsage float64)
	// close stops background work.
	close()
}

// sleepUntil waits on t until deadline; it returns false when ctx or stop
// ends first. One timer serves a whole stream.
func sleepUntil(ctx context.Context, stop <-chan struct{}, t *time.Timer, deadline time.Time) bool {
	d := time.Until(deadline)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t.Reset(d)
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-stop:
	}
	t.Stop()
	return false
}

// constantTiming gives every request the same TTFT and ITL.
type constantTiming struct {
	ttft, itl time.Duration
	running   atomic.Int64
}

func (c *constantTiming) admit(g *genState) error { c.running.Add(1); return nil }

func (c *constantTiming) release(g *genState) { c.running.Add(-1) }

func (c *constantTiming) wait(ctx context.Context, stop <-chan struct{}, g *genState, k int, t *time.Timer) bool {
	due := g.arrival.Add(c.ttft + time.Duration(k)*c.itl)
	if g.stallAt >= 0 && k >= g.stallAt {
		due = due.Add(g.stallFor)
	}
	return sleepUntil(ctx, stop, t, due)
}

func (c *constantTiming) gauges() (int, int, float64) { return int(c.running.Load()), 0, 0 }

func (c *constantTiming) close() {}
