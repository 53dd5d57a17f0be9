// Package lang turns a directory of InferCrane *.hcl files into an evaluated,
// typed Config, reporting every problem as an hcl.Diagnostic with the
// narrowest source range.
package lang

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/lang/shape"
	"github.com/zclconf/go-cty/cty"
)

// Config is an evaluated InferCrane spec. Maps are keyed by block label.
type Config struct {
	// Dir is the directory the spec was loaded from.
	Dir string
	// Files holds the source of every file read, keyed by path, for
	// snippets in diagnostics and for the spec digest.
	Files map[string][]byte
	// VarFiles lists the variable files read (*.auto.vars.hcl, then
	// -var-file files), which are also in Files. They may hold secrets:
	// never copy their contents into plans or evidence.
	VarFiles []string
	// Secrets are the values of sensitive variables (every string and
	// number in them, as text), for redacting whatever text still carries
	// one. Expressions see those variables marked with SensitiveMark, and
	// the mark follows every value derived from them.
	Secrets []string
	// RequiredVersion is the infercrane block's version constraint, if any.
	RequiredVersion string
	// Backend is where the state is kept; nil keeps it in the local
	// state directory.
	Backend *Backend

	Variables map[string]*Variable
	Locals    map[string]cty.Value
	Traces    map[string]*Trace
	Models    map[string]*Model
	GPUs      map[string]*GPU
	Runtimes  map[string]*Runtime
	Executors map[string]*Executor
	Shapes    map[string]*Shape
	Searches  map[string]*Search
	Gates     map[string]*Gate
	Screens   map[string]*Screen
}

// Variable is an input variable with its final value.
type Variable struct {
	Name        string
	Type        cty.Type
	Description string
	Sensitive   bool
	// Value is the value after defaults, files, -var flags and the
	// environment were applied, converted to Type.
	Value     cty.Value
	DeclRange hcl.Range
}

// Trace is a serving trace and, once profiled, its workload profile.
type Trace struct {
	Name      string
	Source    string // local path or s3://bucket/key
	Region    string
	Anonymous bool
	Sample    *TraceSample
	// Profile is the path of a pinned workload profile, relative to the spec dir.
	Profile string
	// Digest pins the profile ("sha256:..."); plan refuses a mismatch.
	Digest string
	// ProfileDigest is the document digest of the workload profile the
	// trace resolved to (the digest `infercrane profile validate` prints),
	// given with the value in Options.Traces; empty while the trace is not
	// profiled.
	ProfileDigest string
	// MaxContext clips derived shapes to a context window (0: no clipping).
	MaxContext int
	// Executor, when set, is the executor block that profiles the trace
	// (a modal executor fans the scan out over sample.shards sandboxes).
	Executor *Executor
	// Value is the profile as seen by expressions (trace.NAME.input_tokens.p50);
	// cty.DynamicVal while the trace is not profiled yet.
	Value     cty.Value
	DeclRange hcl.Range
	// AttrRanges maps each attribute set in the block to its expression's
	// range, so that later stages can point diagnostics at it.
	AttrRanges map[string]hcl.Range
}

// TraceSample chooses which row groups and rows of a trace are profiled.
type TraceSample struct {
	RowGroups       int   // k row groups by the 10%..90% rule
	RowGroupIndices []int // explicit indices instead
	All             bool  // every row group (full scan)
	RowsPerGroup    int   // first N rows of each group (0: all)
	Sketch          bool  // sketch percentiles for a sample too (always with All)
	Quantiles       bool  // also sketch each distribution at a grid of quantiles
	Shards          int   // shards the trace's executor splits the row groups into
	DeclRange       hcl.Range
}

// Model is a model at a pinned revision with the facts the estimator needs.
type Model struct {
	Name       string
	ID         string // Hugging Face repo id, e.g. Qwen/Qwen3-0.6B
	Revision   string // commit hash; empty is a preflight warning
	MaxContext int
	// Config is the model's config.json the block pins (nil: the catalog's,
	// else the local Hugging Face cache's for Revision).
	Config *PinnedFile
	// Architecture overrides; zero means "take it from the model's config".
	Params  int64
	Layers  int
	Hidden  int
	Heads   int
	KVHeads int
	HeadDim int
	// Vocab is the vocabulary size: with hidden it sizes the embedding,
	// which prefill does not multiply every token by.
	Vocab     int
	DeclRange hcl.Range
	// AttrRanges maps each attribute set in the block to its expression's
	// range, so that later stages can point diagnostics at it.
	AttrRanges map[string]hcl.Range
}

// GPU is an accelerator type from the catalog, with optional estimator overrides.
type GPU struct {
	Name  string
	Type  string // catalog name, e.g. "L40S", "H100"
	Count int    // GPUs per deployment (tensor parallel), default 1
	// Optional overrides of the estimator's assumptions (nil: catalog default).
	PrefillMFU       *float64
	DecodeEfficiency *float64
	PricePerSecond   *float64
	// Calibration is the fitted assumptions file the gpu block pins (nil:
	// none).
	Calibration *CalibrationRef
	DeclRange   hcl.Range
}

// PinnedFile is a file a block references by path and pins by digest
// (calibration = "calib/l40s.json", calibration_digest = "sha256:...";
// config = "models/x/config.json", config_digest = "sha256:..."); the
// planner reads it and checks the digest.
type PinnedFile struct {
	File, Digest           string
	FileRange, DigestRange hcl.Range
}

// CalibrationRef is a calibration file a gpu or runtime block pins; the
// planner applies its fit for the lane's GPU type and runtime version.
type CalibrationRef = PinnedFile

// Runtime is a serving engine at a pinned version with its flags.
type Runtime struct {
	Name string
	// Runtime are the block's settings (package engine declares them);
	// an unset gpu_memory_utilization is its default, 0.9.
	engine.Runtime
	// ArgsSensitive is parallel to RuntimeArgs (nil when no arg is): true
	// where the arg's value derives from a sensitive variable.
	ArgsSensitive []bool
	// Calibration is the fitted assumptions file the runtime block pins
	// (nil: none); a gpu block's calibration takes precedence.
	Calibration *CalibrationRef
	DeclRange   hcl.Range
}

// Executor says where lanes run. Type selects the implementation; Attrs holds
// the remaining attributes, validated against that executor's schema. A
// value derived from a sensitive variable keeps its SensitiveMark there
// (possibly on an element or map entry only).
type Executor struct {
	Name string
	Type string // sim, endpoint, local, modal, or an external plugin name
	// Attrs are the attributes the block sets, as written (sensitive
	// values keep their marks).
	Attrs map[string]cty.Value
	// Settings are the attributes as the executor will run with them:
	// Attrs as JSON-like values with every default of the type's schema
	// applied and durations in canonical form (ExecutorSchema.Resolve); the
	// planner puts them in each lane. Nil when the block has errors.
	Settings map[string]any
	// Capabilities are what the executor type declares it does.
	Capabilities Capabilities
	DeclRange    hcl.Range
}

// Shape is a workload: token counts, load and request counts. Its
// settings are declared once in package shape (the embedded Settings);
// the block's arrival_curve, lengths, prefix, session and slo are decoded
// here.
type Shape struct {
	Name string
	// Settings are the shape's attributes, defaults applied. InputTokens
	// and OutputTokens are 0 while Pending names the unknown trace values
	// they depend on; Warmup is DefaultWarmup unless warmup or
	// warmup_seconds is set; ArrivalCurve and ArrivalCurveStepSeconds
	// come from an arrival_curve block.
	shape.Settings
	Pending []string
	SLO     SLO
	// Lengths, Prefix and Session shape the requests beyond one fixed
	// size (nil: unset).
	Lengths *Lengths
	Prefix  *Prefix
	Session *Session
	// Search names the search block that varies this shape's load (""
	// for none); it takes precedence over the screen's.
	Search    string
	DeclRange hcl.Range
	// AttrRanges maps each attribute set in the block to its expression's
	// range, so that later stages can point diagnostics at it.
	AttrRanges map[string]hcl.Range
}

// SLO holds the per-request objectives used for goodput; zero fields are unset.
type SLO struct {
	TTFTMs    float64
	TPOTMs    float64
	LatencyMs float64
}

// Gate is an acceptance condition over a lane's metrics. Condition refers to
// `lane.*` only and is evaluated by the report package (or Check), not by
// lang.
type Gate struct {
	Name      string
	Condition hcl.Expression
	// ConditionText is the condition's source: what the plan records and
	// ParseGate reads back (a gate is evaluated after the runs,
	// from the plan, not from the spec).
	ConditionText string
	// Metrics are the lane metric names the condition uses, as dotted
	// paths after lane. ("failed", "failures.timeout"), sorted.
	Metrics      []string
	ErrorMessage string
	// MinRuns makes the gate inconclusive with fewer runs (0: no minimum).
	MinRuns int
	// MaxCV makes the gate inconclusive when a throughput CV exceeds it (0: unset).
	MaxCV     float64
	DeclRange hcl.Range
}

// Screen is a campaign: the cross product of its models, shapes and GPUs.
type Screen struct {
	Name   string
	Models []string // model block names
	Shapes []string
	GPUs   []string
	// Runtime is the screen's one runtime (runtime = ...); Runtimes are
	// the runtimes it compares as lanes (runtimes = [...], in spec order;
	// nil unless set). At most one of them is set; see RuntimeNames.
	Runtime           string
	Runtimes          []string
	Executor          string // default: the built-in "sim" executor
	Runs              int
	Seed              int64
	Baseline          string // model name; comparisons are ratios against it
	Gates             []string
	SelectionBoundary string
	// Search names the search block applied to every shape of the screen
	// that has none of its own ("" for none).
	Search    string
	DeclRange hcl.Range
}

// RuntimeNames returns the runtimes the screen's lanes run on, in spec
// order: its runtimes, else its one runtime, else none (nil).
func (s *Screen) RuntimeNames() []string {
	if len(s.Runtimes) > 0 {
		return append([]string(nil), s.Runtimes...)
	}
	if s.Runtime != "" {
		return []string{s.Runtime}
	}
	return nil
}
