package planner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/lang/engine"
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
	return hashID(b)
}

// hashID is the first idLen hex digits of the SHA-256 of b.
func hashID(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:idLen/2])
}

// LaneID is the content hash of a lane's inputs: its ID.
func LaneID(in LaneInputs) string { return shortHash(in) }

// deploymentKey is what makes two lanes share one server. Its JSON form
// is an object of the lane's model and GPU, then its runtime as
// engine.Runtime.KeyJSON writes it, then the seed and the executor.
type deploymentKey struct {
	model    deploymentModel
	runtime  engine.Runtime
	executor deploymentExecutor
}

type deploymentModel struct {
	ModelID    string `json:"model_id"`
	Revision   string `json:"revision"`
	MaxContext int    `json:"max_context"`
	GPUType    string `json:"gpu_type"`
	GPUCount   int    `json:"gpu_count"`
}

// deploymentModelOf is the model and GPU part of in's deployment key.
func deploymentModelOf(in LaneInputs) deploymentModel {
	return deploymentModel{ModelID: in.ModelID, Revision: in.Revision, MaxContext: in.MaxContext,
		GPUType: in.GPUType, GPUCount: in.GPUCount}
}

type deploymentExecutor struct {
	Seed           int64          `json:"seed"`
	ExecutorType   string         `json:"executor_type"`
	ExecutorConfig map[string]any `json:"executor_config"`
}

// MarshalJSON writes the key's three parts as one object.
func (k deploymentKey) MarshalJSON() ([]byte, error) {
	model, err := json.Marshal(k.model)
	if err != nil {
		return nil, err
	}
	exec, err := json.Marshal(k.executor)
	if err != nil {
		return nil, err
	}
	runtime := k.runtime.KeyJSON()
	out := append(model[:len(model)-1], ',')
	out = append(out, runtime[1:len(runtime)-1]...)
	out = append(out, ',')
	return append(out, exec[1:]...), nil
}

// DeploymentID is the short hash of the inputs that configure a lane's
// server: model and revision, context length, GPU type and count, the
// runtime (engine, version, dtype, args, limits), the server seed and the
// executor with its configuration. Lanes with equal DeploymentIDs share one
// server and run one after another on it.
//
// It hashes the key's MarshalJSON directly: json.Marshal would only copy it
// after checking it (it is made of json.Marshal's own output), which was a
// third of the time (a plan computes one a lane).
func DeploymentID(in LaneInputs) string {
	b, err := deploymentKey{
		model:    deploymentModelOf(in),
		runtime:  in.Runtime,
		executor: deploymentExecutor{Seed: in.Seed, ExecutorType: in.ExecutorType, ExecutorConfig: in.ExecutorConfig},
	}.MarshalJSON()
	if err != nil {
		panic("planner: hashing " + err.Error())
	}
	return hashID(b)
}

// deploymentIDs memoises DeploymentID over one expansion of a spec. A
// lane's deployment key is its model's and GPU's fields, its screen's seed
// and what its runtime and executor blocks resolve to (laneInputs derives
// the runtime settings, args and executor config from those blocks alone),
// so lanes with equal fields and the same two blocks share a deployment
// ID: the shapes of a screen, about ten lanes each in a large spec. The
// memo is keyed by that comparable value and hashes each deployment's
// JSON once, not once a lane.
type deploymentIDs map[deploymentOf]string

// deploymentOf is what decides a lane's deployment key within one
// expansion.
type deploymentOf struct {
	model    deploymentModel
	seed     int64
	runtime  *lang.Runtime  // nil: engine.Default()
	executor *lang.Executor // nil: the built-in sim executor
}

// of returns DeploymentID(in) for the lane of blocks b whose inputs are in.
func (ids deploymentIDs) of(in LaneInputs, b laneBlocks) string {
	k := deploymentOf{model: deploymentModelOf(in), seed: in.Seed, runtime: b.runtime, executor: b.executor}
	id, ok := ids[k]
	if !ok {
		id = DeploymentID(in)
		ids[k] = id
	}
	return id
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
