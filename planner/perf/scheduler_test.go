package perf

import (
	"fmt"
	"testing"
)

func newSeq(s *Scheduler, prompt, output int) *Seq {
	q := &Seq{Prompt: prompt, Output: output}
	s.Add(q)
	return q
}

func TestSchedulerChunkedPrefill(t *testing.T) {
	s := NewScheduler(EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 8192, ChunkedPrefill: true, KVBlocks: 100000})
	long := newSeq(s, 20000, 3)
	var st Step
	var chunks []int
	for long.Sampled == 0 {
		s.Schedule(&st)
		chunks = append(chunks, st.PrefillTokens)
		s.Complete(&st, nil)
	}
	if len(chunks) != 3 || chunks[0] != 8192 || chunks[1] != 8192 || chunks[2] != 20000-2*8192 {
		t.Fatalf("prefill chunks %v, want [8192 8192 3616]", chunks)
	}
	// a short request arriving now shares the next step with the decode
	short := newSeq(s, 100, 1)
	s.Schedule(&st)
	if st.DecodeSeqs != 1 || st.PrefillTokens != 100 || len(st.Seqs) != 2 {
		t.Fatalf("mixed step: prefill %d decode %d seqs %d", st.PrefillTokens, st.DecodeSeqs, len(st.Seqs))
	}
	s.Complete(&st, nil)
	if long.Sampled != 2 || short.Sampled != 1 || s.Running() != 1 {
		t.Fatalf("after the mixed step: long %d, short %d tokens, %d running", long.Sampled, short.Sampled, s.Running())
	}
}

func TestSchedulerMaxNumSeqsAndBudget(t *testing.T) {
	s := NewScheduler(EngineConfig{MaxNumSeqs: 4, MaxBatchedTokens: 1000, ChunkedPrefill: true, KVBlocks: 100000})
	for i := 0; i < 10; i++ {
		newSeq(s, 300, 5)
	}
	var st Step
	s.Schedule(&st)
	// the budget admits 3 whole prompts and 100 tokens of a fourth
	if len(st.Seqs) != 4 || st.PrefillTokens != 1000 || s.Waiting() != 6 {
		t.Fatalf("first step: %d seqs, %d prefill tokens, %d waiting", len(st.Seqs), st.PrefillTokens, s.Waiting())
	}
	s.Complete(&st, nil)
	s.Schedule(&st)
	// max_num_seqs keeps the others waiting although budget is left
	if s.Running() != 4 || s.Waiting() != 6 || st.DecodeSeqs != 3 || st.PrefillTokens != 200 {
		t.Fatalf("second step: %d running, %d waiting, decode %d, prefill %d", s.Running(), s.Waiting(), st.DecodeSeqs, st.PrefillTokens)
	}
	s.Complete(&st, nil)
	if held, used, ok := s.check(); !ok {
		t.Fatalf("blocks held %d, accounted %d", held, used)
	}
}

// TestSchedulerWithoutChunkedPrefill: whole prompts only, and a step
// prefills or decodes, never both.
func TestSchedulerWithoutChunkedPrefill(t *testing.T) {
	s := NewScheduler(EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 1000, KVBlocks: 100000})
	a := newSeq(s, 600, 3)
	newSeq(s, 600, 3)
	var st Step
	s.Schedule(&st)
	if st.PrefillTokens != 600 || len(st.Seqs) != 1 {
		t.Fatalf("first step prefills %d tokens of %d seqs; the second prompt does not fit the budget", st.PrefillTokens, len(st.Seqs))
	}
	s.Complete(&st, nil)
	s.Schedule(&st)
	if st.PrefillTokens != 600 || st.DecodeSeqs != 0 {
		t.Fatalf("second step: prefill %d decode %d; a waiting prompt goes first, alone", st.PrefillTokens, st.DecodeSeqs)
	}
	s.Complete(&st, nil)
	s.Schedule(&st)
	if st.PrefillTokens != 0 || st.DecodeSeqs != 2 || a.Sampled != 1 {
		t.Fatalf("third step: prefill %d decode %d", st.PrefillTokens, st.DecodeSeqs)
	}
}

// TestSchedulerPrefixCacheHook: cached whole blocks of a prompt are not
// prefilled again.
func TestSchedulerPrefixCacheHook(t *testing.T) {
	s := NewScheduler(EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 8192, ChunkedPrefill: true, PrefixCaching: true, KVBlocks: 1000})
	q := &Seq{Prompt: 1000, Output: 2, Cached: 900}
	s.Add(q)
	var st Step
	s.Schedule(&st)
	if st.PrefillTokens != 1000-896 || st.KVTokens != 1000 {
		t.Fatalf("prefill %d tokens, KV %v; want the 56 blocks of the cached prefix skipped", st.PrefillTokens, st.KVTokens)
	}
}

// BenchmarkSchedulerStep times one scheduling round (Schedule and
// Complete) with n sequences in a closed loop (a finished one is replaced
// at once), and reports the largest simulated-engine --speedup at which the
// scheduler alone would still keep time: the simulated step durations over
// the wall time the rounds cost.
func BenchmarkSchedulerStep(b *testing.B) {
	for _, n := range []int{32, 256, 1024} {
		b.Run(fmt.Sprintf("seqs=%d", n), func(b *testing.B) {
			srv := testLane(b, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: n, MaxBatchedTokens: 8192, ChunkedPrefill: true})
			s := NewScheduler(srv.Engine)
			var st Step
			simulated, scheduled := 0.0, 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for s.Running()+s.Waiting() < n {
					newSeq(s, 256, 256)
				}
				s.Schedule(&st)
				scheduled += len(st.Seqs)
				simulated += srv.StepSeconds(&st)
				s.Complete(&st, nil)
			}
			b.ReportMetric(simulated/b.Elapsed().Seconds(), "max-speedup")
			b.ReportMetric(float64(scheduled)/float64(b.N), "seqs/step")
		})
	}
}

// preemptionScenario is a running request A (128-token prompt, 64 output
// tokens) and a waiting B (160-token prompt) on a 16-block KV cache with a
// 64-token budget: in step 4, B (admitted in step 3 with 63 tokens) cannot
// grow and, last in the running list, preempts itself.
func preemptionScenario(prefixCaching bool) (s *Scheduler, a, b *Seq) {
	s = NewScheduler(EngineConfig{MaxNumSeqs: 8, MaxBatchedTokens: 64, ChunkedPrefill: true, PrefixCaching: prefixCaching, KVBlocks: 16})
	a = newSeq(s, 128, 64)
	b = newSeq(s, 160, 4)
	return s, a, b
}

// stepUntil schedules and completes steps until step number n is
// scheduled (not completed) into st, checking the block accounting.
func stepUntil(t *testing.T, s *Scheduler, st *Step, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		s.Schedule(st)
		if i == n {
			return
		}
		s.Complete(st, nil)
		if held, used, ok := s.check(); !ok {
			t.Fatalf("step %d: blocks held %d, accounted %d", i, held, used)
		}
	}
}

// TestAPreemptingStepAdmitsNobody: vLLM V1 schedules the waiting queue
// only in a step that preempted nobody (vllm/v1/core/sched/scheduler.py,
// v0.11.0: "if not preempted_reqs:"), so the request just preempted, now
// the queue's head, is not admitted again in the same step.
func TestAPreemptingStepAdmitsNobody(t *testing.T) {
	for _, prefixCaching := range []bool{false, true} {
		s, a, b := preemptionScenario(prefixCaching)
		var st Step
		stepUntil(t, s, &st, 4)
		if s.Preemptions != 1 || len(st.Seqs) != 1 || st.Seqs[0] != a || b.state != seqWaiting {
			t.Errorf("prefix caching %v, step 4: %d preemptions, %d scheduled (B %v): want A's decode alone, B preempted and waiting", prefixCaching, s.Preemptions, len(st.Seqs), b.state)
		}
		s.Complete(&st, nil)
		s.Schedule(&st)
		if len(st.Seqs) != 2 || st.Seqs[1] != b {
			t.Errorf("prefix caching %v, step 5: %d scheduled; B should be admitted again", prefixCaching, len(st.Seqs))
		}
	}
}

// TestPreemptedRequestHitsItsFreedBlocks: with prefix caching (vLLM V1's
// default) a preempted request's full blocks stay cached in the free pool
// and its readmission hits them (get_computed_blocks for a waiting
// request with no computed tokens), so it recomputes only its partial
// last block; without prefix caching it recomputes everything.
func TestPreemptedRequestHitsItsFreedBlocks(t *testing.T) {
	for _, c := range []struct {
		prefixCaching bool
		resume        int
	}{{false, 0}, {true, 48}} {
		s, _, b := preemptionScenario(c.prefixCaching)
		var st Step
		stepUntil(t, s, &st, 5) // B had computed 63 tokens: 3 full blocks
		if b.state != seqRunning || b.computed != c.resume || b.scheduled != 63 {
			t.Errorf("prefix caching %v: B readmitted at token %d with %d scheduled, want at %d with 63", c.prefixCaching, b.computed, b.scheduled, c.resume)
		}
	}
}

// TestPreemptedWindowedRequestHitsItsWholePrefix: under a sliding
// window a block of the pool holds a block of every layer's KV, so a
// request of n tokens holds fewer than n/16 blocks (blocksFor); a
// preempted request's cached blocks stand for all its computed tokens,
// and its readmission resumes after them, not after as many tokens as
// blocks x 16 (which made a request that could not fit recompute its
// chunks over and over while the others decoded).
func TestPreemptedWindowedRequestHitsItsWholePrefix(t *testing.T) {
	cfg := EngineConfig{MaxNumSeqs: 8, MaxBatchedTokens: 512, ChunkedPrefill: true, PrefixCaching: true, BlockSize: 16, KVBlocks: 1000,
		SlidingWindow: 128, SlidingLayers: 18, KVLayers: 36}
	s := NewScheduler(cfg)
	q := &Seq{Prompt: 4000, Output: 10}
	s.Add(q)
	var st Step
	for range 4 {
		s.Schedule(&st)
		s.Complete(&st, nil)
	}
	if q.computed != 2048 {
		t.Fatalf("computed %d tokens, want 2048", q.computed)
	}
	s.preempt(q)
	if got := s.cachedPrefix(q, 0); got != 2048 {
		t.Errorf("readmitted after %d tokens of its %d blocks, want after its 2048 computed", got, q.retained)
	}
	// A burst of 32,000-token prompts that the cache holds four and a
	// half of (gpt-oss-120b's layers on an H100): the requests that do
	// not fit wait while the others decode, and nothing is prefilled over
	// and over.
	cfg.MaxBatchedTokens, cfg.KVBlocks = 8192, 4972
	s = NewScheduler(cfg)
	prompt := 0
	for range 8 {
		r := &Seq{Prompt: 32000, Output: 100}
		prompt += r.Prompt
		s.Add(r)
	}
	prefilled := 0
	for i := 0; !s.Idle(); i++ {
		if i > 100000 {
			t.Fatal("the burst never finished")
		}
		s.Schedule(&st)
		prefilled += st.PrefillTokens
		s.Complete(&st, nil)
	}
	if prefilled > prompt*3/2 {
		t.Errorf("prefilled %d tokens for %d tokens of prompts (%d preemptions): chunks recomputed over and over", prefilled, prompt, s.Preemptions)
	}
}

// TestPreemptedRequestsTailIsReusedFirst: the engine reuses free blocks
// from the front of its free queue, and a request's blocks enter it tail
// first (vllm/v1/core/single_type_kv_cache_manager.py, free; block_pool.py,
// get_new_blocks), so a running request's growth first takes the free
// blocks queued before the preempted request's and then evicts that
// request's blocks from its tail; its readmission still hits the rest. The
// admission check counts the cached blocks it hits as blocks to allocate
// (they leave the free pool), so it does not return before it fits.
func TestPreemptedRequestsTailIsReusedFirst(t *testing.T) {
	s, a, b := preemptionScenario(true)
	var st Step
	// Step 6: B (111 tokens computed) preempts itself again: 6 full blocks
	// cached, its partial block and none other free ahead of them.
	stepUntil(t, s, &st, 6)
	s.Complete(&st, nil)
	if s.Preemptions != 2 || b.retained != 6 {
		t.Fatalf("after step 6: %d preemptions, B retains %d blocks; want 2 and 6", s.Preemptions, b.retained)
	}
	for a.state == seqRunning {
		s.Schedule(&st)
		if len(st.Seqs) != 1 || st.Seqs[0] != a {
			t.Fatalf("B readmitted while A (%d tokens) runs: it cannot fit", a.tokens)
		}
		s.Complete(&st, nil)
		// A's 10th block takes the plain block; its 11th and 12th B's last
		// two.
		want := 6 - max(a.blocks-10, 0)
		if a.state == seqRunning && b.retained != want {
			t.Fatalf("A holds %d blocks: B retains %d, want %d", a.blocks, b.retained, want)
		}
		if held, used, ok := s.check(); !ok {
			t.Fatalf("blocks held %d, accounted %d", held, used)
		}
	}
	if b.retained != 4 {
		t.Fatalf("A finished: B retains %d blocks, want 4", b.retained)
	}
	s.Schedule(&st)
	if b.state != seqRunning || b.computed != 64 || b.retained != 0 {
		t.Errorf("after A: B readmitted at token %d (retaining %d), want at 64 (4 blocks hit)", b.computed, b.retained)
	}
}
