package planner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"

	"github.com/infercrane/infercrane/lang"
)

// idLen is the number of hex digits of lane and deployment IDs (48 bits).
const idLen = 12

// shortHash returns the first idLen hex digits of the SHA-256 of the JSON
// form of v. encoding/json writes struct fields in declaration order and
// map keys sorted, so the result depends on the values alone.
func shortHash(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only plain data reaches here; a failure is a programming error.
		panic("planner: hashing " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:idLen]
}

// LaneID is the content hash of a lane's inputs: its ID.
func LaneID(in LaneInputs) string { return shortHash(in) }

// deploymentKey is what makes two lanes share one server.
type deploymentKey struct {
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

// DeploymentID is the short hash of the inputs that configure a lane's
// server: model and revision, context length, GPU type and count, the
// runtime (engine, version, dtype, args, limits), the server seed and the
// executor with its configuration. Lanes with equal DeploymentIDs share one
// server and run one after another on it.
func DeploymentID(in LaneInputs) string {
	return shortHash(deploymentKey{
		ModelID: in.ModelID, Revision: in.Revision, MaxContext: in.MaxContext,
		GPUType: in.GPUType, GPUCount: in.GPUCount,
		RuntimeEngine: in.RuntimeEngine, RuntimeVersion: in.RuntimeVersion,
		RuntimeDtype: in.RuntimeDtype, RuntimeArgs: in.RuntimeArgs,
		GPUMemoryUtil: in.GPUMemoryUtil, MaxNumSeqs: in.MaxNumSeqs, MaxBatchedTokens: in.MaxBatchedTokens,
		Seed:         in.Seed,
		ExecutorType: in.ExecutorType, ExecutorConfig: in.ExecutorConfig,
	})
}

// digestBytes is "sha256:" + the hex SHA-256 of b.
func digestBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// specFiles returns cfg.Files keyed by slash paths relative to cfg.Dir.
func specFiles(cfg *lang.Config) map[string][]byte {
	out := make(map[string][]byte, len(cfg.Files))
	for p, b := range cfg.Files {
		out[relPath(cfg.Dir, p)] = b
	}
	return out
}

// relPath makes p relative to dir when it lies below it; other paths (a
// -var-file elsewhere) become absolute, so they can be found again from
// any directory.
func relPath(dir, p string) string {
	if dir != "" {
		if r, err := filepath.Rel(dir, p); err == nil && !filepath.IsAbs(r) && r != ".." && !hasDotDotPrefix(r) {
			return filepath.ToSlash(r)
		}
	}
	if abs, err := filepath.Abs(p); err == nil {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(p)
}

func hasDotDotPrefix(r string) bool {
	return len(r) >= 3 && r[:3] == ".."+string(filepath.Separator)
}
