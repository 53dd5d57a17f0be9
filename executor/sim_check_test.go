package executor

import (
	"strings"
	"testing"

	"github.com/infercrane/infercrane/planner"
)

// TestCheckSimDeployment: model timing without a performance model (a
// model outside the catalog with no architecture, so the plan has no
// Perf) is refused as Deploy would refuse it, saying what to set; the plan's
// own performance model, a catalog model and constant timing pass.
func TestCheckSimDeployment(t *testing.T) {
	model := map[string]any{"timing": "model", "speedup": 1.0, "ttft": "20ms", "itl": "5ms", "max_waiting": 0.0}
	constant := map[string]any{"timing": "constant", "speedup": 1.0, "ttft": "20ms", "itl": "5ms", "max_waiting": 0.0}
	d := Deployment{ID: "d", ModelID: "foo/bar-7b", GPUType: "L40S", GPUCount: 1, MaxContext: 4096, MaxNumSeqs: 8, MaxBatchedTokens: 2048, GPUMemoryUtil: 0.9, Config: model}
	err := CheckSimDeployment(d)
	if err == nil || !strings.Contains(err.Error(), "foo/bar-7b is neither in the catalog nor given one") || !strings.Contains(err.Error(), `timing = "constant"`) {
		t.Fatalf("unknown model in model timing: %v", err)
	}
	if _, derr := (&SimExecutor{settings: SimSettings{Timing: "model", Speedup: 1}}).Deploy(t.Context(), d); derr == nil {
		t.Fatal("Deploy accepts what the check refuses")
	}
	d.Config = constant
	if err := CheckSimDeployment(d); err != nil {
		t.Errorf("constant timing: %v", err)
	}
	d.Config, d.ModelID = model, "Qwen/Qwen3-0.6B"
	if err := CheckSimDeployment(d); err != nil {
		t.Errorf("catalog model: %v", err)
	}
	arch, _ := planner.LookupModel("Qwen/Qwen3-0.6B")
	arch.ID = "acme/tiny"
	g, _ := planner.LookupGPU("L40S")
	perf, perr := planner.NewPerfLane(arch, planner.Hardware{GPU: g, Count: 1, BytesPerElem: 2, Assume: planner.DefaultAssumptions(g)},
		planner.EngineConfig{MaxNumSeqs: 8, MaxBatchedTokens: 2048, ChunkedPrefill: true}, 4096)
	if perr != nil {
		t.Fatal(perr)
	}
	d.ModelID, d.Perf = "acme/tiny", &perf
	if err := CheckSimDeployment(d); err != nil {
		t.Errorf("architecture given (the plan's Perf): %v", err)
	}
}
