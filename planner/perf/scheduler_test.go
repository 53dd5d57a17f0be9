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
