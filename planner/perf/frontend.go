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
	// CUDAStepMs, when set, is StepMs on a CUDA GPU, where the version's
	// CUDA graph mode decides how many kernels a step launches one by one
	// (cudaGraphStepMs).
	CUDAStepMs float64
	// TokenUs is the front end's time per streamed output token:
	// Assumptions.FrontEndTokenUs.
	TokenUs float64
	// AdmitUs is a batching front end's time to admit one request:
	// Assumptions.FrontEndAdmitUs.
	AdmitUs float64
	// IdleAlone: Assumptions.FrontEndIdleAlone.
	IdleAlone bool
	// SeqUs is the engine's time per sequence in a step:
	// Assumptions.StepSeqUs.
	SeqUs float64
	// Eager is which steps the version runs without a CUDA graph on a
	// CUDA GPU: Assumptions.EagerSteps.
	Eager EagerSteps
	// Source says where the figures come from.
	Source string
}

// Apply sets the overheads in a for an engine on g (a calibration's fit
// replaces the request and step overheads afterwards). On a CUDA GPU it
// sets which of the version's steps run without a CUDA graph and what
// their launches cost (eagerLayerUs), unless --enforce-eager already made
// it every step (RuntimeSettings.Assume); elsewhere there are no CUDA
// graphs and the step overhead holds the launches.
func (o EngineOverheads) Apply(a *Assumptions, g GPU) {
	a.RequestOverheadMs, a.StepOverheadMs, a.FrontEndTokenUs = o.RequestMs, o.StepOn(g), o.TokenUs
	a.FrontEndAdmitUs, a.FrontEndIdleAlone, a.StepSeqUs = o.AdmitUs, o.IdleAlone, o.SeqUs
	if g.Capability > 0 && o.Eager != EagerNone && a.EagerSteps != EagerAll {
		a.EagerSteps, a.EagerLayerUs = o.Eager, eagerLayerUs
	}
}

// StepOn is the step overhead on g: CUDAStepMs on a CUDA GPU when the
// version sets it, else StepMs.
func (o EngineOverheads) StepOn(g GPU) float64 {
	if o.CUDAStepMs > 0 && g.Capability > 0 {
		return o.CUDAStepMs
	}
	return o.StepMs
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
		o.CUDAStepMs, o.Eager = v0GraphStepMs, EagerUncaptured
	} else {
		o.CUDAStepMs = cudaGraphStepMs(version)
		if !versionAtLeast(version, 0, 12) {
			o.SeqUs = v1SeqUs
		}
	}
	if api == "" || api == "chat" {
		o.RequestMs += chatTemplateMs
		if versionAtLeast(version, 0, 8) && !versionAtLeast(version, 0, 12) {
			// vLLM's V1 API server up to 0.11 renders a chat request's
			// template on its one event loop before the request's first
			// await (the tokeniser's one-thread executor): requests sent
			// together are all rendered before any of them goes on to the
			// engine, so the front end batches them (see v1ChatAdmitUs).
			o.AdmitUs, o.TokenUs, o.IdleAlone = v1ChatAdmitUs, 0, true
			o.RequestMs += v1ChatLatencyMs
			o.Source = "vLLM 0.8-0.11 (V1) chat: the API server's event loop prepares the requests sent together one after another and they reach the engine together, each 45 ms later than a completion at low load, fitted to published measurements"
		}
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
	// v1ChatAdmitUs is the V1 API server's time to prepare one chat
	// request before it goes to the engine, for vLLM 0.8 to 0.11, in a
	// batching front end (Assumptions.FrontEndAdmitUs; like vLLM before
	// 0.8's, it does not queue the streaming of the output behind the
	// admissions, which a closed loop's streams would otherwise pay in
	// lockstep).
	//
	// The mechanism is in vLLM's source and issues: up to 0.11,
	// OpenAIServing._preprocess_chat
	// (vllm/entrypoints/openai/serving_engine.py) resolves the chat
	// template's content format and renders the template synchronously
	// on the API server's one event loop (one process: vLLM RFC #12705;
	// in PR #26134, October 2025, the HF template render was kept there)
	// and only then awaits the tokeniser on a one-thread executor
	// (ThreadPoolExecutor(max_workers=1), vLLM issue #25301), so the
	// requests of a burst are all prepared before they reach the engine.
	// A request that finds the front end idle goes through at once
	// (IdleAlone), at its own request overhead, as at low load.
	//
	// What it costs: vLLM PR #19735 measured 3x the requests per second
	// for Qwen3-0.6B chat requests of one output token once the
	// template's content-format detection (a Jinja parse) is skipped, a
	// short chat request costing about three times a completion. The
	// 15 ms is fitted by hand to the fit set's one point the figure
	// moves, GPUStack's H100 burst of 1,000 chat requests of 128/4
	// tokens on vLLM 0.11 (22.7 s, 44 requests a second; TTFT p50 18.1 s
	// and p99 22.6 s: the burst reached the engine late and together,
	// not one request at a time from the start; TPOT 597 ms: its
	// requests decoded beside full prefill steps).
	// docs/performance-model.md has the held-out figures.
	//
	// Later versions keep the one-at-a-time front end: vLLM moved chat
	// preparation into renderers (PR #30200) and by 0.25.1 renders the
	// template on the renderer's thread pool (vllm/renderers/base.py,
	// renderer_num_workers 1, as NVIDIA-NeMo/RL PR #3581 cites it), off
	// the event loop; and vLLM 0.32's CPU build at two chat streams fits
	// the one-at-a-time front end (TestFitOfRealVLLMRunsReproducesTheirTTFT:
	// with the batching one the fit's TTFT p50 comes out 16% over the
	// runs'). Which release between 0.12 and 0.25 stopped rendering on
	// the event loop is not established: 0.11 is the last one known to.
	v1ChatAdmitUs = 15000.0
	// v1ChatLatencyMs is the further time a chat request of vLLM 0.8 to
	// 0.11 spends on its way to the engine at low load, a latency that
	// does not hold up the requests behind it (RequestMs, not AdmitUs).
	// GPUStack's Qwen3-8B page (docs/performance-lab/qwen3-8b/
	// h100-latency.md: `vllm serve Qwen/Qwen3-8B`, vLLM 0.11.0, one H100
	// SXM, vllm bench serve on ShareGPT chat, 100 requests) measured a
	// median TTFT of 60.38, 64.78, 60.26 and 60.77 ms at 1, 2, 4 and 8
	// requests in flight, flat in the load, where a lone prefill of its
	// ~233 tokens takes a few milliseconds and the same client measured
	// 27.25 ms against SGLang on the same machine: about 45 ms more than
	// the completions requests of vLLM 0.9.1 (Tenstorrent's A100 points,
	// 11.4 ms at 128 tokens, c=1) pay. Flat in the load, it is not the
	// event loop's serial work (that is v1ChatAdmitUs: a burst of 1,000
	// such requests took 22.7 s, not 1,000 x 45 ms); which await holds
	// it is not established. Fitted by hand to the BS=1 and BS=8 points;
	// BS=2 and BS=4 are held out (docs/performance-model.md).
	v1ChatLatencyMs = 45.0
	// v1SeqUs is the V1 engine's time per sequence in a step outside the
	// GPU for vLLM 0.8 to 0.11 (Assumptions.StepSeqUs), whatever the API:
	// the engine core's Python work for each scheduled request (the
	// scheduler's loop over the running requests, the model runner's
	// input preparation, the output processing of each sampled token),
	// which these versions run between the GPU's steps: scheduling was
	// synchronous by default until vLLM's async scheduling, which
	// overlaps it with the GPU's work, became the default (vLLM PR
	// #27614, the last item of the async scheduling plan, issue #27679,
	// October-December 2025; on by default from 0.14).
	//
	// What it costs: GPUStack's Qwen3-8B page (h100-latency.md, vLLM
	// 0.11) measured a median TPOT of 7.22, 7.30, 7.40 and 7.67 ms at 1,
	// 2, 4 and 8 chat streams, 64 us a step for each stream more, about
	// twice what the stream's KV cache reads add; and GPUStack's bursts
	// of 1,000 ShareGPT chat requests (vLLM 0.11) decoded at 106-123 ms
	// a token where the GPU's work alone gives 86-110 (Qwen3-14B and
	// Qwen3-32B on an A100, up to 256 sequences a step). The 65 us is
	// chosen on the fit set of published measurements (the mean of its
	// output tokens/s and TPOT errors outside the weak regimes is least
	// at 65 of 40-100 in steps of 5); the held-out set checks it
	// (docs/performance-model.md). vLLM 0.19 (kvcached's Qwen3-0.6B
	// bursts) shows no such cost, and before 0.8 the V0 engine's
	// multi-step scheduling ran ten decode steps a schedule in the
	// measurements here (LambdaLabsML's; inferred from their chunked
	// inter-token latencies), so neither has it. Which
	// release between 0.12 and 0.19 lost it is not established; 0.11 is
	// the last one measured with it.
	v1SeqUs = 65.0
)

// FrontEndAPI is the API whose front end serves requests of api to a
// model whose chat vLLM renders with openai_harmony when harmony is set
// (arch.Config.HarmonyChat: gpt-oss): api itself, but such a chat goes
// the way of a completion. vLLM's chat server renders a gpt-oss
// conversation with openai_harmony (serving_chat.py: use_harmony,
// _make_request_with_harmony instead of _preprocess_chat), not through
// the Jinja chat template whose preparation the chat front end's figures
// are (chatTemplateMs, and the 0.8-0.11 event loop's v1ChatAdmitUs and
// v1ChatLatencyMs).
func FrontEndAPI(harmony bool, api string) string {
	if harmony && (api == "" || api == "chat") {
		return "completions"
	}
	return api
}

// cudaGraphStepMs is the V1 engine's step overhead on a CUDA GPU, which
// its CUDA graph mode sets. Up to 0.10 V1 captures piecewise graphs:
// the pieces between the attention layers replay as graphs and every
// layer's attention launches on its own, so each decode step launches a
// few kernels a layer from Python. vLLM 0.11 made FULL_AND_PIECEWISE the
// default (vllm-project/vllm PR #25444, September 2025), which replays a
// whole decode-only step as one graph; the PR measured Qwen3-Coder
// 30B-A3B FP8 on one H100 (ten requests of 1,024/128 sent together) at
// 4.07 requests a second with piecewise graphs and 5.98 with
// FULL_AND_PIECEWISE, about 6 ms less a step for a model of 48 layers.
//
// The figures are fitted by hand to the fit set's single-stream TPOTs
// (planner/perf/testdata/published), each point's step overhead being
// its TPOT less the model's weight and KV reads: Tenstorrent's Qwen3-1.7B
// on an A100 under vLLM 0.9.1 (TPOT 4.6 and 4.7 ms at 128 and 1,024
// output tokens: 2.5 ms a step), GPUStack's Qwen3-8B on an H100 under
// vLLM 0.11 (7.22 ms at one stream, 7.67 at eight: 1.1 and 1.4 ms) and
// kvcached's Qwen3-0.6B on an H100 under vLLM 0.19 (2.39 ms at 16
// requests a second: 1.7 ms). docs/performance-model.md has the held-out
// check. A processor without CUDA keeps StepMs.
//
// Each figure was then lowered by what its fitting points' steps spent
// in their multiplies' fixed time, which the model now charges apart
// (layerMultiplyUs a layer: 0.53 ms for the 28 layers of Qwen3-0.6B and
// 1.7B, 0.68 for the 36 of Qwen3-8B): 2.5 ms to 2.0, 1.4 to 0.8, and the
// V0 engine's 2 ms on a CUDA GPU to 1.4 (v0GraphStepMs; its fitting
// points are Llama 3 8B's and Mistral 7B's 32 layers).
func cudaGraphStepMs(version string) float64 {
	if versionAtLeast(version, 0, 11) {
		return fullGraphStepMs
	}
	return piecewiseGraphStepMs
}

// The fitted step overheads of cudaGraphStepMs.
const (
	piecewiseGraphStepMs = 2.0
	fullGraphStepMs      = 0.8
	// v0GraphStepMs is the V0 engine's step overhead on a CUDA GPU
	// (frontEndStepMs elsewhere).
	v0GraphStepMs = 1.4
)

// FrontEndMs is FrontEnd's request overhead (the catalog's 2 ms for an
// engine it does not know).
func FrontEndMs(engine, version, api string) float64 {
	if o, ok := FrontEnd(engine, version, api); ok {
		return o.RequestMs
	}
	return 2.0
}
