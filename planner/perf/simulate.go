package perf

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/infercrane/infercrane/planner/load"
)

// Load is the load generator's side of one run, as the load generator
// produces it: a closed loop of Concurrency streams (stream w starting at
// RampUpMs x w / Concurrency, each sending its next request TurnaroundMs
// after the previous one completes), or an open loop with the seeded arrival
// schedule of load.Arrivals (RequestRate, Arrival, Burstiness, Seed), at most
// Concurrency in flight when set. Warmup requests run first as a closed
// loop and are left out of the statistics.
type Load struct {
	InputTokens  int
	OutputTokens int
	Concurrency  int
	RequestRate  float64
	Arrival      string
	Burstiness   float64
	Requests     int
	Warmup       int
	RampUpMs     float64
	// TurnaroundMs is the client's turnaround: the time from a response's
	// last token to the next send it frees (a closed-loop stream's next
	// request, an open loop's slot under its cap). Zero sends at once; the
	// load generator takes 0.1-0.5 ms.
	TurnaroundMs float64
	Seed         int64
	// CachedTokens is each request's prompt prefix found in the prefix
	// cache (with prefix caching on); the hook for prefix-reuse workloads.
	CachedTokens int
	// Curve and CurveStepSeconds make the open loop's rate vary over time
	// (load.Arrivals.Modulate); nil keeps it constant.
	Curve            []float64
	CurveStepSeconds float64
	// Sizes, when set, are the measured requests' own sizes in send order
	// (drawn lengths, prefix groups), cycled if shorter than Requests, and
	// WarmupSizes the warmup requests'; they replace InputTokens,
	// OutputTokens and CachedTokens.
	Sizes, WarmupSizes []RequestSize
	// Sends, when set, are the measured phase's send offsets in seconds
	// from its start, one per request in send order, in place of the
	// load.Arrivals schedule: an open loop replayed at given times (a trace, or
	// the sends a run actually made). The concurrency cap still applies.
	Sends []float64
}

// RequestSize is one request's prompt and output tokens and the prompt
// prefix the prefix cache holds for it when it arrives.
type RequestSize struct {
	Input, Output, Cached int
	// Prefix names the token stream the request's first PrefixTokens
	// tokens belong to (0: none): a prefix group's shared prefix, or a
	// session's conversation (a turn's prompt and answer, which the next
	// turn's prompt begins with). With prefix caching on and any request
	// naming a stream, the virtual run keeps a prefix cache by the
	// engine's timed rule (PrefixCache, PlannedCache) and Cached is
	// ignored: a request is served the stream's blocks that steps
	// completed before its first schedule.
	Prefix       uint64
	PrefixTokens int
	// FollowUp marks a later turn of a multi-turn session: in a closed
	// loop it is sent on the stream of the request before it, once that
	// one's answer is complete, as the load generator sends sessions (a
	// stream takes a whole session, turn after turn). Only Sizes and
	// WarmupSizes carry it.
	FollowUp bool
}

// size returns request i's size.
func (l *Load) size(i int) RequestSize {
	if len(l.Sizes) > 0 {
		return l.Sizes[i%len(l.Sizes)]
	}
	return RequestSize{Input: l.InputTokens, Output: l.OutputTokens, Cached: l.CachedTokens}
}

// Dist summarises one metric over a run, in milliseconds.
type Dist struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
}

// RunStats are one run's figures with the load generator's definitions:
// ttft is send to first token, latency send to last token, tpot (latency -
// ttft) / (output - 1), itl every gap between successive tokens pooled over
// requests, throughputs over the window from the first send to the last
// completion.
type RunStats struct {
	TTFT, TPOT, ITL, Latency Dist
	Succeeded                int
	OutputTokens             int
	WindowSeconds            float64
	RequestThroughput        float64
	OutputTokenThroughput    float64
	// DurationSeconds is the whole run, warmup included; WarmupEnd is
	// the time the warmup ended, WarmupPreemptions its part of Preemptions.
	DurationSeconds   float64
	WarmupEnd         float64
	WarmupPreemptions int
	Preemptions       int
	Steps             int
	// Stepped counts the steps scheduled one by one; the others (Steps -
	// Stepped) were skipped through in closed form. The estimate's work
	// grows with Stepped.
	Stepped int
	// PromptTokens sums the measured requests' prompts and CachedTokens
	// the part the prefix cache served them.
	PromptTokens, CachedTokens int
	// TTFTParts are the measured requests' mean TTFT and its parts.
	TTFTParts TTFTParts
}

// TTFTParts split the mean time to first token into where a request
// spends it: on its way to the engine (the front end: HTTP, chat
// template, tokenisation, and the wait for a busy front end), queued in
// the engine until a step first schedules it (a batch slot, KV cache or
// the token budget), and from then to its first token (its prefill,
// beside the other requests' work in the same steps, and any preemption
// after it started). The three add up to MeanMs.
type TTFTParts struct {
	MeanMs     float64 `json:"ttft_mean_ms"`
	FrontEndMs float64 `json:"front_end_ms"`
	QueuedMs   float64 `json:"queued_ms"`
	PrefillMs  float64 `json:"prefill_ms"`
}

// The names of the TTFT's parts a server measures, as the report compares
// them with TTFTParts (Estimate.Metric): the mean time queued in the
// engine and prefilling.
const (
	QueuedMeanMetric  = "queued_mean_ms"
	PrefillMeanMetric = "prefill_mean_ms"
)

// IsTTFTPart reports whether metric names a part of the TTFT
// (QueuedMeanMetric, PrefillMeanMetric).
func IsTTFTPart(metric string) bool { return metric == QueuedMeanMetric || metric == PrefillMeanMetric }

// vreq is one request of a virtual run.
type vreq struct {
	seq               Seq
	sent, first, prev float64
	last              float64
	worker            int // closed loop: the stream that sent it
	index             int
	size              RequestSize
	own               uint64 // its own prefix-cache stream
}

func (r *vreq) prefix() (uint64, int, uint64) { return r.size.Prefix, r.size.PrefixTokens, r.own }

// prefixCache returns the virtual run's prefix cache: nil unless prefix
// caching is on and a request names a prefix stream.
func (s Lane) prefixCache(l Load) *PlannedCache {
	if !s.Engine.PrefixCaching {
		return nil
	}
	for _, z := range append(l.Sizes[:len(l.Sizes):len(l.Sizes)], l.WarmupSizes...) {
		if z.Prefix != 0 {
			return NewPlannedCache(s.Engine)
		}
	}
	return nil
}

// weighted is one ITL value with its multiplicity.
type weighted struct {
	v float64
	n int
}

// itlHist pools inter-token gaps in logarithmic bins 0.1% wide: a decode
// phase's gaps are all distinct (the KV cache grows every step) but a
// percentile of the bins is within 0.05% of the exact one. A phase's
// gaps fill a few adjacent bins (its steps' durations), so the bins are
// counted in a slice from the lowest, lo (the zero value is empty); a bin
// more than maxDenseBins from the others goes to the map far.
type itlHist struct {
	lo     int32
	counts []int
	far    map[int32]int
}

// maxDenseBins bounds the slice of an itlHist: 16,384 bins span
// durations within a factor of 1.3e7 of each other.
const maxDenseBins = 1 << 14

const binWidth = 0.001

var logBin = math.Log1p(binWidth)

func binOf(seconds float64) int32 {
	if seconds <= 1e-12 {
		seconds = 1e-12
	}
	return int32(math.Floor(math.Log(seconds) / logBin))
}

func (h *itlHist) add(seconds float64, n int) { h.addBin(binOf(seconds), n) }

// addBin adds n gaps to bin b.
func (h *itlHist) addBin(b int32, n int) {
	size := int64(len(h.counts))
	i := int64(b) - int64(h.lo)
	switch {
	case size == 0:
		h.lo = b
		h.counts = append(h.counts, n)
	case i >= 0 && i < size:
		h.counts[i] += n
	case i >= size && i < maxDenseBins:
		h.counts = slices.Grow(h.counts, int(i+1-size))[:i+1]
		clear(h.counts[size:])
		h.counts[i] = n
	case i < 0 && size-i <= maxDenseBins:
		// Room below for as many bins again as there are, at most the
		// bound: a phase whose gaps fall from bin to bin moves its slice
		// a few times, not once a bin.
		shift := min(max(-i, size), maxDenseBins-size)
		h.counts = slices.Grow(h.counts, int(shift))[:size+shift]
		copy(h.counts[shift:], h.counts[:size])
		clear(h.counts[:shift])
		h.lo -= int32(shift)
		h.counts[i+shift] = n
	default:
		if h.far == nil {
			h.far = map[int32]int{}
		}
		h.far[b] += n
	}
}

// reset empties the histogram, keeping its memory.
func (h *itlHist) reset() {
	h.counts = h.counts[:0]
	clear(h.far)
}

// weights appends the bins to out as values (ms, at each bin's centre)
// with their counts.
func (h *itlHist) weights(out []weighted) []weighted {
	for i, n := range h.counts {
		if n != 0 {
			out = append(out, weighted{binCentreMs(h.lo + int32(i)), n})
		}
	}
	for b, n := range h.far {
		out = append(out, weighted{binCentreMs(b), n})
	}
	return out
}

// binCentreMs is the value of bin b's gaps, in milliseconds.
func binCentreMs(b int32) float64 { return 1000 * math.Exp((float64(b)+0.5)*logBin) }

// maxSteps bounds a virtual run (a safeguard against a load that never
// finishes).
const maxSteps = 50_000_000

// Run simulates one run of l on the server in virtual time and returns its
// statistics. It is deterministic: the same server and load give the same
// figures.
func (s Lane) Run(l Load) (RunStats, error) {
	for _, z := range append(append([]RequestSize{l.size(0)}, l.Sizes...), l.WarmupSizes...) {
		if z.Input < 1 || z.Output < 1 {
			return RunStats{}, fmt.Errorf("input and output tokens must be at least 1 (got %d and %d)", z.Input, z.Output)
		}
	}
	if l.RequestRate <= 0 && len(l.Sends) == 0 && l.Concurrency < 1 {
		return RunStats{}, errors.New("set a concurrency (closed loop) or a request rate (open loop)")
	}
	var st RunStats
	t := 0.0
	cache := s.prefixCache(l)
	if l.Warmup > 0 {
		w := l
		w.Requests, w.RequestRate, w.RampUpMs, w.Sizes, w.Sends = l.Warmup, 0, 0, l.WarmupSizes, nil
		if w.Concurrency < 1 {
			w.Concurrency = min(l.Warmup, 16)
		}
		ws, end, err := s.phase(w, 0, 0, cache)
		if err != nil {
			return st, err
		}
		st.Preemptions, st.Steps, st.Stepped = ws.Preemptions, ws.Steps, ws.Stepped
		t = end
	}
	ms, end, err := s.phase(l, t, l.Warmup, cache)
	if err != nil {
		return st, err
	}
	ms.Preemptions += st.Preemptions
	ms.Steps += st.Steps
	ms.Stepped += st.Stepped
	ms.DurationSeconds, ms.WarmupEnd, ms.WarmupPreemptions = end, t, st.Preemptions
	return ms, nil
}

// phase runs n = l.Requests requests starting at time t0 on an idle engine
// and returns their statistics and the time the last one completed; the
// load generator numbers them from first (Seq.Index); cache, when set, is
// the engine's prefix cache, kept from phase to phase.
func (s *Lane) phase(l Load, t0 float64, number int, cache *PlannedCache) (RunStats, float64, error) {
	var out RunStats
	if l.Requests <= 0 {
		return out, t0, nil
	}
	mem := phaseMemory.Get().(*phaseScratch)
	defer phaseMemory.Put(mem)
	v := &mem.run
	*v = virtualRun{l: l, eng: v.eng, step: v.step, cache: cache, number: number, n: l.Requests, reqs: mem.requests(l.Requests),
		itl: &mem.itl, t: t0, lastSend: t0, sessions: newSessionQueue(l, l.Requests), open: l.RequestRate > 0 || len(l.Sends) > 0}
	v.eng.reset(s, t0)
	if cache != nil {
		v.eng.SetPrefixCache(cache)
	}
	var err error
	if v.next, err = openLoopSends(l, t0, v.n); err != nil {
		return out, t0, err
	}
	v.start(t0)
	if err := s.steps(v, &out); err != nil {
		return out, v.t, err
	}
	out.Preemptions = v.eng.Scheduler().Preemptions
	v.flushGaps()
	out, last := s.phaseStats(out, v.reqs, mem)
	v.release()
	return out, last, nil
}

// virtualRun is a phase in progress: the engine, the load's requests and
// what decides when the next one is sent (the open loop's clock and its
// concurrency cap, the closed loop's streams, the sessions' turns).
type virtualRun struct {
	l Load
	// eng is the run's engine and step the step it schedules, held here
	// (in the phase's pooled memory) with their slices from phase to
	// phase rather than allocated and grown for each (Engine.reset).
	eng    Engine
	step   Step
	cache  *PlannedCache
	number int // the load generator's number of the first request
	reqs   []vreq
	// n requests in all, sent of them sent, done of them complete.
	n, sent, done int
	sessions      *sessionQueue // nil: no sessions in a closed loop
	open          bool
	// next returns the open loop's next scheduled send; nextSched is the
	// next request's, lastSend the time of the last one sent.
	next                func() float64
	nextSched, lastSend float64
	// inflight are the open loop's requests in flight; blocked is true
	// when the concurrency cap held one back.
	inflight int
	blocked  bool
	// itl is the histogram of inter-token gaps; same the run of equal
	// gaps not yet added to it.
	itl  *itlHist
	same struct {
		gap float64
		n   int
	}
	t float64 // the engine's clock
}

// release empties v for the pool once its phase is over: it keeps no
// lane, load or cache alive, only the memory of its engine's scheduler and
// queues and of its step.
func (v *virtualRun) release() {
	if sched := v.eng.sched; sched != nil {
		sched.reset(EngineConfig{})
	}
	*v = virtualRun{eng: Engine{sched: v.eng.sched, pending: v.eng.pending[:0], held: v.eng.held[:0]}, step: Step{Seqs: v.step.Seqs[:0]}}
}

// sendAt sends request i; requests go out in index order except in a
// closed loop of sessions, where each stream sends its session's turns.
func (v *virtualRun) sendAt(i int, at float64, worker int) {
	r := &v.reqs[i]
	r.index, r.sent, r.worker = i, at, worker
	z := v.l.size(i)
	r.size = z
	if v.cache != nil {
		r.own, z.Cached = v.cache.ownStream(), 0
	}
	r.seq = Seq{Prompt: z.Input, Output: z.Output, Cached: z.Cached, Data: r, Index: v.number + i}
	v.sent++
	v.eng.Arrive(&r.seq, at)
}

// send sends the next request in index order.
func (v *virtualRun) send(at float64, worker int) { v.sendAt(v.sent, at, worker) }

// start sends the first requests at t0: the open loop's first slots, each
// closed-loop stream's first request (or session turn), ramped up over
// the load's RampUpMs.
func (v *virtualRun) start(t0 float64) {
	l := v.l
	switch {
	case v.open:
		v.nextSched = v.next()
		v.dispatch(t0)
	case v.sessions != nil:
		for w := 0; w < l.Concurrency; w++ {
			if i, ok := v.sessions.claim(); ok {
				v.sendAt(i, t0+l.RampUpMs/1000*float64(w)/float64(l.Concurrency), w)
			}
		}
	default:
		for w := 0; w < min(l.Concurrency, v.n); w++ {
			v.send(t0+l.RampUpMs/1000*float64(w)/float64(l.Concurrency), w)
		}
	}
}

// dispatch sends open-loop requests whose slot is free at time now.
func (v *virtualRun) dispatch(now float64) {
	for v.sent < v.n {
		if v.l.Concurrency > 0 && v.inflight >= v.l.Concurrency {
			v.blocked = true
			return
		}
		at := math.Max(v.nextSched, math.Max(v.lastSend, now))
		v.send(at, 0)
		v.lastSend = at
		v.inflight++
		if v.sent < v.n {
			v.nextSched = v.next()
		}
	}
	v.blocked = false
}

// sampled records a token of q at the engine's clock; the request's last
// one completes it and sends what follows it.
func (v *virtualRun) sampled(q *Seq) {
	r := q.Data.(*vreq)
	if q.Sampled == 1 {
		r.first = v.t
	} else {
		v.gap(v.t - r.prev)
	}
	r.prev = v.t
	if q.Sampled < q.Output {
		return
	}
	r.last = v.t
	v.done++
	v.followUp(r)
}

// gap adds an inter-token gap to the histogram. The requests of a step
// mostly share their gap (the step before was theirs too): a run of equal
// gaps goes into the histogram at once, which is a quarter of a fit's
// time saved on binning the same float (the counts are integers: the same
// histogram).
func (v *virtualRun) gap(g float64) {
	if v.same.n > 0 && g == v.same.gap {
		v.same.n++
		return
	}
	v.flushGaps()
	v.same.gap, v.same.n = g, 1
}

// flushGaps adds the run of equal gaps to the histogram.
func (v *virtualRun) flushGaps() {
	if v.same.n > 0 {
		v.itl.add(v.same.gap, v.same.n)
		v.same.n = 0
	}
}

// followUp sends what follows completed request r after the load's
// turnaround: a request whose slot it freed (open loop), the next turn of
// its session, or the next request of its stream (closed loop).
func (v *virtualRun) followUp(r *vreq) {
	at := v.t + v.l.TurnaroundMs/1000
	switch {
	case v.open:
		v.inflight--
		if v.blocked {
			v.dispatch(at)
		}
	case v.sessions != nil:
		if i, ok := v.sessions.next(r.index); ok {
			v.sendAt(i, at, r.worker)
		}
	case v.sent < v.n:
		v.send(at, r.worker)
	}
}

// steps runs the engine's steps until every request of v is complete,
// counting them in out.
func (s *Lane) steps(v *virtualRun, out *RunStats) error {
	step := &v.step
	sampled := v.sampled
	sched := v.eng.Scheduler()
	for v.done < v.n {
		if out.Steps > maxSteps {
			return fmt.Errorf("the virtual run did not finish within %d steps", maxSteps)
		}
		start, ok := v.eng.Next()
		if !ok {
			if sched.Idle() {
				return fmt.Errorf("the virtual run stalled with %d of %d requests done", v.done, v.n)
			}
			return fmt.Errorf("the engine cannot schedule the waiting requests (KV cache of %d blocks, budget %d tokens)", s.Engine.KVBlocks, s.Engine.MaxBatchedTokens)
		}
		v.t = start
		d := v.eng.Begin(v.t, step)
		if d == 0 {
			continue
		}
		v.t += d
		out.Steps++
		out.Stepped++
		v.eng.End(step, sampled)
		v.t = s.skipDecodes(&v.eng, v.t, v.itl, &out.Steps)
	}
	return nil
}

// phaseScratch is the memory of a virtual phase, which nothing keeps once
// it has returned its statistics: the run itself, the requests (the
// engine's sequences point into them), the histogram of their gaps and the figures
// summarised. A plan estimates thousands of lanes one after another, and
// reusing it spares allocating and collecting a few KiB a phase.
type phaseScratch struct {
	run             virtualRun
	reqs            []vreq
	itl             itlHist
	weights         []weighted
	ttft, tpot, lat []float64
}

var phaseMemory = sync.Pool{New: func() any { return new(phaseScratch) }}

// requests returns n zero requests, and empties the histogram.
func (m *phaseScratch) requests(n int) []vreq {
	if cap(m.reqs) < n {
		m.reqs = make([]vreq, n)
	}
	m.reqs = m.reqs[:n]
	clear(m.reqs)
	m.itl.reset()
	return m.reqs
}

// ttftParts is the requests' mean TTFT split into its parts (TTFTParts).
func ttftParts(reqs []vreq) TTFTParts {
	var p TTFTParts
	if len(reqs) == 0 {
		return p
	}
	for i := range reqs {
		r := &reqs[i]
		p.FrontEndMs += r.seq.entered - r.sent
		p.QueuedMs += r.seq.started - r.seq.entered
		p.PrefillMs += r.first - r.seq.started
	}
	k := 1000 / float64(len(reqs))
	p.FrontEndMs, p.QueuedMs, p.PrefillMs = k*p.FrontEndMs, k*p.QueuedMs, k*p.PrefillMs
	p.MeanMs = p.FrontEndMs + p.QueuedMs + p.PrefillMs
	return p
}

// floats returns a zero-length buf with room for n values.
func floats(buf []float64, n int) []float64 {
	if cap(buf) < n {
		return make([]float64, 0, n)
	}
	return buf[:0]
}

// phaseStats completes a phase's statistics from its requests and the
// histogram of their inter-token gaps (in mem, whose buffers it uses);
// last is when the last one completed.
func (s *Lane) phaseStats(out RunStats, reqs []vreq, mem *phaseScratch) (RunStats, float64) {
	n := len(reqs)
	mem.ttft, mem.tpot, mem.lat = floats(mem.ttft, n)[:n], floats(mem.tpot, n), floats(mem.lat, n)[:n]
	ttft, tpot, lat := mem.ttft, mem.tpot, mem.lat
	first, last := math.Inf(1), math.Inf(-1)
	for i := range reqs {
		r := &reqs[i]
		ttft[i] = (r.first - r.sent) * 1000
		lat[i] = (r.last - r.sent) * 1000
		if o := r.seq.Output; o >= 2 {
			tpot = append(tpot, (r.last-r.first)*1000/float64(o-1))
		}
		first, last = math.Min(first, r.sent), math.Max(last, r.last)
	}
	out.TTFT, out.TPOT, out.Latency, out.ITL = NewDist(ttft), NewDist(tpot), NewDist(lat), weightedDist(mem.weightsOf())
	out.TTFTParts = ttftParts(reqs)
	out.Succeeded = n
	for i := range reqs {
		out.OutputTokens += reqs[i].seq.Output
		out.PromptTokens += reqs[i].seq.Prompt
		if s.Engine.PrefixCaching {
			out.CachedTokens += load.ServableTokens(reqs[i].seq.Cached, reqs[i].seq.Prompt, s.Engine.blockSize())
		}
	}
	if w := last - first; w > 0 {
		out.WindowSeconds = w
		out.RequestThroughput = float64(n) / w
		out.OutputTokenThroughput = float64(out.OutputTokens) / w
	}
	return out, last
}

// weightsOf returns the histogram's bins as weighted values, in a buffer
// of m's.
func (m *phaseScratch) weightsOf() []weighted {
	m.weights = m.itl.weights(m.weights[:0])
	return m.weights
}

// openLoopSends returns an open loop's clock of scheduled sends, from t0:
// the load's own send times, else its arrival process (nil in a closed
// loop).
func openLoopSends(l Load, t0 float64, n int) (func() float64, error) {
	switch {
	case len(l.Sends) > 0:
		if len(l.Sends) < n {
			return nil, fmt.Errorf("%d send times for %d requests", len(l.Sends), n)
		}
		sends, k := l.Sends, 0 // the closure holds the times, not the whole load
		return func() float64 { k++; return t0 + sends[k-1] }, nil
	case l.RequestRate > 0:
		arr, err := load.NewArrivals(l.RequestRate, l.Arrival, l.Burstiness, l.Seed)
		if err == nil {
			err = arr.Modulate(l.Curve, l.CurveStepSeconds)
		}
		if err != nil {
			return nil, err
		}
		return func() float64 { return t0 + float64(arr.Next())/1e9 }, nil
	}
	return nil, nil
}

// skipDecodes runs the pure decode steps that follow (when every running
// request decodes and nothing waits) up to the step before a request
// finishes, the cache needs a preemption or a request on its way enters,
// in closed form instead of one by one: the same steps and times as
// stepping (up to rounding), and the same gaps (every running request
// sampled its last token at t, so each gap is its step's duration).
func (s *Lane) skipDecodes(eng *Engine, t float64, itl *itlHist, steps *int) float64 {
	sched := eng.sched
	for _, q := range sched.running {
		// Without chunked prefill a step that prefills decodes nobody: the
		// running requests' next gap is then longer than its step.
		if q.Data.(*vreq).prev != t {
			return t
		}
	}
	b, kv, grow, k := sched.decodeRun(maxSteps)
	if k == 0 || !skipDecodePhases {
		return t
	}
	line := decodeLineOf(eng.costs.get(b, b), kv, grow)
	if next := eng.NextEntry(); !math.IsInf(next, 1) {
		// Only steps that start before the next request enters (one that
		// enters at a step's start joins it).
		if t >= next {
			return t
		}
		lo, hi := 1, k // step lo-1 starts before next; find the last such
		if t+line.sum(k-1) >= next {
			for hi-lo > 1 {
				mid := (lo + hi) / 2
				if t+line.sum(mid-1) < next {
					lo = mid
				} else {
					hi = mid
				}
			}
			k = lo
		}
	}
	line.gaps(k, b, itl)
	t += line.sum(k)
	*steps += k
	sched.advanceDecode(k, func(q *Seq) { q.Data.(*vreq).prev = t })
	eng.end = t
	return t
}

// decodeLine is the duration of step j of a pure decode phase,
// max(v0 + j slope, floor): what does not change along the phase (the
// matrix multiplies of its b tokens, the elementwise kernels, the
// all-reduces and the step overhead) plus the attention kernel over a KV
// cache of kv tokens growing by grow a step (a decode attends to its
// whole KV cache: Step.Attended is KVTokens), whose time a cached token
// is the larger of its compute and of reading it, or their sum on a
// serial processor (stepCost.at); or the CPU's work beside the GPU's
// (async scheduling's share of the engine's work for the b sequences, an
// eager step's launches) and the step overhead when that takes longer
// (floor: stepCost.withOverheads). It never falls.
type decodeLine struct{ v0, slope, floor float64 }

func decodeLineOf(c stepCost, kv, grow float64) decodeLine {
	perToken := c.attention(1, 1)
	return decodeLine{v0: c.gemm() + c.elementwise + c.comm + c.fixed + kv*perToken, slope: grow * perToken,
		floor: c.beside() + c.fixed}
}

func (l decodeLine) at(j int) float64 { return math.Max(l.v0+float64(j)*l.slope, l.floor) }

// flat is how many of steps 0 to j-1 last floor: those whose line lies
// below it.
func (l decodeLine) flat(j int) int {
	switch {
	case l.floor <= l.v0:
		return 0
	case l.slope <= 0:
		return j
	}
	if f := math.Ceil((l.floor - l.v0) / l.slope); f < float64(j) {
		return int(f)
	}
	return j
}

// sum is the duration of steps 0 to j-1.
func (l decodeLine) sum(j int) float64 {
	x, f := float64(j), float64(l.flat(j))
	return f*l.floor + (x-f)*l.v0 + l.slope*(x*(x-1)-f*(f-1))/2
}

// gaps adds steps 0 to k-1, each a gap of b requests, to the histogram,
// a bin at a time.
func (l decodeLine) gaps(k, b int, itl *itlHist) {
	f := l.flat(k)
	if f > 0 {
		itl.addBin(binOf(l.floor), f*b)
	}
	var bin int32
	upper := math.Inf(-1)
	for j := f; j < k; {
		v := l.at(j)
		if v >= upper || v < upper/(1+binWidth) {
			bin = binOf(v)
			upper = math.Exp(float64(bin+1) * logBin)
		}
		nj := k
		if l.slope > 0 {
			nj = int(math.Min(float64(k), math.Max(float64(j+1), math.Ceil((upper-l.v0)/l.slope))))
		}
		itl.addBin(bin, (nj-j)*b)
		j = nj
		if l.slope > 0 {
			bin++
			upper *= 1 + binWidth
		} else {
			upper = math.Inf(-1)
		}
	}
}

// skipDecodePhases is off only in the test that checks skipping against
// stepping.
var skipDecodePhases = true

// NewDist summarises values (sorted in place) with the load generator's
// percentiles.
func NewDist(values []float64) Dist {
	if len(values) == 0 {
		return Dist{}
	}
	sort.Float64s(values)
	var sum float64
	for _, v := range values {
		sum += v
	}
	return Dist{Count: len(values), Mean: sum / float64(len(values)),
		P50: load.Percentile(values, 50), P90: load.Percentile(values, 90), P95: load.Percentile(values, 95), P99: load.Percentile(values, 99)}
}

// weightedDist is NewDist of values given with multiplicities.
func weightedDist(v []weighted) Dist {
	slices.SortFunc(v, func(a, b weighted) int { return cmp.Compare(a.v, b.v) }) // distinct bins: one order
	n, sum := 0, 0.0
	for _, w := range v {
		n += w.n
		sum += w.v * float64(w.n)
	}
	if n == 0 {
		return Dist{}
	}
	at := func(k int) float64 { // the k-th smallest value, 0-based
		for _, w := range v {
			if k < w.n {
				return w.v
			}
			k -= w.n
		}
		return v[len(v)-1].v
	}
	pct := func(q float64) float64 {
		pos := q / 100 * float64(n-1)
		lo := int(math.Floor(pos))
		if lo >= n-1 {
			return at(n - 1)
		}
		a, b := at(lo), at(lo+1)
		return a + (pos-float64(lo))*(b-a)
	}
	return Dist{Count: n, Mean: sum / float64(n), P50: pct(50), P90: pct(90), P95: pct(95), P99: pct(99)}
}

// sessionQueue hands a closed loop's streams whole sessions, as the load
// generator does: a stream claims the next unclaimed session's first turn,
// sends each later turn once the one before it is answered, and claims
// another session when its own ends.
type sessionQueue struct {
	n       int
	follow  []bool // follow[i]: request i continues request i-1's session
	starts  []int  // first turn of each session, in order
	claimed int
}

// newSessionQueue returns the sessions of the first n requests of l, or
// nil when l has none (or runs open loop).
func newSessionQueue(l Load, n int) *sessionQueue {
	if l.RequestRate > 0 || len(l.Sends) > 0 || len(l.Sizes) == 0 {
		return nil
	}
	q := &sessionQueue{n: n, follow: make([]bool, n)}
	chained := false
	for i := range n {
		q.follow[i] = i > 0 && l.size(i).FollowUp
		if !q.follow[i] {
			q.starts = append(q.starts, i)
		}
		chained = chained || q.follow[i]
	}
	if !chained {
		return nil
	}
	return q
}

// claim returns the first turn of the next unclaimed session.
func (q *sessionQueue) claim() (int, bool) {
	if q.claimed >= len(q.starts) {
		return 0, false
	}
	q.claimed++
	return q.starts[q.claimed-1], true
}

// next returns what the stream that completed request i sends next: its
// session's next turn, else the next session's first.
func (q *sessionQueue) next(i int) (int, bool) {
	if i+1 < q.n && q.follow[i+1] {
		return i + 1, true
	}
	return q.claim()
}
