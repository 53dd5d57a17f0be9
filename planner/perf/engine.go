package perf

import "math"

// Engine is the serving engine's step loop around a Scheduler: when
// requests enter and which step each joins. Both clocks drive this one
// type, so they make the same decisions: the planner's virtual run
// (Lane.Run) in virtual time and the simulated engine (executor/sim) in
// real time. Times are seconds on the caller's clock.
//
// The decision rule, as measured on vLLM (README, "The performance
// model"):
//   - a request enters the engine Lane.RequestDelaySeconds after it was
//     sent (HTTP, chat template, tokenisation, and timing noise when the
//     assumptions give it);
//   - a step decides what it computes when it starts: requests that enter
//     while a step runs wait for the next one;
//   - a busy engine starts each step the moment the previous one ends;
//   - an idle engine starts a step the moment a request enters, with that
//     request alone: the front end hands requests to the engine one at a
//     time, so others sent at the same instant join the next step.
//
// The last two are what desynchronise a closed loop's streams: of c
// streams starting together the first is prefilled alone and the others
// one step later, and that offset persists.
//
// An Engine is not safe for concurrent use.
type Engine struct {
	lane    Lane
	sched   *Scheduler
	pending []arrival // in entry order
	end     float64   // when the last step ended
	// stuck is set when the last step found nothing it could schedule (the
	// KV cache cannot take the waiting requests and nothing runs): nothing
	// changes until a request arrives or leaves.
	stuck bool
	// frontFree is when the front end is next free to take a request
	// (Lane.FrontEndBusySeconds, Lane.FrontEndAdmitSeconds).
	frontFree float64
	// held are the requests a batching front end (Lane.FrontEndAdmitSeconds)
	// admitted in its current busy period: they enter together when it
	// ends (at frontFree), or at their own delay if that is later.
	held []arrival
	// costs remembers the steps' cost splits (stepCosts).
	costs stepCosts
}

// stepCosts remembers the last few cost splits (stepCost) of an engine's
// steps by their token and logit-sequence counts: a run's steps repeat a
// few of them (each prompt's prefill beside the same decodes, the decode
// phases), and a split does not depend on the KV cache or the attended
// pairs, which only its at takes. A new split comes from the lane's
// coster, so a step costs what Lane.StepSeconds gives.
type stepCosts struct {
	coster  stepCoster
	keys    [4][2]int
	costs   [4]stepCost
	n, next int
}

// get is the stepCost of tokens tokens of which logitSeqs produce logits.
func (c *stepCosts) get(tokens, logitSeqs int) stepCost {
	k := [2]int{tokens, logitSeqs}
	for i := range c.n {
		if c.keys[i] == k {
			return c.costs[i]
		}
	}
	sc := c.coster.cost(tokens, logitSeqs)
	i := c.next
	c.next = (c.next + 1) % len(c.keys)
	c.n = max(c.n, i+1)
	c.keys[i], c.costs[i] = k, sc
	return sc
}

// stepSeconds is Lane.StepSeconds of step st, with the split remembered.
func (e *Engine) stepSeconds(st *Step) float64 {
	tokens := st.PrefillTokens + st.DecodeSeqs
	if tokens <= 0 {
		return 0
	}
	return e.costs.get(tokens, len(st.Seqs)).at(st.KVTokens, st.Attended)
}

// arrival is a request on its way to the engine.
type arrival struct {
	q     *Seq
	enter float64
}

// NewEngine returns an idle engine for lane l whose clock starts at t0.
func NewEngine(l Lane, t0 float64) *Engine {
	e := new(Engine)
	e.reset(&l, t0)
	return e
}

// reset makes e an idle engine for lane l whose clock starts at t0, as
// NewEngine makes one, but keeps the memory of its scheduler and queues: a
// plan's virtual runs reuse one engine for thousands of phases, one after
// another, instead of allocating and growing one each.
func (e *Engine) reset(l *Lane, t0 float64) {
	sched := e.sched
	if sched == nil {
		sched = new(Scheduler)
	}
	sched.reset(l.Engine)
	*e = Engine{lane: *l, sched: sched, pending: e.pending[:0], held: e.held[:0], end: t0,
		costs: stepCosts{coster: l.Model.stepCoster(l.Hardware)}}
}

// SetPrefixCache gives the engine its prefix cache (PrefixCache: looked
// up at a request's first schedule, filled as steps complete).
func (e *Engine) SetPrefixCache(c PrefixCache) { e.sched.SetPrefixCache(c) }

// Scheduler returns the engine's scheduler (its queues and gauges).
func (e *Engine) Scheduler() *Scheduler { return e.sched }

// Arrive queues q, sent at time sent, and returns when it enters the
// engine.
func (e *Engine) Arrive(q *Seq, sent float64) float64 {
	a := arrival{q, sent + e.lane.RequestDelaySeconds(q.Index)}
	if adm := e.lane.FrontEndAdmitSeconds(); adm > 0 {
		// A batching front end: a request sent after its busy period
		// ended starts a new one; the period's requests enter when it
		// ends (release).
		if len(e.held) > 0 && sent >= e.frontFree {
			e.release()
		}
		idle := sent >= e.frontFree
		e.frontFree = math.Max(sent, e.frontFree) + adm
		q.state = seqNew
		e.stuck = false
		if idle && e.lane.Hardware.Assume.FrontEndIdleAlone {
			// The request that starts the busy period goes on at its
			// own delay; those sent during it are held.
			e.queue(a)
			return a.enter
		}
		e.held = append(e.held, a)
		return math.Max(a.enter, e.frontFree)
	}
	if busy := e.lane.FrontEndBusySeconds(q); busy > 0 {
		// One front-end process: a request sent while it works on
		// others waits for it.
		start := math.Max(sent, e.frontFree)
		a.enter = start + e.lane.RequestDelaySeconds(q.Index)
		e.frontFree = start + busy
	}
	q.state = seqNew
	e.queue(a)
	e.stuck = false
	return a.enter
}

// queue puts a among the requests on their way, in entry order.
func (e *Engine) queue(a arrival) {
	// Entries come in order but for ties and racing callers: insert from
	// the back.
	i := len(e.pending)
	for i > 0 && e.pending[i-1].enter > a.enter {
		i--
	}
	e.pending = append(e.pending, arrival{})
	copy(e.pending[i+1:], e.pending[i:])
	e.pending[i] = a
}

// release ends the batching front end's busy period: its requests are on
// their way, entering when it ended or at their own delay if later.
func (e *Engine) release() {
	for _, h := range e.held {
		h.enter = math.Max(h.enter, e.frontFree)
		e.queue(h)
	}
	e.held = e.held[:0]
}

// heldEntry is when the first held request can enter (+Inf if none).
func (e *Engine) heldEntry() float64 {
	if len(e.held) == 0 {
		return math.Inf(1)
	}
	first := math.Inf(1)
	for _, h := range e.held {
		first = math.Min(first, h.enter)
	}
	return math.Max(first, e.frontFree)
}

// Abort forgets q, on its way or in the scheduler, freeing its KV cache.
func (e *Engine) Abort(q *Seq) {
	for i, a := range e.held {
		if a.q == q {
			e.held = append(e.held[:i], e.held[i+1:]...)
			q.state = seqDone
			return
		}
	}
	for i, a := range e.pending {
		if a.q == q {
			e.pending = append(e.pending[:i], e.pending[i+1:]...)
			q.state = seqDone
			return
		}
	}
	if q.state == seqRunning {
		e.stuck = false
	}
	e.sched.Abort(q)
}

// Waiting counts the requests waiting: queued in the scheduler or on
// their way to it.
func (e *Engine) Waiting() int { return e.sched.Waiting() + len(e.pending) + len(e.held) }

// Idle reports whether nothing is running, waiting or on its way.
func (e *Engine) Idle() bool { return e.sched.Idle() && len(e.pending) == 0 && len(e.held) == 0 }

// NextEntry is when the first request on its way enters (+Inf if none).
func (e *Engine) NextEntry() float64 {
	next := e.heldEntry()
	if len(e.pending) > 0 {
		next = math.Min(next, e.pending[0].enter)
	}
	return next
}

// Next returns when the next step starts: when the last one ended if
// there is work, else when the next request enters; false when nothing can
// happen until a request arrives or leaves.
func (e *Engine) Next() (float64, bool) {
	if !e.stuck && !e.sched.Idle() {
		return e.end, true
	}
	next := e.NextEntry()
	if math.IsInf(next, 1) {
		return 0, false
	}
	return math.Max(e.end, next), true
}

// Begin starts a step at start (Next's time, or later when the caller's
// clock fell behind) and schedules it into st: it hands the engine the
// requests that entered by start (on an idle engine, at the instant the
// first entered, that one alone) and returns the step's duration. Zero
// means there was nothing it could schedule; Next then waits for a
// request to arrive or leave.
func (e *Engine) Begin(start float64, st *Step) float64 {
	if len(e.held) > 0 && start >= e.frontFree {
		e.release()
	}
	// A batching front end hands its busy period's requests over
	// together: they are not split.
	alone := e.sched.Idle() && len(e.pending) > 0 && e.pending[0].enter >= e.end && start == e.pending[0].enter &&
		e.lane.FrontEndAdmitSeconds() == 0
	n := 0
	for n < len(e.pending) && e.pending[n].enter <= start && (n == 0 || !alone) {
		e.pending[n].q.entered = e.pending[n].enter
		e.sched.Add(e.pending[n].q)
		n++
	}
	if n > 0 {
		e.pending = append(e.pending[:0], e.pending[n:]...)
		e.stuck = false
	}
	e.end = math.Max(e.end, start)
	e.sched.now = start
	e.sched.Schedule(st)
	if len(st.Seqs) == 0 {
		e.stuck = !e.sched.Idle()
		return 0
	}
	d := e.stepSeconds(st)
	e.end = start + d
	return d
}

// End completes the step Begin scheduled: each request whose scheduled
// tokens are all computed samples one (Scheduler.Complete).
func (e *Engine) End(st *Step, sampled func(q *Seq)) {
	n := e.sched.Running()
	e.sched.Complete(st, sampled)
	if e.sched.Running() < n {
		e.stuck = false
	}
}
