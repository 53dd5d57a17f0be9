package perf

import (
	"math"
	"strings"
)

// Assumptions are the constants of the roofline model that are not facts of
// the hardware. The plan prints them; a spec may override them per GPU.
type Assumptions struct {
	PrefillMFU           float64 `json:"prefill_mfu"`            // fraction of peak FLOPS in prefill
	DecodeEfficiency     float64 `json:"decode_efficiency"`      // fraction of peak bandwidth in decode
	StepOverheadMs       float64 `json:"step_overhead_ms"`       // scheduler and launch overhead per engine step
	RequestOverheadMs    float64 `json:"request_overhead_ms"`    // HTTP, tokenisation, detokenisation per request
	LoadBandwidthGBs     float64 `json:"load_bandwidth_gbs"`     // weight loading speed from the model cache
	ServerStartSeconds   float64 `json:"server_start_seconds"`   // engine start-up besides weight loading (graphs, warmup)
	ActivationReserveGB  float64 `json:"activation_reserve_gb"`  // memory kept free for activations and the CUDA context
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization"` // fraction of device memory the engine may use
	// RequestJitterMs spreads each request's way to the engine (the front
	// end's and the host's timing noise, which spreads TTFT beyond the step
	// loop's own phases) by an exponential of this mean around the request
	// overhead, which stays the median (Lane.RequestDelaySeconds); 0, the
	// catalog's value, is none. Calibration fits it from the spread of
	// measured TTFT percentiles.
	RequestJitterMs float64 `json:"request_jitter_ms,omitempty"`
	// FrontEndTokenUs is the front end's time per streamed output token
	// (detokenisation and the SSE chunk, in one API server process): the
	// client cannot receive tokens faster than one per this, however
	// fast the engine steps, so a step lasts at least its sampled tokens
	// times it (plus the step overhead). 0 (the catalog's value outside a
	// known engine version) is no bound.
	FrontEndTokenUs float64 `json:"front_end_token_us,omitempty"`
}

// DefaultAssumptions returns the catalog defaults for g.
func DefaultAssumptions(g GPU) Assumptions {
	return Assumptions{
		PrefillMFU:           g.PrefillMFU,
		DecodeEfficiency:     g.DecodeEfficiency,
		StepOverheadMs:       1.0,
		RequestOverheadMs:    2.0,
		LoadBandwidthGBs:     2.0,
		ServerStartSeconds:   45,
		ActivationReserveGB:  1.5,
		GPUMemoryUtilization: 0.9,
	}
}

// Hardware is a deployment's accelerators: Count GPUs of one type, with the
// model held at BytesPerElem bytes per parameter (2 for bf16).
type Hardware struct {
	GPU          GPU         `json:"gpu"`
	Count        int         `json:"count"`
	BytesPerElem int         `json:"bytes_per_elem"`
	Assume       Assumptions `json:"assumptions"`
}

func (h Hardware) count() float64 { return float64(max(h.Count, 1)) }

func (h Hardware) bytesPerElem() int {
	if h.BytesPerElem <= 0 {
		return 2
	}
	return h.BytesPerElem
}

// StepSeconds is the duration of one engine step that prefills prefillTokens
// (of one sequence) and decodes one token for each of decodeSeqs sequences
// whose KV caches hold kvTokens tokens in total (see StepTime).
func StepSeconds(m ModelArch, h Hardware, prefillTokens, decodeSeqs int, kvTokens float64) float64 {
	seqs := 0
	if prefillTokens > 0 {
		seqs = 1
	}
	return StepTime(m, h, prefillTokens, seqs, decodeSeqs, kvTokens)
}

// StepTime is the duration of one engine step that prefills prefillTokens
// of prefillSeqs sequences and decodes one token for each of decodeSeqs
// sequences, whose KV caches hold kvTokens tokens in total. It is the
// roofline maximum of the compute time and the memory time (weights plus
// KV cache read once per step), or their sum on a processor that does not
// overlap them (GPU.Serial, a CPU), plus a fixed step overhead. Compute counts
// 2 FLOPs per parameter per token for the transformer, but the output
// projection (vocab x hidden) only for the tokens that produce logits (one
// per sequence in the step): a prompt's other tokens only look up their
// embedding. Without a known vocab and hidden size, every parameter counts
// for every token.
func StepTime(m ModelArch, h Hardware, prefillTokens, prefillSeqs, decodeSeqs int, kvTokens float64) float64 {
	tokens := float64(prefillTokens + decodeSeqs)
	if tokens <= 0 {
		return 0
	}
	emb := math.Min(m.EmbeddingParams(), float64(m.Params))
	flops := 2 * ((float64(m.Params)-emb)*tokens + emb*float64(prefillSeqs+decodeSeqs))
	compute := flops / (h.count() * h.GPU.BF16TFLOPS * 1e12 * h.Assume.PrefillMFU)
	bytes := m.WeightBytes(h.bytesPerElem()) + kvTokens*m.KVBytesPerToken(h.bytesPerElem())
	memory := bytes / (h.count() * h.GPU.BandwidthGBs * 1e9 * h.Assume.DecodeEfficiency)
	if h.GPU.Serial {
		return compute + memory + h.Assume.StepOverheadMs/1000
	}
	return math.Max(compute, memory) + h.Assume.StepOverheadMs/1000
}

// KVCapacityTokens is how many tokens of KV cache fit beside the weights.
func KVCapacityTokens(m ModelArch, h Hardware) float64 {
	usable := h.count()*h.GPU.MemoryGB*1e9*h.Assume.GPUMemoryUtilization -
		m.WeightBytes(h.bytesPerElem()) - h.count()*h.Assume.ActivationReserveGB*1e9
	if usable <= 0 {
		return 0
	}
	return usable / m.KVBytesPerToken(h.bytesPerElem())
}

// StartupSeconds is the time from starting a server to its first healthy
// answer: weight loading plus engine start-up.
func StartupSeconds(m ModelArch, h Hardware) float64 {
	return m.WeightBytes(h.bytesPerElem())/(h.Assume.LoadBandwidthGBs*1e9) + h.Assume.ServerStartSeconds
}

// BytesPerElem is the weight and KV-cache element size of a runtime dtype
// (2 for auto, bfloat16, float16).
func BytesPerElem(dtype string) int {
	switch strings.ToLower(strings.TrimSpace(dtype)) {
	case "float32", "fp32", "float":
		return 4
	case "fp8", "float8", "int8":
		return 1
	default: // auto, bfloat16, float16, half
		return 2
	}
}
