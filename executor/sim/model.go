package sim

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/infercrane/infercrane/planner/perf"
)

// modelTiming is model mode: the performance model's continuous-batching
// scheduler (perf.Scheduler, the same one the planner runs in virtual time
// to estimate a lane) driven in real time. Each request waits the
// per-request overhead after it arrives, then joins the scheduler's queue;
// one loop runs steps back to back, each lasting perf.Lane.StepSeconds
// divided by Speedup on a timeline that does not drift, and at a step's
// end each request that sampled a token is woken.
type modelTiming struct {
	srv        perf.Lane
	maxWaiting int
	speedup    float64
	overhead   time.Duration
	metrics    *metrics
	clock      *preciseClock

	mu          sync.Mutex
	sched       *perf.Scheduler
	preemptions int // of sched, already counted in metrics

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func newModelTiming(o Options, m *metrics, clock *preciseClock) (*modelTiming, error) {
	srv, err := o.server()
	if err != nil {
		return nil, err
	}
	mt := &modelTiming{
		srv: srv, maxWaiting: o.MaxWaiting, speedup: o.Speedup, metrics: m,
		overhead: time.Duration(srv.RequestOverheadSeconds() / o.Speedup * float64(time.Second)),
		clock:    clock,
		sched:    perf.NewScheduler(srv.Engine),
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	return mt, nil
}

func (mt *modelTiming) admit(g *genState) error {
	// Per-request overhead (HTTP, tokenisation) before the engine sees it,
	// counted from the request's arrival as the estimator counts it.
	if d := time.Until(g.arrival.Add(mt.overhead)); d > 0 {
		sl := newSleeper(mt.clock)
		sl.until(context.Background(), mt.stop, g.arrival.Add(mt.overhead))
	}
	mt.mu.Lock()
	if mt.maxWaiting > 0 && mt.sched.Waiting() >= mt.maxWaiting {
		mt.mu.Unlock()
		return errQueueFull
	}
	g.seq = perf.Seq{Prompt: g.prompt, Output: g.output, Cached: g.cached, Data: g}
	mt.sched.Add(&g.seq)
	mt.mu.Unlock()
	mt.kick()
	return nil
}

func (mt *modelTiming) kick() {
	select {
	case mt.wake <- struct{}{}:
	default:
	}
}

func (mt *modelTiming) wait(ctx context.Context, stop <-chan struct{}, g *genState, k int, s *sleeper) bool {
	if k == g.stallAt && g.stallFor > 0 {
		if !s.until(ctx, stop, time.Now().Add(g.stallFor)) {
			return false
		}
	}
	for g.generated.Load() <= int64(k) {
		select {
		case <-g.wake:
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		}
	}
	return true
}

func (mt *modelTiming) release(g *genState) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	mt.sched.Abort(&g.seq)
}

func (mt *modelTiming) gauges() (int, int, float64) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	return mt.sched.Running(), mt.sched.Waiting(), mt.sched.KVUsage()
}

func (mt *modelTiming) close() {
	mt.once.Do(func() { close(mt.stop) })
	<-mt.done
}

// sampled wakes the stream of a request that sampled a token.
func sampled(q *perf.Seq) {
	g := q.Data.(*genState)
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
	sl := newSleeper(mt.clock)
	var st perf.Step
	decision := time.Duration(mt.srv.DecisionSeconds() / mt.speedup * float64(time.Second))
	var end time.Time // end of the previous step on the simulated timeline
	for {
		mt.mu.Lock()
		idle := mt.sched.Idle()
		mt.mu.Unlock()
		if idle {
			select {
			case <-mt.wake:
				end = time.Time{}
				continue
			case <-mt.stop:
				return
			}
		}
		now := time.Now()
		if end.IsZero() || now.Sub(end) > maxLag {
			if !end.IsZero() {
				mt.metrics.timelineResets.Add(1)
			}
			end = now
		}
		// The step's overhead comes first; requests admitted meanwhile
		// join it (perf.Lane.DecisionSeconds), as in the estimator.
		decide := end.Add(decision)
		if !sl.until(context.Background(), mt.stop, decide) {
			return
		}
		mt.mu.Lock()
		mt.sched.Schedule(&st)
		if n := mt.sched.Preemptions; n > mt.preemptions {
			mt.metrics.preemptions.Add(int64(n - mt.preemptions))
			mt.preemptions = n
		}
		mt.mu.Unlock()
		if len(st.Seqs) == 0 {
			end = time.Time{}
			continue
		}
		secs := mt.srv.StepSeconds(&st)/mt.speedup - decision.Seconds()
		end = decide.Add(time.Duration(math.Round(secs * float64(time.Second))))
		if !sl.until(context.Background(), mt.stop, end) {
			return
		}
		late := time.Since(end)
		mt.metrics.lateness.observe(late.Seconds())
		mt.metrics.steps.Add(1)
		if late > time.Millisecond {
			mt.metrics.lateSteps.Add(1)
		}
		mt.mu.Lock()
		mt.sched.Complete(&st, sampled)
		mt.mu.Unlock()
	}
}
