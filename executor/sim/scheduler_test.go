package sim

import (
	"fmt"
	"testing"

	"github.com/infercrane/infercrane/planner/perf"
)

// newTestScheduler builds a model-mode scheduler without its loop, so a
// test can step it by hand.
func newTestScheduler(t testing.TB, o Options) *modelTiming {
	t.Helper()
	o.Timing, o.ModelID, o.GPU = TimingModel, "Qwen/Qwen3-0.6B", "L40S"
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	mt, err := newModelTiming(o, newMetrics(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return mt
}

func enqueue(mt *modelTiming, prompt, output int) *genState {
	g := &genState{prompt: prompt, output: output, stallAt: -1, wake: make(chan struct{}, 1)}
	mt.waiting = append(mt.waiting, &mseq{g: g, tokens: prompt})
	return g
}

func TestSchedulerChunkedPrefill(t *testing.T) {
	mt := newTestScheduler(t, Options{MaxModelLen: 32768, MaxBatchedTokens: 8192})
	long := enqueue(mt, 20000, 3)
	var st step
	var chunks []int
	for long.generated.Load() == 0 {
		mt.schedule(&st)
		chunks = append(chunks, st.prefill)
		mt.finishStep(&st)
	}
	if len(chunks) != 3 || chunks[0] != 8192 || chunks[1] != 8192 || chunks[2] != 20000-2*8192 {
		t.Fatalf("prefill chunks %v, want [8192 8192 3616]", chunks)
	}
	// a short request arriving now shares the next step with the decode
	short := enqueue(mt, 100, 1)
	mt.schedule(&st)
	if st.decode != 1 || st.prefill != 100 || len(st.seqs) != 2 {
		t.Fatalf("mixed step: prefill %d decode %d seqs %d", st.prefill, st.decode, len(st.seqs))
	}
	mt.finishStep(&st)
	if long.generated.Load() != 2 || short.generated.Load() != 1 {
		t.Fatalf("after the mixed step: long %d, short %d tokens", long.generated.Load(), short.generated.Load())
	}
	if len(mt.running) != 1 {
		t.Fatalf("the finished short request still runs: %d running", len(mt.running))
	}
}

func TestSchedulerMaxNumSeqsAndBudget(t *testing.T) {
	mt := newTestScheduler(t, Options{MaxNumSeqs: 4, MaxBatchedTokens: 1000})
	for i := 0; i < 10; i++ {
		enqueue(mt, 300, 5)
	}
	var st step
	mt.schedule(&st)
	// the budget admits 3 whole prompts and 100 tokens of a fourth
	if len(st.seqs) != 4 || st.prefill != 1000 || len(mt.waiting) != 6 {
		t.Fatalf("first step: %d seqs, %d prefill tokens, %d waiting", len(st.seqs), st.prefill, len(mt.waiting))
	}
	mt.finishStep(&st)
	mt.schedule(&st)
	// max_num_seqs keeps the others waiting although budget is left
	if len(mt.running) != 4 || len(mt.waiting) != 6 || st.decode != 3 || st.prefill != 200 {
		t.Fatalf("second step: %d running, %d waiting, decode %d, prefill %d", len(mt.running), len(mt.waiting), st.decode, st.prefill)
	}
	mt.finishStep(&st)
	used := 0
	for _, s := range mt.running {
		used += s.blocks
		if s.blocks != blocksFor(s.computed) {
			t.Fatalf("a sequence holds %d blocks for %d tokens", s.blocks, s.computed)
		}
	}
	if used != mt.usedBlocks {
		t.Fatalf("blocks held %d, accounted %d", used, mt.usedBlocks)
	}
}

// BenchmarkSchedulerStep times one model-mode scheduling round (schedule and
// finishStep) with n sequences in a closed loop (a finished one is replaced
// at once), and reports the largest --speedup at which the scheduler alone
// would still keep time: the simulated step durations over the wall time
// the rounds cost.
func BenchmarkSchedulerStep(b *testing.B) {
	for _, n := range []int{32, 256, 1024} {
		b.Run(fmt.Sprintf("seqs=%d", n), func(b *testing.B) {
			mt := newTestScheduler(b, Options{MaxNumSeqs: n, MaxModelLen: 4096})
			var st step
			simulated, scheduled := 0.0, 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for len(mt.running)+len(mt.waiting) < n {
					enqueue(mt, 256, 256)
				}
				mt.schedule(&st)
				scheduled += len(st.seqs)
				simulated += perf.StepSeconds(mt.arch, mt.hw, st.prefill, st.decode, st.kv)
				mt.finishStep(&st)
			}
			b.ReportMetric(simulated/b.Elapsed().Seconds(), "max-speedup")
			b.ReportMetric(float64(scheduled)/float64(b.N), "seqs/step")
		})
	}
}
