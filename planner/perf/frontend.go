package perf

// EngineOverheads are a serving engine version's costs outside the GPU's
// arithmetic, which the roofline leaves out.
type EngineOverheads struct {
	// RequestMs is a request's way through the front end before the
	// engine core can schedule it (HTTP and the API server, the chat
	// template and tokenisation, the hop to the engine core):
	// Assumptions.RequestOverheadMs.
	RequestMs float64
	// StepMs is the engine core's time per step besides the GPU's
	// (scheduling, input preparation, sampling, output processing):
	// Assumptions.StepOverheadMs.
	StepMs float64
	// TokenUs is the front end's time per streamed output token:
	// Assumptions.FrontEndTokenUs.
	TokenUs float64
	// AdmitUs is a batching front end's time to admit one request:
	// Assumptions.FrontEndAdmitUs.
	AdmitUs float64
	// Source says where the figures come from.
	Source string
}

// FrontEnd returns the overheads of engine at version serving api
// ("chat" or "completions"), and whether the catalog knows them (false:
// the catalog's generic 2 ms per request and 1 ms per step, no token
// bound). The figures are fitted to the fit set of published vLLM
// measurements (planner/perf/testdata/published/vllm.json; the held-out
// set checks them; docs/performance-model.md).
func FrontEnd(engine, version, api string) (EngineOverheads, bool) {
	if engine != "vllm" {
		return EngineOverheads{}, false
	}
	o := EngineOverheads{RequestMs: frontEndRequestMs, StepMs: frontEndStepMs, TokenUs: frontEndTokenUs,
		Source: "vLLM >= 0.8 (V1: API server and engine core in separate processes), fitted to published measurements"}
	if !versionAtLeast(version, 0, 8) {
		o.Source = "vLLM < 0.8 (V0 engine), fitted to published measurements"
		o.TokenUs, o.AdmitUs = 0, v0AdmitUs
	}
	if api == "" || api == "chat" {
		o.RequestMs += chatTemplateMs
	}
	return o, true
}

// The fitted figures (see FrontEnd).
var (
	frontEndRequestMs = 6.0
	frontEndStepMs    = 2.0
	frontEndTokenUs   = 35.0
	chatTemplateMs    = 1.0
	v0AdmitUs         = 2500.0
)

// FrontEndMs is FrontEnd's request overhead (the catalog's 2 ms for an
// engine it does not know).
func FrontEndMs(engine, version, api string) float64 {
	if o, ok := FrontEnd(engine, version, api); ok {
		return o.RequestMs
	}
	return 2.0
}
