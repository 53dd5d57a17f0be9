package sim

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/infercrane/infercrane/planner/perf"
)

// kvBlockSize is the paged KV cache's block size in tokens (vLLM's default).
const kvBlockSize = 16

// modelTiming is model mode: a continuous-batching scheduler loop in the
// manner of vLLM's v1 scheduler. Every step it first schedules the running
// requests (one token each when decoding, a chunk of the remaining prompt
// when prefilling) and then admits waiting requests in arrival order, within
// a token budget of MaxBatchedTokens, at most MaxNumSeqs running requests
// and the KV cache's blocks. A running request that cannot get a block
// preempts the most recently admitted one, which loses its KV cache and is
// prefilled again later (recompute). The step lasts perf.StepSeconds for
// the step's prefill tokens, decoding sequences and KV tokens, divided by
// Speedup; at its end each request whose scheduled tokens are all computed
// samples one token.
type modelTiming struct {
	arch        perf.ModelArch
	hw          perf.Hardware
	maxSeqs     int
	budget      int
	maxWaiting  int
	totalBlocks int
	speedup     float64
	overhead    time.Duration
	metrics     *metrics
	clock       *preciseClock

	mu         sync.Mutex
	waiting    []*mseq // FIFO; preempted requests go back to the front
	running    []*mseq // in admission order
	usedBlocks int

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// mseq is a request as the scheduler sees it.
type mseq struct {
	g         *genState
	tokens    int // prompt plus tokens sampled so far
	computed  int // tokens whose KV is in the cache
	sampled   int // output tokens sampled
	blocks    int // KV blocks held
	scheduled int // tokens scheduled in the current step
	gone      bool
}

func newModelTiming(o Options, m *metrics, clock *preciseClock) (*modelTiming, error) {
	arch, hw, blocks, err := o.modelLimits()
	if err != nil {
		return nil, err
	}
	mt := &modelTiming{
		arch: arch, hw: hw,
		maxSeqs: o.MaxNumSeqs, budget: o.MaxBatchedTokens, maxWaiting: o.MaxWaiting,
		totalBlocks: blocks, speedup: o.Speedup, metrics: m,
		overhead: time.Duration(hw.Assume.RequestOverheadMs / o.Speedup * float64(time.Millisecond)),
		clock:    clock,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	return mt, nil
}

// modelLimits resolves the model and GPU and sizes the KV cache in blocks,
// refusing what vLLM refuses at start-up.
func (o Options) modelLimits() (perf.ModelArch, perf.Hardware, int, error) {
	arch, hw, err := o.hardware()
	if err != nil {
		return arch, hw, 0, err
	}
	if arch.MaxPositions > 0 && o.MaxModelLen > arch.MaxPositions {
		return arch, hw, 0, fmt.Errorf("max model len %d exceeds %s's %d positions; lower --max-model-len", o.MaxModelLen, arch.ID, arch.MaxPositions)
	}
	blocks := int(perf.KVCapacityTokens(arch, hw)) / kvBlockSize
	if blocks*kvBlockSize < o.MaxModelLen {
		return arch, hw, 0, fmt.Errorf("the KV cache of %s on %dx %s holds %d tokens, fewer than max model len %d; lower --max-model-len, raise --gpu-memory-utilization or use a larger GPU",
			arch.ID, hw.Count, hw.GPU.Name, blocks*kvBlockSize, o.MaxModelLen)
	}
	return arch, hw, blocks, nil
}

func (mt *modelTiming) admit(g *genState) error {
	// Per-request overhead (HTTP, tokenisation) before the engine sees it,
	// as the estimator assumes.
	time.Sleep(mt.overhead)
	mt.mu.Lock()
	if mt.maxWaiting > 0 && len(mt.waiting) >= mt.maxWaiting {
		mt.mu.Unlock()
		return errQueueFull
	}
	mt.waiting = append(mt.waiting, &mseq{g: g, tokens: g.prompt})
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
	for i, s := range mt.running {
		if s.g == g {
			mt.usedBlocks -= s.blocks
			s.blocks, s.gone = 0, true
			mt.running = append(mt.running[:i], mt.running[i+1:]...)
			return
		}
	}
	for i, s := range mt.waiting {
		if s.g == g {
			s.gone = true
			mt.waiting = append(mt.waiting[:i], mt.waiting[i+1:]...)
			return
		}
	}
}

func (mt *modelTiming) gauges() (int, int, float64) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	return len(mt.running), len(mt.waiting), float64(mt.usedBlocks) / float64(mt.totalBlocks)
}

func (mt *modelTiming) close() {
	mt.once.Do(func() { close(mt.stop) })
	<-mt.done
}

func blocksFor(tokens int) int { return (tokens + kvBlockSize - 1) / kvBlockSize }

// step is what one engine step computes.
type step struct {
	seqs    []*mseq
	prefill int     // prompt (or recompute) tokens
	decode  int     // sequences decoding one token
	kv      float64 // KV tokens the step reads
}

// schedule builds the next step under mt.mu.
func (mt *modelTiming) schedule(st *step) {
	st.seqs, st.prefill, st.decode, st.kv = st.seqs[:0], 0, 0, 0
	budget := mt.budget
	// Running requests first, oldest first; preempt from the back when the
	// cache is full.
	for i := 0; i < len(mt.running) && budget > 0; i++ {
		s := mt.running[i]
		n := min(s.tokens-s.computed, budget)
		need := blocksFor(s.computed+n) - s.blocks
		self := false
		for need > mt.totalBlocks-mt.usedBlocks && !self {
			victim := mt.running[len(mt.running)-1]
			mt.preempt(victim)
			self = victim == s
		}
		if self {
			break
		}
		mt.usedBlocks += need
		s.blocks += need
		mt.take(st, s, n)
		budget -= n
	}
	// Then waiting requests, in order, while there is room.
	for len(mt.waiting) > 0 && budget > 0 && len(mt.running) < mt.maxSeqs {
		s := mt.waiting[0]
		n := min(s.tokens-s.computed, budget)
		need := blocksFor(s.computed + n)
		if need > mt.totalBlocks-mt.usedBlocks {
			break
		}
		mt.waiting = mt.waiting[1:]
		mt.running = append(mt.running, s)
		mt.usedBlocks += need
		s.blocks = need
		mt.take(st, s, n)
		budget -= n
	}
}

func (mt *modelTiming) take(st *step, s *mseq, n int) {
	s.scheduled = n
	st.seqs = append(st.seqs, s)
	if n == 1 && s.computed > 0 {
		st.decode++
	} else {
		st.prefill += n
	}
	st.kv += float64(s.computed + n)
}

// preempt moves s from running back to the front of the queue, freeing its
// KV cache; it will be prefilled again, prompt and sampled tokens alike.
func (mt *modelTiming) preempt(s *mseq) {
	for i, r := range mt.running {
		if r == s {
			mt.running = append(mt.running[:i], mt.running[i+1:]...)
			break
		}
	}
	mt.usedBlocks -= s.blocks
	s.blocks, s.computed, s.scheduled = 0, 0, 0
	mt.waiting = append([]*mseq{s}, mt.waiting...)
	mt.metrics.preemptions.Add(1)
}

// finishStep applies a completed step under mt.mu.
func (mt *modelTiming) finishStep(st *step) {
	for _, s := range st.seqs {
		if s.gone || s.scheduled == 0 {
			continue // released or preempted meanwhile
		}
		s.computed += s.scheduled
		s.scheduled = 0
		if s.computed < s.tokens {
			continue // prefill continues next step
		}
		s.sampled++
		s.tokens++
		s.g.generated.Store(int64(s.sampled))
		select {
		case s.g.wake <- struct{}{}:
		default:
		}
		if s.sampled >= s.g.output {
			mt.usedBlocks -= s.blocks
			s.blocks, s.gone = 0, true
			for i, r := range mt.running {
				if r == s {
					mt.running = append(mt.running[:i], mt.running[i+1:]...)
					break
				}
			}
		}
	}
}

// maxLag is how far behind its timeline the loop may fall (an overloaded
// machine) before it restarts the timeline from now.
const maxLag = 50 * time.Millisecond

func (mt *modelTiming) loop() {
	defer close(mt.done)
	sl := newSleeper(mt.clock)
	var st step
	var end time.Time // end of the previous step on the simulated timeline
	for {
		mt.mu.Lock()
		mt.schedule(&st)
		mt.mu.Unlock()
		if len(st.seqs) == 0 {
			select {
			case <-mt.wake:
				end = time.Time{}
				continue
			case <-mt.stop:
				return
			}
		}
		secs := perf.StepSeconds(mt.arch, mt.hw, st.prefill, st.decode, st.kv) / mt.speedup
		now := time.Now()
		if end.IsZero() || now.Sub(end) > maxLag {
			if !end.IsZero() {
				mt.metrics.timelineResets.Add(1)
			}
			end = now
		}
		end = end.Add(time.Duration(math.Round(secs * float64(time.Second))))
		if !sl.until(context.Background(), mt.stop, end) {
			return
		}
		mt.mu.Lock()
		mt.finishStep(&st)
		mt.mu.Unlock()
	}
}
