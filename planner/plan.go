// Package planner compiles a lang.Config into a Plan: the lanes to run, the
// DAG that orders their work, preflight findings and cost estimates.
//
// Each lane's figures are resolved with the performance model, package
// planner/perf (perf.Lane): the GPU catalog, a roofline model of one serving
// step, the engine's scheduler and step loop, their virtual-time runs and
// the calibration fit. The plan carries each lane's resolved model, and the
// simulated engine (executor/sim) runs the same step loop on it in real
// time, so a simulated screen reproduces what the plan predicted.
package planner

import (
	"fmt"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/lang/shape"
	"github.com/infercrane/infercrane/planner/load"
	"github.com/infercrane/infercrane/planner/perf"
	"github.com/infercrane/infercrane/planner/search"
)

// FormatVersion is the version of the plan JSON format this infercrane
// writes. Version 2 added each lane's resolved executor_settings, which
// apply hands to the executors; a version 1 plan is still read (diff, show,
// report) but not applied (see Applicable).
const FormatVersion = "2"

// readableVersions are the plan format versions this infercrane reads.
var readableVersions = []string{"1", FormatVersion}

// Applicable reports why apply must refuse p, or nil: a plan of an
// earlier format lacks what this infercrane's executors run from.
func Applicable(p *Plan) error {
	if p.FormatVersion != FormatVersion {
		return fmt.Errorf("%w: the plan has format_version %q, made by an earlier infercrane that left executor settings to the executors; this infercrane applies format_version %q plans, whose lanes carry their resolved executor_settings", ErrPlanFormat, p.FormatVersion, FormatVersion)
	}
	return nil
}

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
// JSON form (-json, -out) is this struct. Fields added to it (or to the
// types it holds) after format_version 1 must be omitempty, so a plan an
// earlier release wrote re-encodes to the same bytes and keeps its digest.
type Plan struct {
	FormatVersion     string `json:"format_version"`
	InfercraneVersion string `json:"infercrane_version"`
	// ModelRevision is the revision of the performance model the
	// estimates come from (perf.ModelRevision): a diff of two plans shows
	// when their estimates differ because the model changed. Absent from
	// plans made before it was recorded.
	ModelRevision string `json:"model_revision,omitempty"`
	SpecDigest    string `json:"spec_digest"`
	// PlanDigest is "sha256:" + hex of the canonical JSON of the plan
	// without this field (see Marshal).
	PlanDigest string         `json:"plan_digest,omitempty"`
	Variables  map[string]any `json:"variables"`
	Screens    []*Screen      `json:"screens"`
	Lanes      []*Lane        `json:"lanes"`
	Preflight  []Finding      `json:"preflight"`
	Totals     Totals         `json:"totals"`
	// Assumptions are the estimator's constants per GPU block, so a reviewer
	// sees what the estimates rest on.
	Assumptions []Assumption `json:"assumptions"`
	Graph       Graph        `json:"graph"`
	// Traces are the workload profiles the spec's traces resolved to, by
	// name, for the evidence's provenance (absent when the spec profiles
	// no trace, and from plans made before they were recorded).
	Traces []TraceProfile `json:"traces,omitempty"`
	// ReportChanges name, in words, what changed since the state's reports
	// were made that changes them without rerunning a lane (a gate's
	// condition, the gates a screen lists, ...) in a plan with no lane to
	// run or drop: apply then saves this plan in the state and makes the
	// reports again. Empty when the reports are up to date with the plan,
	// and when lanes run or drop (apply makes the reports again then).
	ReportChanges []string `json:"report_changes,omitempty"`

	// secrets are the values of the spec's sensitive variables and of
	// every value derived from them, in memory only (see Secrets).
	secrets []string
}

// Secrets lists every secret value the plan knows of (sensitive variables
// and the real values of redacted lane inputs), for redacting any text
// before it is written; empty for a plan read from a file.
func (p *Plan) Secrets() []string {
	out := append([]string(nil), p.secrets...)
	for _, l := range p.Lanes {
		out = append(out, l.SecretValues()...)
	}
	return out
}

// SecretValues lists the real values of the lane's redacted inputs
// (sensitive runtime args and executor attributes); nil for a lane read
// from a file.
func (l *Lane) SecretValues() []string {
	s := l.Inputs.Secrets
	if s == nil {
		return nil
	}
	var out []string
	for _, v := range s.RuntimeArgs {
		out = append(out, v)
	}
	for _, m := range []map[string]any{s.ExecutorConfig, s.ExecutorSettings} {
		for _, v := range m {
			out = append(out, leafText(v)...)
		}
	}
	return out
}

// leafText lists the strings inside a JSON-like value.
func leafText(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, leafText(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range x {
			out = append(out, leafText(e)...)
		}
		return out
	}
	return nil
}

// Screen is the screen-level part of a plan: what the report needs besides lanes.
type Screen struct {
	Name     string   `json:"name"`
	Baseline string   `json:"baseline,omitempty"` // model block name
	Gates    []string `json:"gates,omitempty"`
	// GateSpecs are the screen's gates as the report evaluates them, in
	// the order of Gates: the report and verify read them from here, never
	// from the spec.
	GateSpecs         []Gate `json:"gate_specs,omitempty"`
	SelectionBoundary string `json:"selection_boundary,omitempty"`
	Seed              int64  `json:"seed"`
	Runs              int    `json:"runs"`
	// Runtimes are the runtime blocks the screen compares as lanes, in
	// spec order, the first being the reference the report compares the
	// others with; absent for a screen with one runtime (or none).
	Runtimes []string `json:"runtimes,omitempty"`
	Totals   Totals   `json:"totals"`
}

// Gate is a gate block resolved for the report: its condition as source
// text (lang.ParseGate reads it back) and the lane metrics it uses, checked
// against the report's names when the spec was loaded.
type Gate struct {
	Name         string   `json:"name"`
	Condition    string   `json:"condition"`
	Metrics      []string `json:"metrics"`
	ErrorMessage string   `json:"error_message,omitempty"`
	MinRuns      int      `json:"min_runs,omitempty"`
	MaxCV        float64  `json:"max_cv,omitempty"`
}

// Lane is one (screen, model, shape, gpu, runtime, executor) with Runs runs.
type Lane struct {
	// ID is a short content hash of Inputs: stable under reordering and
	// reformatting of the spec, changed by any input that affects results.
	ID string `json:"id"`
	// Key names the lane's position in the spec ("screen/model/shape/gpu",
	// and "/runtime" after it when the screen compares several runtimes);
	// a lane whose Key is in the state under another ID is a rerun.
	Key        string `json:"key"`
	Screen     string `json:"screen"`
	Model      string `json:"model"`
	Shape      string `json:"shape"`
	GPU        string `json:"gpu"`
	Runtime    string `json:"runtime"`
	Executor   string `json:"executor"`
	Deployment string `json:"deployment"` // ID shared by lanes on one server
	Action     Action `json:"action"`
	// Reason says why the lane has its action, in words ("new lane",
	// "inputs changed", "forced by -replace", "1 of 2 runs done", ...).
	Reason        string   `json:"reason,omitempty"`
	ChangedInputs []string `json:"changed_inputs"`
	// Supersedes is the ID of the lane in the state that a rerun replaces.
	Supersedes string `json:"supersedes,omitempty"`
	Runs       int    `json:"runs"`
	// RunsDone counts the lane's runs (of 1..Runs) complete in the state;
	// RunsComplete lists them when they are not simply 1..RunsDone (a gap:
	// an earlier run's records were lost), so exactly the others run.
	RunsDone       int        `json:"runs_done"`
	RunsComplete   []int      `json:"runs_complete,omitempty"`
	RequestsPerRun int        `json:"requests_per_run"`
	Inputs         LaneInputs `json:"inputs"`
	// ExecutorSettings are the settings the lane's executor runs with,
	// resolved once here: the executor block's attributes with every
	// default of the type's schema applied and durations in canonical form
	// (e.g. Modal's timeout, the sim's timing). Every executor, built in or
	// a plugin, receives exactly these (see RevealedSettings). They are
	// derived from ExecutorType and ExecutorConfig, which the lane's ID
	// covers, so they are not hashed again. Values shown Redacted in
	// ExecutorConfig are redacted here too. Format version 2 on.
	ExecutorSettings map[string]any `json:"executor_settings,omitempty"`
	// Perf is the performance model's input for the lane after every
	// override (model, gpu and runtime blocks): the estimate is computed
	// from it and the simulated engine serves from it. Nil when the model's
	// architecture or the GPU type is unknown.
	Perf *perf.Lane `json:"perf,omitempty"`
	// Calibration says the lane's assumptions come from a calibration
	// file's fit (nil: the catalog's, with its stated uncertainty).
	Calibration *Calibrated `json:"calibration,omitempty"`
	Estimate    Estimate    `json:"estimate"`
	// Notes are lane-specific remarks for the reviewer (pending trace
	// values, estimates unavailable).
	Notes []string `json:"notes,omitempty"`
	// Search is a capacity search's predicted knee, expected points and
	// progress (nil for a lane with a fixed load).
	Search *LaneSearch `json:"search,omitempty"`
}

// Work reports whether apply has something to do for the lane.
func (l *Lane) Work() bool { return l.Action == ActionRun || l.Action == ActionRerun }

// RunsToDo is the number of runs apply will make for the lane.
func (l *Lane) RunsToDo() int {
	if !l.Work() {
		return 0
	}
	return max(l.Runs-l.RunsDone, 0)
}

// ExpectedRuns is the number of runs apply is expected to make for the
// lane: RunsToDo, but for a capacity search the points the plan expects it
// to run (LaneSearch.Expected), which stops before max_points when it has
// found the knee. RunsToDo is then the most it makes.
func (l *Lane) ExpectedRuns() int {
	n := l.RunsToDo()
	if l.Search != nil && len(l.Search.Expected) > 0 {
		return min(len(l.Search.Expected), n)
	}
	return n
}

// RunDone reports whether run n (1-based) of the lane is complete in the
// state the plan was made against, so apply does not make it.
func (l *Lane) RunDone(n int) bool {
	if l.RunsComplete == nil {
		return n <= l.RunsDone
	}
	for _, c := range l.RunsComplete {
		if c == n {
			return true
		}
	}
	return false
}

// LaneInputs are everything that affects a lane's results. The executor runs
// a lane from these alone, so apply works from a saved plan.
type LaneInputs struct {
	ModelID    string `json:"model_id"`
	Revision   string `json:"revision"`
	MaxContext int    `json:"max_context"`
	// Settings are the lane's workload shape (package shape declares
	// them, and where each sits in this JSON).
	shape.Settings
	SLOTTFTMs    float64 `json:"slo_ttft_ms,omitempty"`
	SLOTPOTMs    float64 `json:"slo_tpot_ms,omitempty"`
	SLOLatencyMs float64 `json:"slo_latency_ms,omitempty"`
	GPUType      string  `json:"gpu_type"`
	GPUCount     int     `json:"gpu_count"`
	// Runtime is the lane's runtime block (package engine declares its
	// settings, and where each sits in this JSON).
	engine.Runtime
	// FrontEndAPI is the API whose engine front end the lane's requests go
	// through when it is not the shape's api (perf.FrontEndAPI: gpt-oss
	// chat goes the way of a completion); empty otherwise.
	FrontEndAPI    string         `json:"front_end_api,omitempty"`
	ExecutorType   string         `json:"executor_type"`
	ExecutorConfig map[string]any `json:"executor_config,omitempty"`
	Seed           int64          `json:"seed"`
	// Workload draws lengths, shares prefixes or holds sessions (nil: every
	// request has the fixed token counts and shares nothing).
	Workload *load.Spec `json:"workload,omitempty"`
	// Pending names trace values the lane's token counts wait for
	// ("trace.chutes.input_tokens.p50"); empty once the trace is profiled.
	Pending []string `json:"pending,omitempty"`
	// Search is the capacity search that sets each run's load (nil: every
	// run has the load above). A searched lane's runs are the search's
	// points; its concurrency, request_rate and requests above are
	// placeholders (1, 0, requests per point).
	Search *search.Spec `json:"search,omitempty"`

	// Secrets holds, in memory only, the real values of the inputs shown as
	// Redacted above (sensitive runtime args and executor attributes); it
	// is never encoded, so no plan file, state or evidence holds them. A
	// plan read from a file has none: apply re-evaluates them from the
	// variables (see Reveal).
	Secrets *LaneSecrets `json:"-"`
	// Capabilities are what the lane's executor type declares it does
	// (lang.Executor.Capabilities), in memory only: the planner decides
	// by them while it builds the plan; they are in no lane ID and no file.
	// A plan read from a file gets them back from the built-in executors'
	// declarations (restoreCapabilities); an external plugin's lane reads
	// as billed and deploying, as a plugin is.
	Capabilities lang.Capabilities `json:"-"`
}

// LaneSecrets are the real values of a lane's redacted inputs.
type LaneSecrets struct {
	// RuntimeArgs maps an index of RuntimeArgs to its real value.
	RuntimeArgs map[int]string
	// ExecutorConfig maps an attribute of ExecutorConfig to its real value.
	ExecutorConfig map[string]any
	// ExecutorSettings maps a redacted entry of Lane.ExecutorSettings to
	// its real value.
	ExecutorSettings map[string]any
}

// RevealedSettings returns the lane's executor settings with the real
// values of redacted ones put back, for handing to an executor; never
// write them anywhere.
func (l *Lane) RevealedSettings() map[string]any {
	if len(l.ExecutorSettings) == 0 {
		return nil
	}
	out := make(map[string]any, len(l.ExecutorSettings))
	for k, v := range l.ExecutorSettings {
		out[k] = v
	}
	if s := l.Inputs.Secrets; s != nil {
		for k, v := range s.ExecutorSettings {
			out[k] = v
		}
	}
	return out
}

// Revealed returns a copy of the inputs with the real values of redacted
// inputs put back, for handing to an executor. Everything that is written
// anywhere must use the inputs themselves, never this copy.
func (in LaneInputs) Revealed() LaneInputs {
	if in.Secrets == nil {
		return in
	}
	out := in
	out.Secrets = nil
	if len(in.Secrets.RuntimeArgs) > 0 {
		out.RuntimeArgs = append([]string(nil), in.RuntimeArgs...)
		for i, v := range in.Secrets.RuntimeArgs {
			if i >= 0 && i < len(out.RuntimeArgs) {
				out.RuntimeArgs[i] = v
			}
		}
	}
	if len(in.Secrets.ExecutorConfig) > 0 {
		out.ExecutorConfig = make(map[string]any, len(in.ExecutorConfig))
		for k, v := range in.ExecutorConfig {
			out.ExecutorConfig[k] = v
		}
		for k, v := range in.Secrets.ExecutorConfig {
			out.ExecutorConfig[k] = v
		}
	}
	return out
}

// HasRedacted reports whether the inputs show a sensitive value as
// Redacted, which an executor needs in clear.
func (in LaneInputs) HasRedacted() bool {
	for _, a := range in.RuntimeArgs {
		if a == Redacted {
			return true
		}
	}
	for _, v := range in.ExecutorConfig {
		if containsRedacted(v) {
			return true
		}
	}
	return false
}

func containsRedacted(v any) bool {
	switch x := v.(type) {
	case string:
		return x == Redacted
	case []any:
		for _, e := range x {
			if containsRedacted(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if containsRedacted(e) {
				return true
			}
		}
	}
	return false
}

// Estimate is a lane's prediction from virtual-time runs of its
// performance model (Lane.Perf). The latency and throughput figures
// describe one run; WallSeconds,
// GPUSeconds and CostUSD cover the work this plan will do for the lane
// (its remaining runs plus its share of its deployment's start-up), so they
// are zero for unchanged lanes.
type Estimate struct {
	perf.Estimate
	// Available is false when the model's architecture is unknown or the
	// lane's inputs are pending; the other fields are then zero.
	Available   bool    `json:"available"`
	WallSeconds float64 `json:"wall_seconds"`
	GPUSeconds  float64 `json:"gpu_seconds"`
	CostUSD     float64 `json:"cost_usd"`
	// StartupSeconds is the lane's share of its deployment's model load and
	// server start (included in WallSeconds).
	StartupSeconds float64 `json:"startup_seconds"`
	// Uncertainty is the relative half-width of each figure's range: from
	// the calibration's residuals, or the catalog's stated uncertainty.
	Uncertainty *perf.Uncertainty `json:"uncertainty,omitempty"`
}

// Assumption is the set of estimator constants used for one GPU block.
type Assumption struct {
	GPU     string `json:"gpu"`      // gpu block name
	GPUType string `json:"gpu_type"` // catalog name
	// Count is the GPUs per deployment.
	Count               int     `json:"count"`
	MemoryGB            float64 `json:"memory_gb"`
	BandwidthGBs        float64 `json:"bandwidth_gbs"`
	BF16TFLOPS          float64 `json:"bf16_tflops"`
	PricePerSecond      float64 `json:"price_per_second"`
	PrefillMFU          float64 `json:"prefill_mfu"`
	DecodeEfficiency    float64 `json:"decode_efficiency"`
	StepOverheadMs      float64 `json:"step_overhead_ms"`
	RequestOverheadMs   float64 `json:"request_overhead_ms"`
	LoadBandwidthGBs    float64 `json:"load_bandwidth_gbs"`
	ServerStartSeconds  float64 `json:"server_start_seconds"`
	ActivationReserveGB float64 `json:"activation_reserve_gb"`
	// Overridden lists the fields the spec set (the rest are catalog defaults).
	Overridden []string `json:"overridden,omitempty"`
}

// Severity of a preflight finding.
type Severity string

// Finding severities: errors block apply, warnings and notes do not.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityNote    Severity = "note"
)

// Finding is one preflight result. Lane is set for lane findings, Screen for
// screen-wide ones; spec-wide findings (a model without a revision) have
// neither.
type Finding struct {
	Severity Severity `json:"severity"`
	Lane     string   `json:"lane,omitempty"`
	Screen   string   `json:"screen,omitempty"`
	Summary  string   `json:"summary"`
	Detail   string   `json:"detail"`
}

// Totals sum the lanes that will run.
type Totals struct {
	LanesToRun int `json:"lanes_to_run"`
	Unchanged  int `json:"unchanged"`
	Dropped    int `json:"dropped"`
	// Runs and Requests are what apply is expected to make (a capacity
	// search's expected points, Lane.ExpectedRuns); RunsAtMost and
	// RequestsAtMost, set when a search may make more, are the bound
	// (every search to its max_points).
	Runs           int     `json:"runs"`
	Requests       int     `json:"requests"`
	RunsAtMost     int     `json:"runs_at_most,omitempty"`
	RequestsAtMost int     `json:"requests_at_most,omitempty"`
	GPUSeconds     float64 `json:"gpu_seconds"`
	CostUSD        float64 `json:"cost_usd"`
	// WithoutEstimate counts lanes to run whose cost is unknown (pending
	// trace values or an unknown model), so the totals are a lower bound.
	WithoutEstimate int `json:"without_estimate,omitempty"`
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
	Trace      string   `json:"trace,omitempty"`
	Run        int      `json:"run,omitempty"`
	// Always marks nodes that run even when their dependencies failed
	// (teardown): the runner starts them once every dependency has ended,
	// whatever the outcome.
	Always bool `json:"always,omitempty"`
}

// Edge says From must finish before To starts.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// restoreCapabilities gives the lanes of a plan read from a file the
// capabilities their executor types declare (lang.BuiltinExecutors, which
// TestLayersBuiltinCapabilities holds equal to the registrations), since
// the plan's JSON does not carry them.
func restoreCapabilities(p *Plan) {
	for _, l := range p.Lanes {
		if l != nil {
			l.Inputs.Capabilities = lang.BuiltinExecutors[l.Inputs.ExecutorType]
		}
	}
}
