// Package planner compiles a lang.Config into a Plan: the lanes to run, the
// DAG that orders their work, preflight findings and cost estimates.
package planner

import "github.com/infercrane/infercrane/planner/perf"

// FormatVersion is the version of the plan JSON format.
const FormatVersion = "1"

// Action is what apply will do with a lane.
type Action string

// The lane actions.
const (
	ActionRun   Action = "run"   // new lane
	ActionRerun Action = "rerun" // inputs changed, or forced with -replace
	ActionNoop  Action = "noop"  // unchanged and complete in the state
	ActionDrop  Action = "drop"  // in the state but no longer in the spec
)

// Plan is the compiled, reviewable form of a spec. It is plain data: the
// JSON form (-json, -out) is this struct.
type Plan struct {
	FormatVersion     string         `json:"format_version"`
	InfercraneVersion string         `json:"infercrane_version"`
	SpecDigest        string         `json:"spec_digest"`
	PlanDigest        string         `json:"plan_digest"`
	Variables         map[string]any `json:"variables"`
	Screens           []*Screen      `json:"screens"`
	Lanes             []*Lane        `json:"lanes"`
	Preflight         []Finding      `json:"preflight"`
	Totals            Totals         `json:"totals"`
	Graph             Graph          `json:"graph"`
}

// Screen is the screen-level part of a plan: what the report needs besides lanes.
type Screen struct {
	Name              string   `json:"name"`
	Baseline          string   `json:"baseline,omitempty"` // model block name
	Gates             []string `json:"gates,omitempty"`
	SelectionBoundary string   `json:"selection_boundary,omitempty"`
	Seed              int64    `json:"seed"`
	Runs              int      `json:"runs"`
	Totals            Totals   `json:"totals"`
}

// Lane is one (screen, model, shape, gpu, runtime, executor) with Runs runs.
type Lane struct {
	// ID is a short content hash of Inputs: stable under reordering and
	// reformatting of the spec, changed by any input that affects results.
	ID string `json:"id"`
	// Key names the lane's position in the spec ("screen/model/shape/gpu"); a
	// lane whose Key is in the state under another ID is a rerun.
	Key            string     `json:"key"`
	Screen         string     `json:"screen"`
	Model          string     `json:"model"`
	Shape          string     `json:"shape"`
	GPU            string     `json:"gpu"`
	Runtime        string     `json:"runtime"`
	Executor       string     `json:"executor"`
	Deployment     string     `json:"deployment"` // ID shared by lanes on one server
	Action         Action     `json:"action"`
	ChangedInputs  []string   `json:"changed_inputs"`
	Runs           int        `json:"runs"`
	RunsDone       int        `json:"runs_done"`
	RequestsPerRun int        `json:"requests_per_run"`
	Inputs         LaneInputs `json:"inputs"`
	Estimate       Estimate   `json:"estimate"`
}

// LaneInputs are everything that affects a lane's results. The executor runs
// a lane from these alone, so apply works from a saved plan.
type LaneInputs struct {
	ModelID          string         `json:"model_id"`
	Revision         string         `json:"revision"`
	MaxContext       int            `json:"max_context"`
	InputTokens      int            `json:"input_tokens"`
	OutputTokens     int            `json:"output_tokens"`
	TemplateHeadroom int            `json:"template_headroom"`
	Concurrency      int            `json:"concurrency"`
	RequestRate      float64        `json:"request_rate,omitempty"`
	Arrival          string         `json:"arrival,omitempty"`
	Burstiness       float64        `json:"burstiness,omitempty"`
	Requests         int            `json:"requests"`
	Warmup           int            `json:"warmup,omitempty"`
	Streaming        bool           `json:"streaming"`
	API              string         `json:"api"`
	SLOTTFTMs        float64        `json:"slo_ttft_ms,omitempty"`
	SLOTPOTMs        float64        `json:"slo_tpot_ms,omitempty"`
	SLOLatencyMs     float64        `json:"slo_latency_ms,omitempty"`
	GPUType          string         `json:"gpu_type"`
	GPUCount         int            `json:"gpu_count"`
	RuntimeEngine    string         `json:"runtime_engine"`
	RuntimeVersion   string         `json:"runtime_version"`
	RuntimeDtype     string         `json:"runtime_dtype,omitempty"`
	RuntimeArgs      []string       `json:"runtime_args"`
	GPUMemoryUtil    float64        `json:"gpu_memory_utilization"`
	MaxNumSeqs       int            `json:"max_num_seqs,omitempty"`
	MaxBatchedTokens int            `json:"max_num_batched_tokens,omitempty"`
	ExecutorType     string         `json:"executor_type"`
	ExecutorConfig   map[string]any `json:"executor_config,omitempty"`
	Seed             int64          `json:"seed"`
}

// Estimate is a lane's prediction from the roofline model.
type Estimate struct {
	perf.Estimate
	WallSeconds float64 `json:"wall_seconds"`
	GPUSeconds  float64 `json:"gpu_seconds"`
	CostUSD     float64 `json:"cost_usd"`
}

// Severity of a preflight finding.
type Severity string

// Finding severities: errors block apply, warnings do not.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Finding is one preflight result.
type Finding struct {
	Severity Severity `json:"severity"`
	Lane     string   `json:"lane,omitempty"`
	Summary  string   `json:"summary"`
	Detail   string   `json:"detail"`
}

// Totals sum the lanes that will run.
type Totals struct {
	LanesToRun int     `json:"lanes_to_run"`
	Unchanged  int     `json:"unchanged"`
	Runs       int     `json:"runs"`
	Requests   int     `json:"requests"`
	GPUSeconds float64 `json:"gpu_seconds"`
	CostUSD    float64 `json:"cost_usd"`
}

// NodeKind is the kind of a DAG node.
type NodeKind string

// The DAG node kinds of the design.
const (
	NodeProfile   NodeKind = "profile"
	NodeDeploy    NodeKind = "deploy"
	NodePreflight NodeKind = "preflight"
	NodeRun       NodeKind = "run"
	NodeAggregate NodeKind = "aggregate"
	NodeGates     NodeKind = "gates"
	NodeCompare   NodeKind = "compare"
	NodeReport    NodeKind = "report"
	NodeTeardown  NodeKind = "teardown"
)

// Graph is the plan's DAG as data.
type Graph struct {
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges"`
}

// Node is one unit of work in the DAG.
type Node struct {
	ID         string   `json:"id"` // e.g. "run.ab12cd34.1"
	Kind       NodeKind `json:"kind"`
	Lane       string   `json:"lane,omitempty"`
	Deployment string   `json:"deployment,omitempty"`
	Screen     string   `json:"screen,omitempty"`
	Run        int      `json:"run,omitempty"`
}

// Edge says From must finish before To starts.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
}
