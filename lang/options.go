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
	// the BuiltinExecutors with any attributes.
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
	// Capabilities are what the executor type does (Executor.Capabilities).
	Capabilities Capabilities
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

// Capabilities are what an executor type does that the spec language, the
// planner and the report must know. Each executor declares them where it
// registers (its schema), so that no package decides by comparing type
// names; an external plugin declares them in the schema it sends, and has
// none of them when it declares nothing.
type Capabilities struct {
	// Simulated: the executor runs the built-in simulated engine, so its
	// GPU time bills nothing (a lane's cost is notional) and its evidence
	// only plays the catalog's performance model back.
	Simulated bool `json:"simulated,omitempty"`
	// ExistingServer: the executor drives a server that is already
	// running: no deployment, no model load or start-up to pay for.
	ExistingServer bool `json:"existing_server,omitempty"`
	// ProfilesTraces: the executor can profile a trace on machines of its
	// own (a trace block's executor).
	ProfilesTraces bool `json:"profiles_traces,omitempty"`
	// Tokenizes: the servers it starts answer /tokenize, so prompts are
	// sized as the server counts them, chat template included.
	Tokenizes bool `json:"tokenizes,omitempty"`
	// OwnServerSetting names the setting with which a user runs a server
	// of their own instead, whose /tokenize is not assured ("" for none).
	OwnServerSetting string `json:"own_server_setting,omitempty"`
}

// BuiltinExecutors are the executor types accepted when
// Options.ExecutorSchemas is nil (the tests of packages below cmd, which
// cannot link the executors), with the capabilities their executors
// declare; TestLayersBuiltinCapabilities (cmd/infercrane) holds
// the two equal.
var BuiltinExecutors = map[string]Capabilities{
	"sim":      {Simulated: true, Tokenizes: true},
	"endpoint": {ExistingServer: true},
	"local":    {Tokenizes: true, OwnServerSetting: "command"},
	"modal":    {Tokenizes: true, ProfilesTraces: true},
}

// DefaultExecutorName is the name of the built-in executor used by a screen
// that names none. It has type "sim" unless the spec declares its own
// executor "sim".
const DefaultExecutorName = "sim"
