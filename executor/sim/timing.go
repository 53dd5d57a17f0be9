package sim

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/infercrane/infercrane/executor/clock"
	"github.com/infercrane/infercrane/planner/perf"
)

// genState is one generation request in flight.
type genState struct {
	id      uint64
	arrival time.Time
	// index is the request's number in its run (requestIndex).
	index  int
	prompt int // prompt tokens
	// cached is the leading prompt tokens the prefix cache served (set at
	// arrival in constant mode, at the first token in model mode), and
	// blocks the hashes of the full blocks of its prompt and output (model
	// mode with prefix caching).
	cached   atomic.Int64
	blocks   []uint64
	output   int // tokens this request will generate
	stallAt  int // token index before which a stall is inserted (-1: none)
	stallFor time.Duration

	// Model mode: the scheduler advances generated and signals wake.
	generated atomic.Int64
	wake      chan struct{}
	seq       perf.Seq // the scheduler's view (model mode)
}

// timing decides when each token of a request is due.
type timing interface {
	// admit registers g; it fails with errQueueFull when the engine cannot
	// take it.
	admit(g *genState) error
	// wait blocks until token k (0-based) of g is due and returns false when
	// ctx ends first (the engine's stop is merged into ctx: withStop).
	wait(ctx context.Context, g *genState, k int, s *clock.Sleeper) bool
	// ready reports whether token k of g is due by now without a wait
	// (what wait would return at once for).
	ready(g *genState, k int, now time.Time) bool
	// release forgets g, finished or abandoned.
	release(g *genState)
	// gauges reports the running and waiting requests and the KV-cache usage
	// fraction.
	gauges() (running, waiting int, kvUsage float64)
	// close stops background work.
	close()
}

// constantTiming gives every request the same TTFT and ITL.
type constantTiming struct {
	ttft, itl time.Duration
	running   atomic.Int64
}

func (c *constantTiming) admit(g *genState) error { c.running.Add(1); return nil }

func (c *constantTiming) release(g *genState) { c.running.Add(-1) }

func (c *constantTiming) wait(ctx context.Context, g *genState, k int, s *clock.Sleeper) bool {
	return s.Until(ctx, nil, c.due(g, k))
}

func (c *constantTiming) ready(g *genState, k int, now time.Time) bool {
	return !c.due(g, k).After(now)
}

// due is when token k of g is due.
func (c *constantTiming) due(g *genState, k int) time.Time {
	due := g.arrival.Add(c.ttft + time.Duration(k)*c.itl)
	if g.stallAt >= 0 && k >= g.stallAt {
		due = due.Add(g.stallFor)
	}
	return due
}

func (c *constantTiming) gauges() (int, int, float64) { return int(c.running.Load()), 0, 0 }

func (c *constantTiming) close() {}
