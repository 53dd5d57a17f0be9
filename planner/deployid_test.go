package planner

import (
	"encoding/json"
	"testing"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/lang/engine"
)

// TestGoldenDeploymentIDsRoundTrip: the inputs of every golden lane, read
// into LaneInputs (the runtime embedded from package engine) and hashed
// as a deployment, give the lane's deployment ID.
func TestGoldenDeploymentIDsRoundTrip(t *testing.T) {
	n := 0
	for f, lanes := range goldenPlanLanes(t) {
		for _, l := range lanes {
			n++
			if got := DeploymentID(l.Inputs); got != l.Deployment {
				t.Errorf("%s: lane %s's deployment hashes to %s now, the plan says %s", f, l.ID, got, l.Deployment)
			}
		}
	}
	if n < 5 {
		t.Fatalf("only %d golden lanes", n)
	}
}

// legacyDeploymentKey is the deployment key as it was written before the
// runtime's settings were declared in package engine: the bytes every
// existing deployment ID hashes.
type legacyDeploymentKey struct {
	ModelID          string         `json:"model_id"`
	Revision         string         `json:"revision"`
	MaxContext       int            `json:"max_context"`
	GPUType          string         `json:"gpu_type"`
	GPUCount         int            `json:"gpu_count"`
	RuntimeEngine    string         `json:"runtime_engine"`
	RuntimeVersion   string         `json:"runtime_version"`
	RuntimeDtype     string         `json:"runtime_dtype"`
	RuntimeArgs      []string       `json:"runtime_args"`
	GPUMemoryUtil    float64        `json:"gpu_memory_utilization"`
	MaxNumSeqs       int            `json:"max_num_seqs"`
	MaxBatchedTokens int            `json:"max_num_batched_tokens"`
	Seed             int64          `json:"seed"`
	ExecutorType     string         `json:"executor_type"`
	ExecutorConfig   map[string]any `json:"executor_config"`
}

// TestDeploymentIDsKeepTheirBytes: the deployment key writes what the
// legacy key wrote, zero limits, an empty dtype, null args and HTML-like
// characters included, so no deployment of an existing spec changes.
func TestDeploymentIDsKeepTheirBytes(t *testing.T) {
	for _, r := range []engine.Runtime{
		{},
		engine.Default(),
		{RuntimeEngine: "vllm", RuntimeVersion: "0.22.1", RuntimeDtype: "bfloat16", RuntimeArgs: []string{"--max-model-len", "8192", "--x=<&>"},
			GPUMemoryUtil: 0.85, MaxNumSeqs: 64, MaxBatchedTokens: 4096},
		{RuntimeEngine: "vllm", GPUMemoryUtil: 1e-7, MaxBatchedTokens: 1},
	} {
		in := LaneInputs{ModelID: "Qwen/Qwen3-0.6B", Revision: "abc", MaxContext: 8192, GPUType: "L40S", GPUCount: 2,
			Runtime: r, Seed: 17, ExecutorType: "modal", ExecutorConfig: map[string]any{"timeout": "30m", "gpu": []any{"a", 1.5}, "cmd": "a<b&c>\u2028"}}
		want := shortHash(legacyDeploymentKey{
			ModelID: in.ModelID, Revision: in.Revision, MaxContext: in.MaxContext, GPUType: in.GPUType, GPUCount: in.GPUCount,
			RuntimeEngine: r.RuntimeEngine, RuntimeVersion: r.RuntimeVersion, RuntimeDtype: r.RuntimeDtype, RuntimeArgs: r.RuntimeArgs,
			GPUMemoryUtil: r.GPUMemoryUtil, MaxNumSeqs: r.MaxNumSeqs, MaxBatchedTokens: r.MaxBatchedTokens,
			Seed: in.Seed, ExecutorType: in.ExecutorType, ExecutorConfig: in.ExecutorConfig,
		})
		if got := DeploymentID(in); got != want {
			b, _ := json.Marshal(deploymentKey{runtime: r})
			t.Errorf("runtime %+v: deployment %s, the legacy key gives %s (key %s)", r, got, want, b)
		}
	}
}

// TestMemoisedDeploymentIDs: a plan's deployment IDs, memoised over the
// expansion by model, GPU, seed and blocks, are each lane's own
// DeploymentID: lanes that differ only in a runtime (one with a sensitive
// arg), an executor (none: the sim), a seed or a GPU count get their own,
// and the shapes of one model on one deployment, in any screen, share it.
func TestMemoisedDeploymentIDs(t *testing.T) {
	cfg := fixture()
	other := *cfg.Runtimes["vllm"]
	other.Name, other.RuntimeArgs, other.ArgsSensitive = "vllm_secret", []string{"--api-key", "s3cret"}, []bool{false, true}
	cfg.Runtimes["vllm_secret"] = &other
	cfg.GPUs["l40s2"] = &lang.GPU{Name: "l40s2", Type: "L40S", Count: 2}
	fixed := cfg.Screens["qwen_l40s"]
	several := *fixed
	several.Name, several.Runtime, several.Runtimes, several.GPUs = "several", "", []string{"vllm", "vllm_secret"}, []string{"l40s", "l40s2"}
	sim := several
	sim.Name, sim.Executor = "sim", ""
	reseeded := *fixed
	reseeded.Name, reseeded.Seed = "reseeded", fixed.Seed+1
	for _, s := range []*lang.Screen{&several, &sim, &reseeded} {
		cfg.Screens[s.Name] = s
	}
	p := build(t, cfg)
	lanes, deployments := 0, map[string]bool{}
	for _, l := range p.Lanes {
		lanes++
		deployments[l.Deployment] = true
		if want := DeploymentID(l.Inputs); l.Deployment != want {
			t.Errorf("%s: deployment %s, its inputs hash to %s", l.Key, l.Deployment, want)
		}
	}
	// 2 models x 2 shapes on the fixture's 2 deployments and on 2 of
	// its seed + 1; 2 models x 2 GPUs x 2 runtimes x 2 shapes on 8
	// deployments of modal (2 of them the fixture's) and 8 of the sim.
	if lanes != 2*4+2*16 || len(deployments) != 2+2+8-2+8 {
		t.Errorf("%d lanes on %d deployments, want 40 on 18", lanes, len(deployments))
	}
}
