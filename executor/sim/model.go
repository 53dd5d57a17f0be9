package sim

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/infercrane/infercrane/executor/clock"
	"github.com/infercrane/infercrane/planner/perf"
)

// modelTiming is model mode: the performance model's engine (planner.Engine,
// its continuous-batching scheduler and the rule for which step a request
// joins, the same the planner runs in virtual time to estimate a lane)
// driven in real time. A request is handed to the engine when it arrives,
// stamped with its arrival; it enters the engine's queue the per-request
// overhead later on the engine's timeline. One loop runs the steps on a
// timeline that does not drift: each starts when the previous ends (or,
// on an idle engine, when the first request enters), takes the requests
// that entered by then, and lasts perf.Lane.StepSeconds divided by
// Speedup; at a step's end each request that sampled a token is woken.
// The timeline decides, not the order in which goroutines wake, so the
// engine joins requests to steps as the virtual run does.
type modelTiming struct {
	srv        perf.Lane
	maxWaiting int
	speedup    float64
	metrics    *metrics
	clock      *clock.Clock
	// epoch is the engine's time zero: timeline second v is real time
	// epoch + v / speedup.
	epoch time.Time

	mu          sync.Mutex
	eng         *perf.Engine
	stepEnd     float64 // the timeline second the step being completed ends
	prefix      bool    // the engine has a prefix cache
	preemptions int     // of the scheduler, already counted in metrics

	wake chan struct{}
	// ctx ends the loop: close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

func newModelTiming(o Options, m *metrics, clk *clock.Clock) (*modelTiming, error) {
	srv, err := o.server()
	if err != nil {
		return nil, err
	}
	mt := &modelTiming{
		srv: srv, maxWaiting: o.MaxWaiting, speedup: o.Speedup, metrics: m,
		clock: clk,
		epoch: time.Now(),
		eng:   perf.NewEngine(srv, 0),
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	mt.ctx, mt.cancel = context.WithCancel(context.Background())
	return mt, nil
}

// timeline converts real time t to the engine's timeline.
func (mt *modelTiming) timeline(t time.Time) float64 {
	return t.Sub(mt.epoch).Seconds() * mt.speedup
}

// real converts timeline second v to real time.
func (mt *modelTiming) real(v float64) time.Time {
	return mt.epoch.Add(time.Duration(math.Round(v / mt.speedup * float64(time.Second))))
}

func (mt *modelTiming) admit(g *genState) error {
	mt.mu.Lock()
	if mt.maxWaiting > 0 && mt.eng.Waiting() >= mt.maxWaiting {
		mt.mu.Unlock()
		return errQueueFull
	}
	g.seq = perf.Seq{Prompt: g.prompt, Output: g.output, Data: g, Index: g.index}
	// The per-request overhead (HTTP, tokenisation) counts from the
	// request's arrival, as the estimator counts it from the send.
	mt.eng.Arrive(&g.seq, mt.timeline(g.arrival))
	mt.mu.Unlock()
	mt.kick()
	return nil
}

// setPrefixCache gives the engine's step loop the prefix cache c.
func (mt *modelTiming) setPrefixCache(c *prefixCache) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	mt.eng.SetPrefixCache(stepCache{c})
	mt.prefix = true
}

func (mt *modelTiming) kick() {
	select {
	case mt.wake <- struct{}{}:
	default:
	}
}

func (mt *modelTiming) wait(ctx context.Context, g *genState, k int, s *clock.Sleeper) bool {
	if k == g.stallAt && g.stallFor > 0 {
		if !s.Until(ctx, nil, time.Now().Add(g.stallFor)) {
			return false
		}
	}
	for g.generated.Load() <= int64(k) {
		select {
		case <-g.wake:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

func (mt *modelTiming) ready(g *genState, k int, _ time.Time) bool {
	return !(k == g.stallAt && g.stallFor > 0) && g.generated.Load() > int64(k)
}

func (mt *modelTiming) release(g *genState) {
	mt.mu.Lock()
	mt.eng.Abort(&g.seq)
	mt.mu.Unlock()
	mt.kick() // freed blocks may let a waiting request in
}

func (mt *modelTiming) gauges() (int, int, float64) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	s := mt.eng.Scheduler()
	return s.Running(), s.Waiting(), s.KVUsage()
}

func (mt *modelTiming) close() {
	mt.cancel()
	<-mt.done
}

// sampled wakes the stream of a request that sampled a token; at its
// first token it records what the prefix cache served it at its first
// schedule, and its time queued and prefilling (in real seconds).
func (mt *modelTiming) sampled(q *perf.Seq) {
	g := q.Data.(*genState)
	if q.Sampled == 1 {
		if mt.prefix {
			mt.metrics.prefixLooked(g, q.Cached)
		}
		if started, ok := q.Started(); ok {
			mt.metrics.queue.observe((started - q.Entered()) / mt.speedup)
			mt.metrics.prefill.observe((mt.stepEnd - started) / mt.speedup)
		}
	}
	g.generated.Store(int64(q.Sampled))
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// maxLag is how far behind its timeline the loop may fall (an overloaded
// machine) before it restarts the timeline from now.
const maxLag = 50 * time.Millisecond

func (mt *modelTiming) loop() {
	defer close(mt.done)
	sl := clock.NewSleeper(mt.clock)
	var st perf.Step
	sampled := mt.sampled
	for {
		mt.mu.Lock()
		start, ok := mt.eng.Next()
		entry := mt.eng.Scheduler().Idle()
		mt.mu.Unlock()
		if !ok {
			select {
			case <-mt.wake:
				continue
			case <-mt.ctx.Done():
				return
			}
		}
		// Requests arrive an overhead before they enter, so by the time
		// a busy engine's step starts it knows every request that entered
		// by then. An idle engine waits for the next entry, and a request
		// arriving meanwhile may enter sooner (its jitter drew a shorter
		// delay): the wait ends on its arrival, to start over.
		var arrived <-chan struct{}
		if entry {
			arrived = mt.wake
		}
		due := mt.real(start)
		if !sl.Until(mt.ctx, arrived, due) {
			if mt.ctx.Err() != nil {
				return
			}
			continue
		}
		if now := time.Now(); now.Sub(due) > maxLag {
			mt.metrics.timelineResets.Add(1)
			start = mt.timeline(now)
		}
		mt.mu.Lock()
		secs := mt.eng.Begin(start, &st)
		if n := mt.eng.Scheduler().Preemptions; n > mt.preemptions {
			mt.metrics.preemptions.Add(int64(n - mt.preemptions))
			mt.preemptions = n
		}
		mt.mu.Unlock()
		if secs == 0 {
			continue
		}
		end := mt.real(start + secs)
		if !sl.Until(mt.ctx, nil, end) {
			return
		}
		late := time.Since(end)
		mt.metrics.lateness.observe(late.Seconds())
		mt.metrics.steps.Add(1)
		if late > time.Millisecond {
			mt.metrics.lateSteps.Add(1)
		}
		mt.mu.Lock()
		mt.stepEnd = start + secs
		mt.eng.End(&st, sampled)
		mt.mu.Unlock()
	}
}
