package sim

import (
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner/perf"
)

// TestCheckDeployment: model timing without a performance model (a
// model outside the catalog with no architecture, so the plan has no
// Perf) is refused as Deploy would refuse it, saying what to set; the plan's
// own performance model, a catalog model and constant timing pass.
func TestCheckDeployment(t *testing.T) {
	model := map[string]any{"timing": "model", "speedup": 1.0, "ttft": "20ms", "itl": "5ms", "max_waiting": 0.0}
	constant := map[string]any{"timing": "constant", "speedup": 1.0, "ttft": "20ms", "itl": "5ms", "max_waiting": 0.0}
	d := executor.Deployment{ID: "d", ModelID: "foo/bar-7b", GPUType: "L40S", GPUCount: 1, MaxContext: 4096, Runtime: engine.Runtime{MaxNumSeqs: 8, MaxBatchedTokens: 2048, GPUMemoryUtil: 0.9}, Config: model}
	err := CheckDeployment(d)
	if err == nil || !strings.Contains(err.Error(), "foo/bar-7b is neither in the catalog nor given one") || !strings.Contains(err.Error(), `timing = "constant"`) {
		t.Fatalf("unknown model in model timing: %v", err)
	}
	if _, derr := (&Executor{settings: Settings{Timing: "model", Speedup: 1}}).Deploy(t.Context(), d); derr == nil {
		t.Fatal("Deploy accepts what the check refuses")
	}
	d.Config = constant
	if err := CheckDeployment(d); err != nil {
		t.Errorf("constant timing: %v", err)
	}
	d.Config, d.ModelID = model, "Qwen/Qwen3-0.6B"
	if err := CheckDeployment(d); err != nil {
		t.Errorf("catalog model: %v", err)
	}
	arch, _ := perf.LookupModel("Qwen/Qwen3-0.6B")
	arch.ID = "acme/tiny"
	g, _ := perf.LookupGPU("L40S")
	perf, perr := perf.NewLane(arch, perf.Hardware{GPU: g, Count: 1, BytesPerElem: 2, Assume: perf.DefaultAssumptions(g)},
		perf.EngineConfig{MaxNumSeqs: 8, MaxBatchedTokens: 2048, ChunkedPrefill: true}, 4096)
	if perr != nil {
		t.Fatal(perr)
	}
	d.ModelID, d.Perf = "acme/tiny", &perf
	if err := CheckDeployment(d); err != nil {
		t.Errorf("architecture given (the plan's Perf): %v", err)
	}
}
