package perf

import "math"

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
// and decodes one token for each of decodeSeqs sequences whose KV caches hold
// kvTokens tokens in total. It is the roofline maximum of the compute time
// (2 x params FLOPs per token) and the memory time (weights plus KV cache
// read once per step), plus a fixed step overhead.
func StepSeconds(m ModelArch, h Hardware, prefillTokens, decodeSeqs int, kvTokens float64) float64 {
	tokens := float64(prefillTokens + decodeSeqs)
	if tokens <= 0 {
		return 0
	}
	compute := 2 * float64(m.Params) * tokens / (h.count() * h.GPU.BF16TFLOPS * 1e12 * h.Assume.PrefillMFU)
	bytes := m.WeightBytes(h.bytesPerElem()) + kvTokens*m.KVBytesPerToken(h.bytesPerElem())
	memory := bytes / (h.count() * h.GPU.BandwidthGBs * 1e9 * h.Assume.DecodeEfficiency)
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

// Workload is the load of one benchmark run.
type Workload struct {
	InputTokens  int
	OutputTokens int
	Concurrency  int     // closed-loop streams, or the cap in open-loop mode
	RequestRate  float64 // open loop when > 0
	Requests     int
}

// Estimate is the predicted behaviour of a workload in steady state.
type Estimate struct {
	TTFTMs float64 `json:"ttft_ms"`
	// TTFTP95Ms is the predicted 95th percentile of TTFT over one run. In
	// steady state a new request waits for the step in progress; in a
	// closed loop the first Concurrency requests also arrive together and
	// prefill in one batch, which sets the p95 when they are at least 5% of
	// the run's requests.
	TTFTP95Ms             float64 `json:"ttft_p95_ms,omitempty"`
	TPOTMs                float64 `json:"tpot_ms"`
	LatencyMs             float64 `json:"latency_ms"`
	OutputTokenThroughput float64 `json:"output_token_throughput"`
	RequestThroughput     float64 `json:"request_throughput"`
	// RunSeconds is the predicted duration of one run of Requests requests.
	RunSeconds float64 `json:"run_seconds"`
}

// EstimateWorkload predicts a workload's steady state on h with continuous
// batching: every in-flight sequence decodes once per step, and each new
// request's prefill joins one step of the others (chunked prefill), which is
// the interference that raises TPOT at high concurrency.
func EstimateWorkload(m ModelArch, h Hardware, w Workload) Estimate {
	in, out := max(w.InputTokens, 1), max(w.OutputTokens, 1)
	c := float64(max(w.Concurrency, 1))
	overhead := h.Assume.RequestOverheadMs / 1000

	var e Estimate
	var decodeStep, prefillStep float64
	// Open loop: the number in flight follows Little's law, capped by the
	// concurrency limit; iterate to the fixed point.
	inflight := c
	if w.RequestRate > 0 {
		inflight = 1
	}
	for iter := 0; iter < 50; iter++ {
		b := max(int(math.Round(inflight)), 1)
		avgKV := float64(b) * (float64(in) + float64(out)/2)
		decode := StepSeconds(m, h, 0, b, avgKV)
		withPrefill := StepSeconds(m, h, in, b-1, avgKV)
		prefill := StepSeconds(m, h, in, 0, 0)
		ttft := prefill + overhead
		if b > 1 {
			ttft += decode / 2 // waits for the step in progress
		}
		tpot := decode + float64(b-1)/float64(out)*math.Max(withPrefill-decode, 0)
		latency := ttft + float64(out-1)*tpot
		e = Estimate{TTFTMs: ttft * 1000, TPOTMs: tpot * 1000, LatencyMs: latency * 1000}
		decodeStep, prefillStep = 0, prefill
		if b > 1 {
			decodeStep = decode
		}
		e.RequestThroughput = float64(b) / latency
		if w.RequestRate <= 0 {
			break
		}
		next := math.Min(w.RequestRate*latency, c)
		e.RequestThroughput = math.Min(w.RequestRate, float64(b)/latency)
		if math.Abs(next-inflight) < 0.01 {
			break
		}
		inflight = (inflight + next) / 2
	}
	p95 := prefillStep + overhead + 0.95*decodeStep
	if w.RequestRate <= 0 && c > 1 && c/float64(max(w.Requests, 1)) >= 0.05 {
		burst := StepSeconds(m, h, int(c)*in, 0, 0) + overhead
		p95 = math.Max(p95, burst)
	}
	e.TTFTP95Ms = p95 * 1000
	e.OutputTokenThroughput = e.RequestThroughput * float64(out)
	if e.RequestThroughput > 0 {
		e.RunSeconds = float64(max(w.Requests, 1)) / e.RequestThroughput
	}
	return e
}
