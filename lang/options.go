package lang

import (
	"github.com/zclconf/go-cty/cty"
)

// Options control how Load finds variable values and what it checks
// against knowledge that lives in higher packages (executor schemas, the
// GPU catalog, the trace profiler).
type Options struct {
	// Vars are "name=value" assignments from -var flags, applied in order
	// after every variable file (the last assignment wins).
	Vars []string
	// VarFiles are variable files from -var-file flags, applied in order
	// after the *.auto.vars.hcl files of the spec directory.
	VarFiles []string
	// Environ is the process environment (os.Environ()); INFERCRANE_VAR_name
	// entries set variables with the lowest precedence above defaults.
	Environ []string
	// ExecutorSchemas describes the built-in executor types. Nil accepts
	// the built-in types sim, endpoint, local and modal with any attributes.
	ExecutorSchemas map[string]ExecutorSchema
	// ExternalExecutors finds executor types that are not in
	// ExecutorSchemas (external plugins). Load consults it only when a spec
	// names such a type, so nothing is started for specs that use built-ins
	// only. Nil: no external types.
	ExternalExecutors ExternalExecutors
	// Traces are the traces resolved before this Load, by trace name: the
	// profile values a first Load left unknown, found by the planner's
	// trace step (planner/workload.ResolveTraces). Load itself reads no
	// trace and touches no network: a trace without an entry is "not
	// profiled yet", every value derived from it stays unknown and shapes
	// list it in Shape.Pending.
	Traces map[string]ResolvedTrace
	// Static makes Load a static decode (validate, and the first decode
	// of the planner's trace step): a value that must be known but depends
	// on a trace not in Traces is a warning instead of an error.
	Static bool
	// GPUTypes are the GPU catalog names (planner.GPUNames()); a gpu block with
	// another type is an error that suggests the closest names. Nil skips
	// the check.
	GPUTypes []string
	// IsGPUType accepts a gpu type (for aliases such as "A100" or other
	// spellings the catalog understands). Nil accepts the GPUTypes names,
	// ignoring case.
	IsGPUType func(string) bool
	// LaneMetrics are the names a gate condition may use after lane. (the
	// report's lane object: "failed", "ttft_p95_ms", "failures", ...); a
	// gate that uses another name is an error that suggests the closest.
	// Nil skips the check.
	LaneMetrics []string
	// Version is the running infercrane version ("0.1.0"), checked against
	// infercrane { required_version }. Empty skips the check.
	Version string
}

// ResolvedTrace is a trace's profile as a value (see TraceValueType) and
// the digest of the profile document it came from.
type ResolvedTrace struct {
	Value         cty.Value
	ProfileDigest string
}

// ExternalExecutors are executor types known only by asking (plugins).
type ExternalExecutors interface {
	// Types lists the type names that exist (for suggestions).
	Types() []string
	// Schema returns the schema of one of Types.
	Schema(typ string) (ExecutorSchema, error)
}

// ExecutorSchema lists the attributes an executor type accepts besides type.
type ExecutorSchema struct {
	// Attributes by name.
	Attributes map[string]AttributeSpec
	// Resolve completes the block's attributes (JSON-like values: string,
	// float64, bool, []any, map[string]any) into the settings the executor
	// will run with: the schema's defaults applied, durations in canonical
	// form. Nil: the settings are the attributes as given.
	Resolve func(attrs map[string]any) map[string]any
	// Check validates the resolved settings as the executor will read
	// them: types, bounds, enumerations, rules across attributes. Each
	// problem is reported at its attribute, or at the block when Attr is
	// empty. Nil checks nothing more.
	Check func(settings map[string]any) []AttrProblem
}

// AttrProblem is one problem ExecutorSchema.Check found.
type AttrProblem struct {
	// Attr names the attribute at fault ("" for the block as a whole).
	Attr string
	// Detail says what is wrong and what to write instead.
	Detail string
}

// AttributeSpec is the type and presence rule of one executor attribute.
type AttributeSpec struct {
	// Type the value is converted to; cty.DynamicPseudoType accepts any.
	Type cty.Type
	// Required makes the attribute mandatory.
	Required bool
	// Doc describes the attribute (shown when it is missing).
	Doc string
}

// BuiltinExecutorTypes are the executor types accepted when
// Options.ExecutorSchemas is nil.
var BuiltinExecutorTypes = []string{"sim", "endpoint", "local", "modal"}

// DefaultExecutorName is the name of the built-in executor used by a screen
// that names none. It has type "sim" unless the spec declares its own
// executor "sim".
const DefaultExecutorName = "sim"
