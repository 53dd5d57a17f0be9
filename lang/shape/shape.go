// Package shape declares a lane's workload-shape settings once: the Go
// struct Settings, whose field tags (read by package setting) give each
// setting's HCL name, JSON name, bounds, default, choices, documentation
// and role. The spec
// language derives its shape attributes and their checks from it
// (Fields), the planner's lane inputs embed it (so lane IDs hash it), and
// the load generator's config and the evidence's workload embed its
// Options (the settings that flow as they are: sent with each request
// and recorded).
//
// The package imports only lang/setting of the module, so every floor
// (and the sandbox load generator, which links no HCL) may use it.
//
// Adding a setting: add a field to Options with its tags and a doc
// comment, then the code that uses it. Its JSON tag must have omitempty
// and its zero value must mean the default (a pointer where the default
// is not the zero value), so a spec that does not set it keeps its lane
// ID; TestNewSettingsKeepLaneIDs checks that.
package shape

import "github.com/infercrane/infercrane/lang/setting"

// Fields lists the declared settings in their Settings order (Options'
// after the others).
var Fields = setting.MustParse[Settings]()

// Attributes lists the settings that are attributes of a shape block.
func Attributes() []setting.Field { return setting.Attributes(Fields()) }

// Lookup returns the setting whose HCL name is name.
func Lookup(name string) (setting.Field, bool) { return setting.Lookup(Fields(), name) }

// Arrival processes of an open loop (Settings.Arrival).
const (
	ArrivalConstant = "constant"
	ArrivalPoisson  = "poisson"
	ArrivalGamma    = "gamma"
)

// Settings are a lane's workload shape as the planner resolved it: the
// shape block's attributes (defaults applied) and the arrival curve's
// rates. Their JSON form is part of a lane's ID, in this field order: a
// field's place, name and omitempty are frozen.
//
// The tags are package setting's.
type Settings struct {
	// InputTokens is the prompt length of every request (the mean one
	// when a workload draws lengths).
	InputTokens int `json:"input_tokens" hcl:"input_tokens,trace" min:">0" max:"tokens" role:"lane" doc:"It is the prompt length of every request."`
	// OutputTokens is the number of tokens each request generates.
	OutputTokens int `json:"output_tokens" hcl:"output_tokens,trace" min:">0" max:"tokens" role:"lane" doc:"It is the number of tokens each request generates."`
	// TemplateHeadroom reserves room for the chat template in the context
	// window.
	TemplateHeadroom int `json:"template_headroom" hcl:"template_headroom" min:">=0" max:"tokens" default:"0" role:"lane" doc:"It reserves room for the chat template in the context window."`
	// Concurrency is the closed loop's requests in flight, or the cap on
	// them in an open loop.
	Concurrency int `json:"concurrency" hcl:"concurrency,required" min:">0" max:"1000000" role:"lane" doc:"It is the number of requests in flight at once."`
	// RequestRate is the open loop's requests per second (0: closed loop).
	RequestRate float64 `json:"request_rate,omitempty" hcl:"request_rate" min:">0" max:"1000000" role:"lane" doc:"It is the open-loop arrival rate in requests per second; leave it out for closed-loop load."`
	// Arrival is the open loop's arrival process ("" for a closed loop).
	Arrival string `json:"arrival,omitempty" hcl:"arrival" oneof:"constant poisson gamma" role:"lane"`
	// Burstiness is the gamma arrivals' shape (1 is Poisson; 0 for the
	// other processes).
	Burstiness float64 `json:"burstiness,omitempty" hcl:"burstiness" min:">0" max:"1000" role:"lane" doc:"It is the gamma shape parameter (1 = Poisson)."`
	// ArrivalCurve makes the open loop's rate vary: RequestRate times
	// ArrivalCurve[k] / mean during step k of ArrivalCurveStepSeconds
	// (from the shape's arrival_curve block).
	ArrivalCurve            []float64 `json:"arrival_curve,omitempty" hcl:"-" role:"lane"`
	ArrivalCurveStepSeconds float64   `json:"arrival_curve_step_seconds,omitempty" hcl:"-" role:"lane"`
	// Requests is the number of measured requests per run.
	Requests int `json:"requests" hcl:"requests,required" min:">0" max:"requests" role:"lane" doc:"It is the number of measured requests per run."`
	// Warmup is the number of unmeasured requests sent first.
	Warmup int `json:"warmup,omitempty" hcl:"warmup" min:">=0" max:"requests" role:"lane" doc:"It is the number of unmeasured requests sent first."`
	// WarmupSeconds bounds the warmup by time instead, or as well
	// (whichever ends first).
	WarmupSeconds float64 `json:"warmup_seconds,omitempty" hcl:"warmup_seconds" min:">=0.001 (the load generator times in whole milliseconds)" max:"seconds" role:"lane" doc:"It warms up for this many seconds; leave it out to warm up by count only."`
	// Streaming asks for streamed answers (TTFT needs them).
	Streaming bool `json:"streaming" hcl:"streaming" default:"true" role:"lane"`
	// API is the OpenAI-compatible API the requests use.
	API string `json:"api" hcl:"api" default:"chat" oneof:"chat completions" role:"lane"`
	// Options are the settings added since: each flows as it is into the
	// load generator's config and the evidence's workload.
	Options
}

// Options are the shape settings that flow unchanged from the spec to the
// load generator and into the evidence: the load generator's config and
// the evidence's workload embed Options, so a field added here is sent and
// recorded without a line elsewhere. Each field's JSON tag has omitempty
// and its zero value is its default (a pointer where it is not), so lanes
// that do not set it keep their IDs and evidence written before it
// existed still verifies.
type Options struct {
	// IgnoreEOS is sent as ignore_eos with every request: the server
	// generates max_tokens (output_tokens) whatever the model would stop
	// at. nil is the default, true; false lets the model stop early.
	IgnoreEOS *bool `json:"ignore_eos,omitempty" hcl:"ignore_eos" default:"true" role:"lane" doc:"It makes every request generate output_tokens whatever the model would stop at."`
}

// IgnoresEOS reports whether requests are sent with ignore_eos.
func (o Options) IgnoresEOS() bool { return o.IgnoreEOS == nil || *o.IgnoreEOS }

// Canonical returns s as a lane's inputs hold it: the open loop's
// arrival settings only with a request rate, the burstiness only with
// gamma arrivals (Poisson spelt out as the default process) and the
// chat API as the default.
func (s Settings) Canonical() Settings {
	if s.API == "" {
		s.API = "chat"
	}
	if s.RequestRate <= 0 {
		s.Arrival, s.Burstiness, s.ArrivalCurve, s.ArrivalCurveStepSeconds = "", 0, nil, 0
		return s
	}
	if s.Arrival == "" {
		s.Arrival = ArrivalPoisson
	}
	if s.Arrival != ArrivalGamma {
		s.Burstiness = 0
	}
	return s
}
