package perf

import (
	"testing"

	"github.com/infercrane/infercrane/lang/engine"
)

// TestPipelineStagesCycle: a step of a pipeline of two stages (one GPU
// each) is a cycle of two micro-batches (Hardware.Stages): a lone
// decode goes through both stages one after another, as long as on one
// GPU holding the whole model (plus the hand-off) and longer than on two
// tensor-parallel GPUs; a long prefill's compute is shared, about half
// one GPU's; the KV cache is two GPUs' less the weights, as with tensor
// parallelism.
func TestPipelineStagesCycle(t *testing.T) {
	g, _ := LookupGPU("H100")
	m, _ := LookupModel("Qwen/Qwen3-8B")
	server := func(args ...string) Lane {
		hw, rs, err := CatalogServer(m.ID, g, 2, engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: "0.22.1", RuntimeArgs: args}, "completions", 8192)
		if err != nil {
			t.Fatal(err)
		}
		l, err := NewLane(m, hw, rs.Engine(), 8192)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	one, tp, pp := server("-tp", "1"), server("-tp", "2"), server("-tp", "1", "-pp", "2")
	if pp.Hardware.Stages != 2 || pp.Hardware.GPUs() != 2 || pp.Engine.MaxBatchedTokens != 2*one.Engine.MaxBatchedTokens {
		t.Fatalf("pipeline lane: %+v, budget %d", pp.Hardware, pp.Engine.MaxBatchedTokens)
	}
	seq := &Seq{Prompt: 1000, Output: 10}
	decode := Step{Seqs: []*Seq{seq}, DecodeSeqs: 1, KVTokens: 1000, Attended: 1000}
	d1, dtp, dpp := one.StepSeconds(&decode), tp.StepSeconds(&decode), pp.StepSeconds(&decode)
	if !(dpp >= d1 && dpp < 1.05*d1 && dpp > dtp) {
		t.Errorf("a lone decode: %.3f ms on a pipeline of two, %.3f on one GPU, %.3f on two tensor-parallel", 1e3*dpp, 1e3*d1, 1e3*dtp)
	}
	seqs := make([]*Seq, 8)
	for i := range seqs {
		seqs[i] = &Seq{Prompt: 2048, Output: 10}
	}
	prefill := Step{Seqs: seqs, PrefillTokens: 16384, Attended: 8 * 2048 * 2049 / 2}
	half := Step{Seqs: seqs[:4], PrefillTokens: 8192, Attended: 4 * 2048 * 2049 / 2}
	if p, h := pp.StepSeconds(&prefill), one.StepSeconds(&half); !near(p, h, 0.05) {
		t.Errorf("a 16,384-token prefill cycle: %.2f ms, one GPU's 8,192-token step %.2f", 1e3*p, 1e3*h)
	}
	if b, tb := pp.Engine.KVBlocks, tp.Engine.KVBlocks; !near(float64(b), float64(tb), 0.02) || b <= 2*one.Engine.KVBlocks {
		t.Errorf("KV blocks: pipeline %d, tensor-parallel %d, one GPU %d", b, tb, one.Engine.KVBlocks)
	}
}
