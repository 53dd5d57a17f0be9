// Package executor defines how lanes run: the Executor interface that every
// executor implements (built in or as a plugin), and the runner that walks a
// plan's DAG, journals every run and always tears down what it deployed.
package executor

import (
	"context"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner/perf"
)

// Executor deploys servers, runs benchmark runs against them and tears them
// down. Implementations must make Teardown idempotent and safe to call after
// a failed or cancelled Deploy.
type Executor interface {
	// Deploy starts (or connects to) a server for d and waits until it is healthy.
	Deploy(ctx context.Context, d Deployment) (*Server, error)
	// Run performs one benchmark run of a lane against s.
	Run(ctx context.Context, s *Server, r RunSpec) (*RunResult, error)
	// Teardown stops everything Deploy started.
	Teardown(ctx context.Context, s *Server) error
}

// Deployment is one server: a model on a GPU type with a runtime.
type Deployment struct {
	ID         string `json:"id"`
	ApplyID    string `json:"apply_id"`
	Screen     string `json:"screen"`
	ModelID    string `json:"model_id"`
	Revision   string `json:"revision"`
	MaxContext int    `json:"max_context"`
	GPUType    string `json:"gpu_type"`
	GPUCount   int    `json:"gpu_count"`
	// Runtime is the lane's runtime (package engine declares its
	// settings; an executor that starts vLLM passes Runtime.Flags).
	engine.Runtime
	Seed         int64  `json:"seed"`
	ExecutorType string `json:"executor_type"`
	// Config holds the lane's resolved executor settings (the plan's
	// executor_settings, sensitive values revealed): the executor decodes
	// them with DecodeSettings and keeps no defaults of its own.
	Config map[string]any `json:"config,omitempty"`
	// LogDir is where the executor writes server logs (in the state directory).
	LogDir string `json:"log_dir"`
	// Perf is the plan's resolved performance model of the deployment (nil
	// in plans without one): the simulated engine runs it, so a simulated
	// apply reproduces the plan's estimate under every override.
	Perf *perf.Lane `json:"perf,omitempty"`
	// Redact are the secrets among the deployment's values (sensitive
	// runtime args and executor settings); an executor removes them from
	// whatever it writes (server logs). In memory only.
	Redact []string `json:"-"`
}

// Server is a deployed, healthy server.
type Server struct {
	DeploymentID string `json:"deployment_id"`
	BaseURL      string `json:"base_url"`
	Model        string `json:"model"` // the served model name
	// Handle is the executor's own id for what it started (PID, sandbox id).
	Handle string `json:"handle"`
	// Info is recorded in the evidence environment (runtime version, GPU seen, ...).
	Info map[string]string `json:"info,omitempty"`
}

// RunSpec is one run of one lane.
type RunSpec struct {
	Lane string         `json:"lane"`
	Run  int            `json:"run"` // 1-based
	Load loadgen.Config `json:"load"`
	// RecordsPath, when set, is a file on this machine the executor may
	// stream the run's records to (JSONL, one loadgen.Record a line, as
	// they finish) instead of returning them in RunResult.Records; it then
	// sets RunResult.RecordsFile to it. Memory then stays flat in the
	// number of requests (RunLoad does this).
	RecordsPath string `json:"records_path,omitempty"`
}

// RunResult is what a run produced.
type RunResult struct {
	Summary loadgen.Summary  `json:"summary"`
	Records []loadgen.Record `json:"records"`
	// RecordsFile is set (to RunSpec.RecordsPath) when the records were
	// streamed there instead of being in Records.
	RecordsFile string `json:"records_file,omitempty"`
	// ServerMetrics are Prometheus samples scraped from the server during the
	// run (name -> last value), when it exposes /metrics.
	ServerMetrics map[string]float64 `json:"server_metrics,omitempty"`
	// ServerView is what the server's own latency histograms recorded
	// during the measured requests (nil when it exposes none).
	ServerView *loadgen.ServerView `json:"server_view,omitempty"`
	// ServerSeries samples the server's gauges (SeriesMetrics) over the
	// run, when it exposes /metrics.
	ServerSeries []loadgen.MetricSample `json:"server_series,omitempty"`
	// GPUSeconds is the measured GPU time this run used, when known.
	GPUSeconds float64 `json:"gpu_seconds,omitempty"`
	// ServerLost, when set, says the server did not answer a probe right
	// after a run with failed requests (what was asked and the error, e.g.
	// from ProbeServer): the runner then fails the run as an infrastructure
	// failure (InfrastructureFailure) instead of keeping it as a measurement.
	ServerLost string `json:"server_lost,omitempty"`
}

// AttrType is the type of an executor configuration attribute.
type AttrType string

// Attribute types an executor schema may use.
const (
	AttrString     AttrType = "string"
	AttrNumber     AttrType = "number"
	AttrBool       AttrType = "bool"
	AttrStringList AttrType = "list(string)"
	AttrDuration   AttrType = "duration" // a string such as "30m"
	AttrStringMap  AttrType = "map(string)"
)

// Attribute is one attribute of an executor block.
type Attribute struct {
	Name     string   `json:"name"`
	Type     AttrType `json:"type"`
	Required bool     `json:"required,omitempty"`
	Doc      string   `json:"doc"`
	// Min and Max bound a number, or a duration in seconds (nil: no bound).
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// Whole requires a number to be an integer.
	Whole bool `json:"whole,omitempty"`
	// Enum lists the values a string may take (empty: any).
	Enum []string `json:"enum,omitempty"`
	// Default is the value the planner resolves an unset attribute to, as
	// a JSON-like value (a duration as a string such as "30m"); nil: none,
	// the attribute stays out of the lane's settings and the executor
	// derives what it needs from the deployment (a free port, the lane's
	// model id). The schema is the only place an executor's defaults live.
	Default any `json:"default,omitempty"`
	// DefaultCap lowers Default to a share of another attribute's resolved
	// value when that is smaller (nil: none).
	DefaultCap *DefaultCap `json:"default_cap,omitempty"`
}

// DefaultCap makes an unset attribute's default min(Default, Share x the
// resolved value of Attr): Modal's health_timeout defaults to 20m, or two
// thirds of a shorter timeout. It applies to numbers and durations.
type DefaultCap struct {
	Attr  string  `json:"attr"`
	Share float64 `json:"share"`
}

// Bound returns a pointer to x, for Attribute.Min and Attribute.Max.
func Bound(x float64) *float64 { return &x }

// Seconds returns d in seconds, for duration bounds.
func Seconds(d time.Duration) *float64 { return Bound(d.Seconds()) }

// Schema describes the attributes an executor block of a type accepts,
// besides `type` itself, so the spec language can validate it, and what the
// executor does (its capabilities: the planner, the report and the spec
// language read them instead of comparing type names).
type Schema struct {
	Attributes   []Attribute       `json:"attributes"`
	Capabilities lang.Capabilities `json:"capabilities,omitzero"`
}

// Describer is implemented by executors that publish their config schema.
type Describer interface {
	Schema() Schema
}
