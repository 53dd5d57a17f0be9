package perf

import "math"

// DefaultBlockSize is the paged KV cache's block size in tokens (vLLM's
// default on GPUs).
const DefaultBlockSize = 16

// EngineConfig is the serving engine's scheduler settings that change
// performance: the per-step token budget, the running-batch cap, chunked
// prefill and the KV cache's size in blocks.
type EngineConfig struct {
	// MaxNumSeqs caps the running batch (--max-num-seqs).
	MaxNumSeqs int `json:"max_num_seqs"`
	// MaxBatchedTokens is the token budget of one step
	// (--max-num-batched-tokens).
	MaxBatchedTokens int `json:"max_num_batched_tokens"`
	// ChunkedPrefill lets a prompt be prefilled over several steps and
	// prefills share steps with decodes (vLLM's v1 engine). Off, a step
	// either prefills whole prompts or decodes (vLLM's v0 default).
	ChunkedPrefill bool `json:"chunked_prefill"`
	// PrefixCaching says the engine reuses cached prompt prefixes; the
	// scheduler then skips Seq.Cached tokens of each prompt.
	PrefixCaching bool `json:"prefix_caching,omitempty"`
	// BlockSize is the KV cache block in tokens (default DefaultBlockSize).
	BlockSize int `json:"block_size,omitempty"`
	// KVBlocks is the KV cache's size in blocks.
	KVBlocks int `json:"kv_blocks"`
	// SlidingWindow, SlidingLayers and KVLayers describe sliding-window
	// attention when the engine keeps only the window of those layers
	// (vLLM's V1 KV cache manager: SlidingWindowSpec): SlidingLayers of
	// the KVLayers attention layers hold at most SlidingWindow tokens of
	// a request, the others every token. 0: every layer holds every
	// token. A block is a block of every layer's KV, so a request of n
	// tokens holds KVTokens(n) tokens' worth of blocks.
	SlidingWindow int `json:"sliding_window,omitempty"`
	SlidingLayers int `json:"sliding_layers,omitempty"`
	KVLayers      int `json:"kv_layers,omitempty"`
	// FullLengthKV says sliding-window layers hold every token all the
	// same (RuntimeSettings.FullLengthKV); NewLane then leaves the
	// window out.
	FullLengthKV bool `json:"full_length_kv,omitempty"`
}

// windowed reports whether some layers keep only a window.
func (c *EngineConfig) windowed() bool {
	return c.SlidingWindow > 0 && c.SlidingLayers > 0 && c.KVLayers >= c.SlidingLayers
}

// KVTokens is the KV cache a request of tokens tokens holds, in tokens of
// every layer: tokens, less the sliding-window layers' share of the
// tokens before their window.
func (c *EngineConfig) KVTokens(tokens int) float64 {
	if !c.windowed() || tokens <= c.SlidingWindow {
		return float64(tokens)
	}
	return float64(tokens) - float64(c.SlidingLayers)*float64(tokens-c.SlidingWindow)/float64(c.KVLayers)
}

// Attended is the query-key pairs attention computes, in each layer on
// average, for n tokens of a request after its first before tokens
// (whose KV is cached): the token at position p (from 1) attends to the p
// tokens up to itself (causal), n x before + n(n+1)/2 in all, and in a
// sliding-window layer to at most the window's. For one decoded token it
// is KVTokens(before+1): a decode attends to its whole KV cache. Where
// the engine keeps every token of a sliding-window layer
// (FullLengthKV, vLLM before 0.8) the window is not known here and the
// pairs are counted at full length, an upper bound, as the KV cache is.
func (c *EngineConfig) Attended(before, n int) float64 {
	if n <= 0 {
		return 0
	}
	b, k := float64(before), float64(n)
	pairs := k*b + k*(k+1)/2
	if c.windowed() {
		// Positions past the window attend window tokens, not p: the
		// sliding layers' share of sum(p - window) over them is left out.
		w := c.SlidingWindow
		if lo, hi := max(before+1, w+1), before+n; hi >= lo {
			m := float64(hi - lo + 1)
			over := m*float64(lo-w) + m*(m-1)/2
			pairs -= float64(c.SlidingLayers) * over / float64(c.KVLayers)
		}
	}
	return pairs
}

// kvSlope is how much KVTokens grows with one more token after tokens.
func (c *EngineConfig) kvSlope(tokens int) float64 {
	if !c.windowed() || tokens < c.SlidingWindow {
		return 1
	}
	return 1 - float64(c.SlidingLayers)/float64(c.KVLayers)
}

func (c *EngineConfig) blockSize() int {
	if c.BlockSize <= 0 {
		return DefaultBlockSize
	}
	return c.BlockSize
}

// Seq is one request as the scheduler sees it. The owner sets Prompt,
// Output, Cached and Data before Add; the scheduler maintains the rest.
type Seq struct {
	// Prompt and Output are the request's prompt tokens and the tokens it
	// will generate.
	Prompt, Output int
	// Cached is the number of prompt tokens found in the prefix cache when
	// the request is admitted (only with EngineConfig.PrefixCaching): their
	// KV is not computed again. Without a PrefixCache (SetPrefixCache) the
	// owner sets it, a fixed hit; with one the scheduler sets it at the
	// request's first admission to what the cache served.
	Cached int
	// Data is the owner's handle (the simulated engine's stream, the
	// virtual run's request).
	Data any
	// Index is the request's number in its run as the load generator
	// numbers it (warmup requests first, from 0); it draws the request's
	// delay on its way to the engine (Lane.RequestDelaySeconds), so
	// both clocks give one request the same draw.
	Index int
	// Sampled counts the output tokens sampled so far.
	Sampled int

	tokens    int // prompt plus tokens sampled so far
	computed  int // tokens whose KV is in the cache
	blocks    int // KV blocks held
	scheduled int // tokens scheduled in the current step
	stored    int // leading blocks handed to the prefix cache
	// retained counts the leading blocks of a preempted request's KV that
	// are still cached in the free pool (Scheduler.evictable): its
	// readmission hits them.
	retained int
	admitted bool
	state    seqState
	// entered is when the request entered the scheduler (Engine.Begin),
	// started when a step first scheduled any of its tokens (Scheduler.now
	// at its first admission; hasStarted once it has been): its TTFT's
	// parts (TTFTParts).
	entered, started float64
	hasStarted       bool
}

// Entered is when the request entered the scheduler (Engine.Begin), on
// the engine's timeline.
func (q *Seq) Entered() float64 { return q.entered }

// Started is when a step first scheduled any of the request's tokens, on
// the engine's timeline, and whether one has (TTFTParts).
func (q *Seq) Started() (float64, bool) { return q.started, q.hasStarted }

type seqState uint8

const (
	seqNew seqState = iota
	seqWaiting
	seqRunning
	seqDone // finished or aborted
)

// Step is what one engine step computes.
type Step struct {
	Seqs []*Seq
	// PrefillTokens counts prompt (or recompute) tokens, DecodeSeqs the
	// sequences decoding one token, KVTokens the KV-cache tokens the step
	// reads.
	PrefillTokens int
	DecodeSeqs    int
	KVTokens      float64
	// Attended counts the query-key pairs the step's attention computes
	// (EngineConfig.Attended of each sequence's scheduled tokens): a
	// prefill chunk attends to the request's earlier tokens and, causal,
	// to itself up to each query; a decode to its whole KV cache.
	Attended float64
}

// Scheduler is a continuous-batching scheduler in the manner of vLLM's v1
// scheduler, without a clock: the simulated engine drives it in real time
// and the estimator in virtual time, so both are the same model. Every step
// it first schedules the running requests (one token each when decoding, a
// chunk of the remaining prompt when prefilling) and then admits waiting
// requests in arrival order, within the token budget, MaxNumSeqs running
// requests and the KV cache's blocks. A running request that cannot get a
// block preempts the most recently admitted one, which frees its KV cache
// and goes back to the head of the queue; a step that preempted admits
// nobody. The preempted request is prefilled again later (recompute): all
// of it without prefix caching; with it (vLLM V1's default) only what the
// engine reused of its freed blocks in the meantime (evictable). At the
// end of a step each request whose scheduled tokens are all computed
// samples one token. A Scheduler is not safe for concurrent use.
type Scheduler struct {
	cfg        EngineConfig
	waiting    []*Seq // FIFO; preempted requests go back to the front
	running    []*Seq // in admission order
	usedBlocks int
	cache      PrefixCache // nil: Seq.Cached is fixed
	// evictable are the preempted requests' blocks that are cached in the
	// free pool, in the order the engine reuses free blocks.
	evictable freeQueue
	// Preemptions counts preemptions so far.
	Preemptions int
	// now is the start of the step being scheduled (Engine.Begin): a
	// request's first admission records it (Seq.started).
	now float64
}

// freeQueue is where a preempted request's cached blocks stand in vLLM
// V1's free block queue, with prefix caching on. The engine takes new
// blocks from the queue's front and puts freed ones at its back
// (vllm/v1/core/block_pool.py, v0.11.0: get_new_blocks pops from the
// front, evicting a cached block it takes; free_blocks appends), a
// request's in reverse order, so that its tail is reused first
// (single_type_kv_cache_manager.py, free: "Free blocks in reverse order
// so that the tail blocks are freed first"). A preempted request keeps the
// hashes of its full blocks, so when it is scheduled again
// (scheduler.py, schedule: get_computed_blocks for a waiting request with
// no computed tokens) it hits every leading block not yet reused and
// recomputes only the rest. The queue keeps counts, not blocks: each run
// is one preempted request's cached blocks (Seq.retained) behind the
// plain free blocks ahead of it; the free blocks behind the last run are
// not counted here. Only the blocks' order matters: reuse takes the
// front run's plain blocks, then the request's (its tail first), and so
// on.
type freeQueue struct {
	runs   []freeRun
	queued int // the plain and retained blocks of the runs
}

type freeRun struct {
	ahead int // plain free blocks in front of the owner's
	owner *Seq
}

// push records that q, preempted, put its blocks at the back of the free
// queue, of which cached are its leading full blocks; before were the
// free blocks already queued.
func (f *freeQueue) push(q *Seq, before, blocks, cached int) {
	r := freeRun{ahead: before - f.queued + blocks - cached, owner: q}
	q.retained = cached
	f.runs = append(f.runs, r)
	f.queued += r.ahead + cached
}

// reuse takes n blocks from the front of the queue, as the engine's new
// blocks: a request's cached blocks among them are evicted, tail first.
func (f *freeQueue) reuse(n int) {
	for n > 0 && len(f.runs) > 0 {
		r := &f.runs[0]
		t := min(n, r.ahead)
		r.ahead -= t
		n -= t
		t2 := min(n, r.owner.retained)
		r.owner.retained -= t2
		n -= t2
		f.queued -= t + t2
		if r.ahead == 0 && r.owner.retained == 0 {
			f.runs = f.runs[1:]
		}
	}
}

// claim takes q's run out of the queue as q is scheduled again with hit
// of its cached blocks (they leave the free pool); the rest of the run
// stays where it was as plain free blocks.
func (f *freeQueue) claim(q *Seq, hit int) {
	for i := range f.runs {
		r := f.runs[i]
		if r.owner != q {
			continue
		}
		rest := r.ahead + q.retained - hit
		f.queued -= hit
		if i+1 < len(f.runs) {
			f.runs[i+1].ahead += rest
		} else {
			f.queued -= rest // behind the last run: not counted
		}
		f.runs = append(f.runs[:i], f.runs[i+1:]...)
		break
	}
	q.retained = 0
}

// NewScheduler returns an idle scheduler for cfg.
func NewScheduler(cfg EngineConfig) *Scheduler {
	s := new(Scheduler)
	s.reset(cfg)
	return s
}

// reset makes s an idle scheduler for cfg, keeping the memory of its
// queues (Engine.reset).
func (s *Scheduler) reset(cfg EngineConfig) {
	cfg.BlockSize = cfg.blockSize()
	*s = Scheduler{cfg: cfg, waiting: s.waiting[:0], running: s.running[:0], evictable: freeQueue{runs: s.evictable.runs[:0]}}
}

// SetPrefixCache makes the scheduler look requests up in c when it first
// schedules them and store the blocks each step computed in c when the
// step completes (PrefixCache); nil keeps the owners' fixed Seq.Cached.
// It applies with EngineConfig.PrefixCaching only.
func (s *Scheduler) SetPrefixCache(c PrefixCache) { s.cache = c }

// Config returns the scheduler's settings.
func (s *Scheduler) Config() EngineConfig { return s.cfg }

// Add queues a new request.
func (s *Scheduler) Add(q *Seq) {
	q.tokens, q.computed, q.blocks, q.scheduled, q.Sampled, q.stored, q.retained, q.admitted = q.Prompt, 0, 0, 0, 0, 0, 0, false
	q.state = seqWaiting
	s.waiting = append(s.waiting, q)
}

// Abort forgets q (a cancelled request), freeing its KV cache.
func (s *Scheduler) Abort(q *Seq) {
	switch q.state {
	case seqRunning:
		s.remove(&s.running, q)
		s.usedBlocks -= q.blocks
	case seqWaiting:
		s.remove(&s.waiting, q)
		if q.retained > 0 {
			s.evictable.claim(q, 0)
		}
	}
	q.blocks, q.scheduled, q.state = 0, 0, seqDone
}

func (s *Scheduler) remove(list *[]*Seq, q *Seq) {
	for i, r := range *list {
		if r == q {
			*list = append((*list)[:i], (*list)[i+1:]...)
			return
		}
	}
}

// Idle reports whether nothing is running or waiting.
func (s *Scheduler) Idle() bool { return len(s.running) == 0 && len(s.waiting) == 0 }

// Running and Waiting count the requests in each queue.
func (s *Scheduler) Running() int { return len(s.running) }

// Waiting counts the queued requests.
func (s *Scheduler) Waiting() int { return len(s.waiting) }

// KVUsage is the fraction of KV blocks in use.
func (s *Scheduler) KVUsage() float64 {
	if s.cfg.KVBlocks <= 0 {
		return 0
	}
	return float64(s.usedBlocks) / float64(s.cfg.KVBlocks)
}

func (s *Scheduler) blocksFor(tokens int) int {
	b := s.cfg.BlockSize
	if c := &s.cfg; c.windowed() && tokens > c.SlidingWindow {
		// KVTokens in whole blocks, in integers: n x layers less the
		// windowed layers' tokens before the window, over layers x b.
		num := tokens*c.KVLayers - c.SlidingLayers*(tokens-c.SlidingWindow)
		den := c.KVLayers * b
		return (num + den - 1) / den
	}
	return (tokens + b - 1) / b
}

// fullBlocks is the blocks that hold the first tokens tokens' whole
// blocks: a block of the pool is a block of every layer's KV
// (blocksFor), so under a sliding window a block holds more than
// BlockSize of a request's tokens.
func (s *Scheduler) fullBlocks(tokens int) int {
	b := s.cfg.BlockSize
	return s.blocksFor(tokens / b * b)
}

// tokensIn is the most leading tokens, in whole blocks of BlockSize,
// that blocks of the pool hold (blocksFor's inverse).
func (s *Scheduler) tokensIn(blocks int) int {
	b := s.cfg.BlockSize
	c := &s.cfg
	if t := blocks * b; !c.windowed() || t <= c.SlidingWindow {
		return t
	}
	full := c.KVLayers - c.SlidingLayers
	if full <= 0 {
		return math.MaxInt / 2 // every layer windowed: a request's blocks stop growing
	}
	t := (blocks*c.KVLayers*b - c.SlidingLayers*c.SlidingWindow) / full
	return t / b * b
}

// Schedule builds the next step into st (reusing its slice). An empty step
// means there is nothing to do.
func (s *Scheduler) Schedule(st *Step) {
	st.Seqs, st.PrefillTokens, st.DecodeSeqs, st.KVTokens, st.Attended = st.Seqs[:0], 0, 0, 0, 0
	if !s.cfg.ChunkedPrefill {
		s.scheduleWhole(st)
		return
	}
	budget := s.cfg.MaxBatchedTokens
	// Running requests first, oldest first; preempt from the back when the
	// cache is full.
	preempted := s.Preemptions
	for i := 0; i < len(s.running) && budget > 0; i++ {
		q := s.running[i]
		n := min(q.tokens-q.computed, budget)
		if !s.grow(q, q.computed+n) {
			break
		}
		s.take(st, q, n)
		budget -= n
	}
	// A step that preempted admits nobody (vLLM V1: "if not
	// preempted_reqs" before scheduling the waiting requests,
	// vllm/v1/core/sched/scheduler.py in v0.11.0,
	// https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/core/sched/scheduler.py#L335);
	// one that preempted everything is empty, and the engine, which runs
	// no empty step, schedules again at once.
	if s.Preemptions > preempted && len(st.Seqs) > 0 {
		return
	}
	// Then waiting requests, in order, while there is room.
	for len(s.waiting) > 0 && budget > 0 && len(s.running) < s.cfg.MaxNumSeqs {
		q := s.waiting[0]
		s.reuse(q)
		n := min(q.tokens-q.computed, budget)
		if !s.admit(q, q.computed+n) {
			break
		}
		s.take(st, q, n)
		budget -= n
	}
}

// scheduleWhole is scheduling without chunked prefill (vLLM's v0 default):
// a step prefills whole waiting prompts (as many as the budget, the batch
// cap and the cache allow) or, when none can start, decodes every running
// request.
func (s *Scheduler) scheduleWhole(st *Step) {
	budget := s.cfg.MaxBatchedTokens
	for len(s.waiting) > 0 && len(s.running) < s.cfg.MaxNumSeqs {
		q := s.waiting[0]
		s.reuse(q)
		n := q.tokens - q.computed
		if n > budget || !s.admit(q, q.tokens) {
			break
		}
		s.take(st, q, n)
		budget -= n
	}
	if len(st.Seqs) > 0 {
		return
	}
	for i := 0; i < len(s.running); i++ {
		q := s.running[i]
		if !s.grow(q, q.computed+1) {
			break
		}
		s.take(st, q, 1)
	}
}

// reuse starts a request's prefill after its cached prefix (whole blocks
// only, as a paged cache shares them) when prefix caching is on.
func (s *Scheduler) reuse(q *Seq) {
	if !s.cfg.PrefixCaching || q.computed > 0 {
		return
	}
	hit := q.Cached
	if s.cache != nil {
		hit = s.cache.Lookup(q)
	}
	q.computed = s.cachedPrefix(q, hit)
	if q.computed == 0 {
		return
	}
	// The blocks served are cached already: only later ones are stored.
	q.stored = max(q.stored, q.computed/s.cfg.BlockSize)
}

// cachedPrefix is the prefix of q a lookup serves: hit tokens found in the
// prefix cache or q's own blocks still cached since it was preempted
// (Seq.retained), whichever is longer, in whole blocks and never q's last
// token (vLLM V1 recomputes it for its logits: get_computed_blocks in
// vllm/v1/core/kv_cache_manager.py).
func (s *Scheduler) cachedPrefix(q *Seq, hit int) int {
	hit = max(hit, s.tokensIn(q.retained))
	if hit <= 0 {
		return 0
	}
	return max(min(hit, q.tokens-1)/s.cfg.BlockSize*s.cfg.BlockSize, 0)
}

// allocate takes n free blocks for a request; with prefix caching they
// may evict preempted requests' cached blocks (evictable).
func (s *Scheduler) allocate(n int) {
	s.usedBlocks += n
	if n > 0 && len(s.evictable.runs) > 0 {
		s.evictable.reuse(n)
	}
}

// grow gives running request q the blocks to hold tokens, preempting from
// the back of the running list; false when q itself had to be preempted.
func (s *Scheduler) grow(q *Seq, tokens int) bool {
	need := s.blocksFor(tokens) - q.blocks
	for need > s.cfg.KVBlocks-s.usedBlocks {
		victim := s.running[len(s.running)-1]
		s.preempt(victim)
		if victim == q {
			return false
		}
	}
	s.allocate(need)
	q.blocks += need
	return true
}

// admit moves waiting request q (the head of the queue) to running with
// the blocks for tokens; false when the cache has no room.
func (s *Scheduler) admit(q *Seq, tokens int) bool {
	need := s.blocksFor(tokens)
	if need > s.cfg.KVBlocks-s.usedBlocks {
		if q.computed > 0 && q.blocks == 0 {
			q.computed = 0 // the cached prefix is looked up again next time
		}
		return false
	}
	s.waiting = s.waiting[1:]
	s.running = append(s.running, q)
	q.state = seqRunning
	if !q.hasStarted {
		q.started, q.hasStarted = s.now, true
	}
	if s.cache != nil && s.cfg.PrefixCaching && !q.admitted {
		q.Cached, q.admitted = q.computed, true
	}
	// Its own cached blocks that it hits leave the free pool; the others
	// it takes from the queue's front (kv_cache_manager.py, allocate_slots:
	// touch, then allocate_new_blocks).
	hit := 0
	if q.retained > 0 {
		hit = min(q.retained, s.fullBlocks(q.computed))
		s.evictable.claim(q, hit)
	}
	s.usedBlocks += hit
	s.allocate(need - hit)
	q.blocks = need
	return true
}

func (s *Scheduler) take(st *Step, q *Seq, n int) {
	q.scheduled = n
	st.Seqs = append(st.Seqs, q)
	if n == 1 && q.computed > 0 && q.computed == q.tokens-1 && q.Sampled > 0 {
		st.DecodeSeqs++
	} else {
		st.PrefillTokens += n
	}
	st.KVTokens += s.cfg.KVTokens(q.computed + n)
	st.Attended += s.cfg.Attended(q.computed, n)
}

// preempt moves q from running back to the front of the queue, freeing its
// KV cache; it will be prefilled again, prompt and sampled tokens alike,
// after what its freed blocks still hold then with prefix caching
// (evictable).
func (s *Scheduler) preempt(q *Seq) {
	s.remove(&s.running, q)
	if s.cfg.PrefixCaching {
		s.evictable.push(q, s.cfg.KVBlocks-s.usedBlocks, q.blocks, min(s.fullBlocks(q.computed), q.blocks))
	}
	s.usedBlocks -= q.blocks
	q.blocks, q.computed, q.scheduled = 0, 0, 0
	q.state = seqWaiting
	s.waiting = append([]*Seq{q}, s.waiting...)
	s.Preemptions++
}

// Complete applies a finished step: every request whose scheduled tokens
// are all computed samples one token, and sampled is called for it (with
// the request's Sampled count already advanced). A request that has
// sampled all its output leaves the scheduler before sampled is called.
// Requests aborted or preempted during the step are skipped.
func (s *Scheduler) Complete(st *Step, sampled func(q *Seq)) {
	for _, q := range st.Seqs {
		if q.state != seqRunning || q.scheduled == 0 {
			continue
		}
		q.computed += q.scheduled
		q.scheduled = 0
		s.store(q)
		if q.computed < q.tokens {
			continue // prefill continues next step
		}
		q.Sampled++
		q.tokens++
		if q.Sampled >= q.Output {
			s.remove(&s.running, q)
			s.usedBlocks -= q.blocks
			q.blocks, q.state = 0, seqDone
		}
		if sampled != nil {
			sampled(q)
		}
	}
}

// store hands the prefix cache q's newly computed full blocks.
func (s *Scheduler) store(q *Seq) {
	if s.cache == nil || !s.cfg.PrefixCaching {
		return
	}
	if full := q.computed / s.cfg.BlockSize; full > q.stored {
		s.cache.Store(q, q.stored, full)
		q.stored = full
	}
}

// check verifies the scheduler's block accounting (tests).
func (s *Scheduler) check() (held, accounted int, ok bool) {
	for _, q := range s.running {
		held += q.blocks
		if q.blocks != s.blocksFor(q.computed) && q.scheduled == 0 {
			return held, s.usedBlocks, false
		}
	}
	return held, s.usedBlocks, held == s.usedBlocks
}

// decodeRun reports whether the next steps are pure decodes of every
// running request (every running request is decoding and fits the budget,
// and nothing waits or the waiting head cannot be admitted: headBlocked)
// and, if so, how many running requests b there are, the
// KV tokens the next step reads, and the most steps k that can run so
// before a request finishes or the cache runs out of blocks. The virtual
// clock uses it to skip through decode phases without scheduling them one
// by one; the result equals stepping (DecodeRun's steps are the same).
// grow is how much the KV tokens read grow a step: b, less the
// sliding-window layers' share for requests past their window; the run
// stops before a request reaches the window, where its growth changes.
func (s *Scheduler) decodeRun(limit int) (b int, kv, grow float64, k int) {
	if len(s.running) == 0 || len(s.running) > s.cfg.MaxBatchedTokens {
		return 0, 0, 0, 0
	}
	k = limit
	for _, q := range s.running {
		if q.Sampled == 0 || q.computed != q.tokens-1 {
			return 0, 0, 0, 0
		}
		k = min(k, q.Output-q.Sampled-1) // stop before the first finishes
		if w := s.cfg.SlidingWindow; s.cfg.windowed() && q.computed+1 < w {
			k = min(k, w-q.computed)
		}
		kv += s.cfg.KVTokens(q.computed + 1)
		grow += s.cfg.kvSlope(q.computed + 1)
	}
	if k <= 0 {
		return 0, 0, 0, 0
	}
	// Largest k whose new blocks fit the free ones (need grows with k).
	need := func(k int) int {
		n := 0
		for _, q := range s.running {
			n += s.blocksFor(q.computed+k) - q.blocks
		}
		return n
	}
	free := s.cfg.KVBlocks - s.usedBlocks
	if len(s.waiting) > 0 {
		// The head is tried after the step's decodes grew (chunked
		// prefill) or before (whole prompts).
		taken := 0
		if s.cfg.ChunkedPrefill {
			taken = need(1)
		}
		if !s.headBlocked(free - taken) {
			return 0, 0, 0, 0
		}
	}
	if need(k) > free {
		lo, hi := 0, k // need(lo) fits, need(hi) does not
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			if need(mid) <= free {
				lo = mid
			} else {
				hi = mid
			}
		}
		k = lo
	}
	return len(s.running), kv, grow, k
}

// headBlocked reports whether the waiting queue's head cannot be admitted
// with free blocks, and so stays waiting through the pure decode steps
// that follow: they admit nobody before it (the queue is FIFO), finish
// nobody, keep the running count and only take blocks, so what refuses it
// now refuses it until a request finishes. It has no side effects. With a
// prefix cache the head's hit can change from step to step (and a lookup
// marks the cache), so such a head is never judged blocked.
func (s *Scheduler) headBlocked(free int) bool {
	if s.cache != nil && s.cfg.PrefixCaching {
		return false
	}
	if len(s.running) >= s.cfg.MaxNumSeqs {
		return true
	}
	q := s.waiting[0]
	computed := q.computed
	if s.cfg.PrefixCaching && computed == 0 { // as reuse
		computed = s.cachedPrefix(q, q.Cached)
	}
	if s.cfg.ChunkedPrefill {
		budget := s.cfg.MaxBatchedTokens - len(s.running)
		return budget <= 0 || s.blocksFor(computed+min(q.tokens-computed, budget)) > free
	}
	return q.tokens-computed > s.cfg.MaxBatchedTokens || s.blocksFor(q.tokens) > free
}

// advanceDecode applies k pure decode steps found by decodeRun and calls
// each for every request advanced.
func (s *Scheduler) advanceDecode(k int, each func(q *Seq)) {
	if s.cache != nil && s.cfg.PrefixCaching {
		s.storeDecodes(k)
	}
	for _, q := range s.running {
		each(q)
		nb := s.blocksFor(q.computed + k)
		s.allocate(nb - q.blocks)
		q.blocks = nb
		q.computed += k
		q.tokens += k
		q.Sampled += k
	}
}
