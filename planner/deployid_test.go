package planner

import (
	"encoding/json"
	"testing"

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
