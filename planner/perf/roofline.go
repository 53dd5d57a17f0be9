package perf

import (
	"math"
	"strings"

	"github.com/infercrane/infercrane/planner/arch"
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
	// (detokenisation and the SSE chunk, in one API server process). The
	// front end serves one request at a time, for its request overhead
	// and its output's streaming (Lane.FrontEndBusySeconds), so a burst
	// enters the engine at that pace. 0 (the catalog's value outside a
	// known engine version) is no such queue.
	FrontEndTokenUs float64 `json:"front_end_token_us,omitempty"`
	// FrontEndAdmitUs is a batching front end's time to admit one
	// request (Lane.FrontEndAdmitSeconds): the requests sent while it is
	// busy admitting enter the engine together when it is done. 0 (the
	// catalog's value outside vLLM before 0.8) is no batching.
	FrontEndAdmitUs float64 `json:"front_end_admit_us,omitempty"`
	// FrontEndIdleAlone makes a batching front end that is idle when a
	// request comes hand that request over at its own delay (the request
	// overhead) instead of holding it for the busy period it starts; the
	// requests sent while it is busy are still held and enter together
	// (Engine.Arrive). vLLM's V1 chat front end (FrontEnd).
	FrontEndIdleAlone bool `json:"front_end_idle_alone,omitempty"`
	// StepSeqUs is the engine's time per sequence in a step besides the
	// GPU's (Python work for each scheduled request: scheduling, input
	// preparation, output processing), which adds to StepOverheadMs: a
	// step of n sequences costs StepOverheadMs + n x StepSeqUs outside
	// the GPU. 0 (the catalog's value outside the engine versions that
	// measured it, FrontEnd) is none.
	StepSeqUs float64 `json:"step_seq_us,omitempty"`
	// AsyncScheduling overlaps part of the StepSeqUs work with the GPU's
	// (AsyncOverlapShare): the engine core prepares the next step while
	// the GPU runs this one, so a step of n sequences lasts the larger of
	// the GPU's time and that share of n x StepSeqUs, plus the rest of it
	// and StepOverheadMs (stepCost.at). RuntimeSettings.AsyncScheduling
	// sets it.
	AsyncScheduling bool `json:"async_scheduling,omitempty"`
	// InterconnectEfficiency is the fraction of the GPU link's bandwidth
	// tensor parallelism's all-reduces reach, AllReduceLatencyUs the fixed
	// time of each (allReduce).
	InterconnectEfficiency float64 `json:"interconnect_efficiency,omitempty"`
	AllReduceLatencyUs     float64 `json:"allreduce_latency_us,omitempty"`
	// MoERoutingSpread narrows the routed experts a batch reaches below
	// uniform routing's (1; arch.ExpectedExperts).
	MoERoutingSpread float64 `json:"moe_routing_spread,omitempty"`
	// OmitAttention leaves attention's own FLOPs (attentionSeconds) out
	// of a step's compute, as the model did before issue 27 counted them
	// (docs/performance-model.md, "Attention's own FLOPs"). The catalog
	// counts them: attention's two matrix multiplies are work the GPU
	// does. It exists to measure the model without them
	// (TestPublishedMeasurements' -perf.noattention flag).
	OmitAttention bool `json:"omit_attention,omitempty"`
	// EagerSteps is which steps launch their kernels one by one instead
	// of replaying a CUDA graph, and EagerLayerUs the launches of one
	// layer in such a step, which run beside the GPU's work: the step
	// lasts at least Layers x EagerLayerUs (stepCost.launch). The engine
	// version sets both on a CUDA GPU (EngineOverheads.Apply; 0 and none
	// elsewhere), --enforce-eager makes it every step
	// (RuntimeSettings.Assume).
	EagerSteps   EagerSteps `json:"eager_steps,omitempty"`
	EagerLayerUs float64    `json:"eager_layer_us,omitempty"`
}

// DefaultAssumptions returns the catalog defaults for g.
func DefaultAssumptions(g GPU) Assumptions {
	eff, lat := interconnectDefaults(g)
	return Assumptions{
		InterconnectEfficiency: eff,
		AllReduceLatencyUs:     lat,
		MoERoutingSpread:       1,
		PrefillMFU:             g.PrefillMFU,
		DecodeEfficiency:       g.DecodeEfficiency,
		StepOverheadMs:         1.0,
		RequestOverheadMs:      2.0,
		LoadBandwidthGBs:       2.0,
		ServerStartSeconds:     45,
		ActivationReserveGB:    1.5,
		GPUMemoryUtilization:   0.9,
	}
}

// Hardware is a deployment's accelerators: Count GPUs of one type (the
// tensor-parallel size), with the model held at BytesPerElem bytes per
// parameter and KV element (2 for bf16) or, when Precision is set, at its
// widths and compute format (quantised weights, an FP8 KV cache).
type Hardware struct {
	GPU   GPU `json:"gpu"`
	Count int `json:"count"`
	// Stages is the pipeline-parallel stages (--pipeline-parallel-size;
	// 0 or 1: none): the deployment spans Count x Stages GPUs, each stage
	// Count of them (tensor-parallel) holding 1/Stages of the layers and
	// of the KV cache. vLLM's V1 engine keeps Stages micro-batches in
	// flight (its batch queue), each through every stage in turn, so the
	// model's step is a cycle of Stages micro-batches: each of 1/Stages of
	// the step's tokens, sequences and KV cache, through all the layers on
	// Count GPUs, plus the activations' hand-off from stage to stage; its
	// token budget is Stages times the runtime's (NewLane). A lone
	// request's step is then the whole model's on Count GPUs (the stages
	// one after another), and a large batch's the compute of 1/Stages of
	// it (the stages at once).
	Stages       int             `json:"stages,omitempty"`
	BytesPerElem int             `json:"bytes_per_elem"`
	Precision    *arch.Precision `json:"precision,omitempty"`
	Assume       Assumptions     `json:"assumptions"`
}

// WithPrecision returns h holding the model at p (Precision nil when p is
// BytesPerElem throughout).
func (h Hardware) WithPrecision(p arch.Precision) Hardware {
	h.Precision = precisionOf(p, h.bytesPerElem())
	return h
}

func (h Hardware) count() float64 { return float64(max(h.Count, 1)) }

// stages is the pipeline's stages (1 without pipeline parallelism).
func (h Hardware) stages() float64 { return float64(max(h.Stages, 1)) }

// GPUs is the deployment's GPUs: the tensor-parallel group of each
// pipeline stage times the stages.
func (h Hardware) GPUs() int { return max(h.Count, 1) * max(h.Stages, 1) }

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
// sequences, whose KV caches hold kvTokens tokens in total (see stepCost).
// The prefills are whole prompts of equal length with nothing cached
// before them, and each decode attends to its own KV cache (the KV tokens
// beyond the prefills'); Lane.StepSeconds costs a scheduled step's
// attention exactly (Step.Attended).
func StepTime(m ModelArch, h Hardware, prefillTokens, prefillSeqs, decodeSeqs int, kvTokens float64) float64 {
	tokens, attended := stepShape(prefillTokens, prefillSeqs, decodeSeqs, kvTokens)
	if tokens <= 0 {
		return 0
	}
	return m.stepCost(h, tokens, prefillSeqs+decodeSeqs).at(kvTokens, attended)
}

// StepPartsOf is StepTime's step split into the parts the roofline adds
// up (StepParts).
func StepPartsOf(m ModelArch, h Hardware, prefillTokens, prefillSeqs, decodeSeqs int, kvTokens float64) StepParts {
	tokens, attended := stepShape(prefillTokens, prefillSeqs, decodeSeqs, kvTokens)
	if tokens <= 0 {
		return StepParts{}
	}
	return m.stepCost(h, tokens, prefillSeqs+decodeSeqs).parts(kvTokens, attended)
}

// stepShape is StepTime's step as the cost model takes it: its tokens,
// and the query-key pairs its attention computes (whole prompts of equal
// length causally, each decode over its own KV cache).
func stepShape(prefillTokens, prefillSeqs, decodeSeqs int, kvTokens float64) (tokens int, attended float64) {
	if prefillSeqs > 0 && prefillTokens > 0 {
		p := float64(prefillTokens) / float64(prefillSeqs)
		attended = float64(prefillSeqs) * p * (p + 1) / 2
	}
	attended += math.Max(kvTokens-float64(prefillTokens), 0)
	return prefillTokens + decodeSeqs, attended
}

// StepParts is a step's duration split the way the roofline costs it
// (stepCost.at), in seconds: what a reviewer reads to see what an
// estimate rests on (plan -verbose's deployments). The parts that
// count add up to Total: the larger of Multiplies and WeightReads plus
// MultiplyFixed, the larger of Attention and KVReads (both of each pair
// on a Serial processor), the routed experts' multiplies and reads,
// Elementwise, AllReduces, Launches and Engine.
type StepParts struct {
	// Total is the step's duration (StepTime).
	Total float64
	// Multiplies are the weights' matrix multiplies at the compute roof
	// (a mixture of experts' routed experts apart), WeightReads reading
	// those weights, and MultiplyFixed the multiplies' fixed time on a
	// CUDA GPU (layerMultiplyUs a layer), which adds to the reads.
	Multiplies, WeightReads, MultiplyFixed float64
	// ExpertMultiplies and ExpertReads are a mixture of experts' routed
	// experts in the fused MoE kernel, which does not hide the one behind
	// the other.
	ExpertMultiplies, ExpertReads float64
	// Attention is attention's multiplies over the step's query-key
	// pairs, KVReads reading the KV cache.
	Attention, KVReads float64
	// Elementwise is the norms, rotary embeddings, activations and
	// residual adds; AllReduces tensor parallelism's all-reduces.
	Elementwise, AllReduces float64
	// Launches is the part of an eager step's kernel launches
	// (Assumptions.EagerSteps) that outlasts the GPU's work.
	Launches float64
	// Engine is the engine's time outside the GPU's work: the step
	// overhead and per-sequence work, and the part of the work async
	// scheduling overlaps that outlasts both the GPU's and the launches.
	Engine float64
	// Serial: compute and memory traffic add up (GPU.Serial).
	Serial bool
}

// parts is at's step split into StepParts.
func (c stepCost) parts(kvTokens, attended float64) StepParts {
	gpu := c.gemm() + c.attention(kvTokens, attended) + c.elementwise + c.comm
	launched := math.Max(gpu, c.launch)
	return StepParts{Total: c.at(kvTokens, attended), Launches: launched - gpu,
		Multiplies: c.compute, WeightReads: c.weights, MultiplyFixed: c.multiplyFixed, ExpertMultiplies: c.experts, ExpertReads: c.expertWeights,
		Attention: attended * c.attend, KVReads: kvTokens * c.kvToken, Elementwise: c.elementwise, AllReduces: c.comm,
		Engine: c.fixed + math.Max(c.overlapped-launched, 0), Serial: c.serial}
}

// stepCost is one engine step of a number of tokens on h, split the way
// the roofline needs it.
type stepCost struct {
	compute float64 // the matrix multiplies of the weights at the GPUs' compute roof
	attend  float64 // attention's two matrix multiplies over one query-key pair, every layer
	weights float64 // reading the weights the step touches
	// multiplyFixed is the multiplies' fixed time through every layer
	// beyond their reads (layerMultiplyUs a layer on a CUDA GPU).
	multiplyFixed float64
	// experts and expertWeights are a mixture of experts' routed
	// experts: their matrix multiplies at the fused MoE kernel's roof
	// (FusedMoEPeakTFLOPS at the assumed MFU) and reading
	// the experts the step reaches (compute and weights are the rest).
	// The fused MoE kernel does not hide the one behind the other
	// (stepCost.gemm).
	experts, expertWeights float64
	kvToken                float64 // reading one token of KV cache
	// elementwise is the step's norms, rotary embeddings, activations and
	// residual adds (ModelArch.ElementwiseBytesPerToken of its tokens).
	elementwise float64
	comm        float64 // tensor parallelism's all-reduces
	fixed       float64 // the step overhead
	// overlapped is the engine's work for the step's sequences that
	// runs beside the GPU's (Assumptions.AsyncScheduling,
	// AsyncOverlapShare; the rest is in fixed).
	overlapped float64
	// launch is the kernels' launches of a step that does not replay a
	// CUDA graph (Assumptions.EagerSteps), which the CPU issues while the
	// GPU works: the step lasts at least that long.
	launch float64
	serial bool // compute and memory traffic do not overlap (GPU.Serial)
}

// stepCost costs a step of tokens tokens of which logitSeqs produce
// logits. Compute counts 2 FLOPs per active parameter per token (the
// output projection only for the logit tokens) over the GPUs' peak at h's precision
// (PeakTFLOPS; a mixture of experts' routed experts at the fused MoE
// kernel's, FusedMoEPeakTFLOPS) and the assumed MFU, plus attention's own FLOPs
// (ModelArch.attentionFLOPs, at the BF16 peak: vLLM's attention kernels
// multiply 16-bit queries, keys and values whatever the weights' format)
// for each query-key pair the step attends (at); memory reads the weights the step
// touches (a mixture of experts only the experts its tokens reach:
// unreadExpertBytes) and the KV cache, each GPU its share, at the assumed
// bandwidth efficiency; on several GPUs the all-reduces follow
// (allReduce).
func (m ModelArch) stepCost(h Hardware, tokens, logitSeqs int) stepCost {
	c := m.stepCoster(h)
	return c.cost(tokens, logitSeqs)
}

// stepCoster is stepCost of one model on one hardware with what does not
// depend on a step's tokens worked out once: the virtual runs of a lane
// cost a few dozen steps of new sizes each, and recomputing the model's
// parameter split, the GPUs' roofs and the KV bytes for each was most of
// the cost. It gives stepCost's figures bit for bit (the same operations
// in the same order).
type stepCoster struct {
	// fixed is the split's parts that do not depend on the tokens
	// (attend, kvToken, fixed, serial), and the weights of a model
	// without experts.
	fixed stepCost
	// inner and output are matmulFLOPs's parameters: the active ones but
	// the output projection, and the output projection. An untied input
	// embedding counts as multiplied by every token, and as read whole
	// in weightBytes, although a lookup only reads its rows: the front
	// end's figures (FrontEnd) were fitted to published measurements with
	// it so, and treating it as a lookup moves TestPublishedMeasurements'
	// held-out TTFT error from 26.7% to 27.8% (while the other five
	// errors improve); that change waits for a refit.
	inner, output float64
	// roof is the GPUs' FLOP/s at the assumed MFU (roofAt); expertRoof
	// the same for a mixture of experts' routed experts, at the fused MoE
	// kernel's peak (FusedMoEPeakTFLOPS), over their served factor
	// (Hardware.ServedExpertFactor).
	roof, expertRoof float64
	// The weights a step of a mixture of experts reads: all of them less
	// the routed experts its tokens do not reach (unreadExpertBytes), over
	// n GPUs at bandwidth bw.
	moe                 *MoE
	weightBytes, spread float64
	// routed is the routed experts' parameters one token multiplies,
	// routedBytes all the routed experts' weights (a mixture of experts).
	routed, routedBytes float64
	linearBytes, n, bw  float64
	comm                allReduce
	// elementwise is one token's elementwise kernels (elementwiseSeconds).
	elementwise float64
	// perSeq is a step's overhead per sequence (Assumptions.StepSeqUs),
	// in part overlapped with the GPU's work when async is set
	// (Assumptions.AsyncScheduling, AsyncOverlapShare).
	perSeq float64
	async  bool
	// eager is which steps launch their kernels one by one, and launch
	// the time of such a step's launches through every layer
	// (Assumptions.EagerSteps, EagerLayerUs).
	eager  EagerSteps
	launch float64
	// stages are the pipeline's stages and handoff the time of passing
	// one token's activations from a stage to the next (Hardware.Stages).
	stages, handoff float64
}

// layerMultiplyUs is the fixed time of one layer's matrix multiplies on a
// CUDA GPU beyond reading their weights: timed at decode sizes (16 rows
// or fewer), a layer's four multiplies take 19.5 us + their bytes at 0.79
// of the peak bandwidth on an A100, 18.1 us + 0.90 on an H100 (Vidur's
// profiles) and 20.6 us + 0.88 on an H200 (ours: testdata/kernels,
// time_kernels.py), about 5 us a kernel whatever its size
// (h200-matmul-reads.csv: single multiplies of 0.5-470 MB, 5.7 us +
// bytes at 0.90 of the peak). The model adds it to the weights' reads
// (stepCost.multiplyFixed, stepCost.gemm), so a decode step's multiplies
// grow with the layers as measured rather than with the bytes alone, and
// the step overheads (cudaGraphStepMs) no longer hold it. A pipeline's
// step takes it once: each micro-batch passes every layer, one stage
// after another (Hardware.Stages).
// TestDecodeLayersAreAFixedTimeAndTheirReads fits the law to the timings.
const layerMultiplyUs = 19.0

// stepCoster returns the coster of m's steps on h.
func (m ModelArch) stepCoster(h Hardware) stepCoster {
	n := h.count()
	bw := h.GPU.BandwidthGBs * 1e9 * h.Assume.DecodeEfficiency
	out := m.outputParams()
	c := stepCoster{
		fixed: stepCost{
			attend:  m.attentionSeconds(h),
			kvToken: m.KVBytesPerTokenPerGPU(h) / bw,
			fixed:   h.Assume.StepOverheadMs / 1000,
			serial:  h.GPU.Serial,
		},
		inner: m.activeParams() - out, output: out,
		roof:        m.roofAt(h, h.PeakTFLOPS()),
		weightBytes: m.WeightBytesOn(h), spread: h.Assume.MoERoutingSpread,
		linearBytes: h.linearBytes(), n: n, bw: bw,
		comm: m.allReduceOf(h), elementwise: m.elementwiseSeconds(h),
		perSeq: h.Assume.StepSeqUs / 1e6, async: h.Assume.AsyncScheduling,
		stages: h.stages(), eager: h.Assume.EagerSteps,
		launch: float64(m.Layers) * h.Assume.EagerLayerUs / 1e6,
	}
	if c.stages > 1 {
		// A micro-batch reads its requests' KV cache through every stage:
		// all the layers' (KVBytesPerTokenPerGPU holds one stage's).
		c.fixed.kvToken *= c.stages
		if bw := h.GPU.LinkGBs * 1e9 * h.Assume.InterconnectEfficiency; bw > 0 {
			c.handoff = float64(m.Hidden) * activationBytes / bw
		}
	}
	if m.RoutesExperts() {
		c.moe = m.MoE
		c.expertRoof = m.roofAt(h, h.FusedMoEPeakTFLOPS()) / h.ServedExpertFactor()
		c.routed, c.routedBytes = m.routedParams(), m.routedBytes(c.linearBytes)
	} else {
		c.fixed.weights = c.weightBytes / n / bw
	}
	if h.GPU.Capability > 0 {
		c.fixed.multiplyFixed = float64(m.Layers) * layerMultiplyUs / 1e6
	}
	return c
}

// cost is the split of a step of tokens tokens of which logitSeqs produce
// logits.
func (c *stepCoster) cost(tokens, logitSeqs int) stepCost {
	sc := c.fixed
	work := c.perSeq * float64(logitSeqs)
	if c.async {
		sc.overlapped = AsyncOverlapShare * work
		work -= sc.overlapped
	}
	sc.fixed += work
	if c.eager.launches(tokens, logitSeqs) {
		sc.launch = c.launch
	}
	t, logits := float64(tokens), float64(logitSeqs)
	if c.stages > 1 {
		// A step of a pipeline is a cycle of its micro-batches
		// (Hardware.Stages): one micro-batch's share of the tokens, the
		// sequences, the KV cache and the attention pairs through every
		// stage in turn, handed from stage to stage. Fewer sequences than
		// stages fill as many micro-batches.
		k := math.Min(c.stages, math.Max(logits, 1))
		t, logits = t/k, logits/k
		sc.kvToken /= k
		sc.attend /= k
		sc.fixed += (c.stages - 1) * (t*c.handoff + c.comm.latency)
	}
	if e := c.moe; e != nil {
		sc.compute = matmulFLOPs(c.inner-c.routed, c.output, t, logits) / c.roof
		sc.experts = matmulFLOPs(c.routed, 0, t, 0) / c.expertRoof
		reached := c.routedBytes - unreadExpertBytes(e, t, c.spread, c.linearBytes)
		sc.weights = (c.weightBytes - c.routedBytes) / c.n / c.bw
		sc.expertWeights = reached / c.n / c.bw
	} else {
		sc.compute = matmulFLOPs(c.inner, c.output, t, logits) / c.roof
	}
	sc.comm = c.comm.seconds(t)
	sc.elementwise = t * c.elementwise
	return sc
}

// at is the step's duration when the KV caches hold kvTokens tokens and
// its queries attend attended query-key pairs (Step.Attended): the sum
// of its kernels' times, each the roofline maximum of its compute and
// its memory time (the weights' matrix multiplies against reading the
// weights, attention against reading the KV cache), plus the
// memory-bound elementwise kernels, the all-reduces and the step
// overhead; the engine's work for the step's sequences adds to them, or
// with async scheduling part of it runs beside them, the step lasting the
// larger (stepCost.overlapped). A GPU runs a step's kernels one after another, so one
// kernel's memory traffic does not hide behind another's compute: the
// attention kernel of a large decode batch reads its KV cache after the
// matrix multiplies are done (Vidur and GenZ cost a step as this sum of
// per-operator times). On a processor that does not overlap compute and
// memory traffic at all (GPU.Serial) every part adds up.
func (c stepCost) at(kvTokens, attended float64) float64 {
	return c.withOverheads(c.gemm() + c.attention(kvTokens, attended) + c.elementwise + c.comm)
}

// AsyncOverlapShare is the share of the engine's work for a step's
// sequences (Assumptions.StepSeqUs) that async scheduling runs beside the
// GPU's: the rest stays between the steps. vLLM's async scheduler
// prepares step n+1 while the GPU runs step n (vllm-project/vllm#27679,
// the async scheduling plan), but not all of that work overlaps:
// GPUStack's gpt-oss-20b on one A100 (vLLM 0.11, 1,000 ShareGPT chat
// requests at once) decoded at a median 45.15 ms a token and 39.47 ms
// with --async-scheduling, 0.874 times, where hiding all of the model's
// 65 us a sequence behind the GPU would give 0.71 times. 0.4 gives 0.88;
// fitted by hand to that pair alone (planner/perf/testdata/published),
// the other pairs held out (docs/performance-model.md, "Async
// scheduling").
const AsyncOverlapShare = 0.4

// withOverheads is the duration of a step whose GPU work takes gpu
// seconds: the step overhead added, and the CPU's work beside the GPU's
// (the engine's overlapped work for the sequences, an eager step's
// launches) if it takes longer.
func (c stepCost) withOverheads(gpu float64) float64 {
	return math.Max(gpu, c.beside()) + c.fixed
}

// beside is the CPU's work that runs beside the step's GPU work: async
// scheduling's overlapped share and an eager step's launches, whichever
// takes longer.
func (c stepCost) beside() float64 { return math.Max(c.overlapped, c.launch) }

// gemm is the time of the weights' matrix multiplies: the larger of
// their compute and of reading the weights, or their sum (serial). A
// mixture of experts' routed experts add their compute and their
// reads: vLLM's fused MoE kernel runs each expert's matrices over the
// few rows routed to it, and its measured times follow the sum, not
// the larger (TestFusedMoEKernelTimes: vLLM's kernel timed on an A100,
// an H100 and an H200 at 64-4,096 tokens, the sum within 25% of every
// timing, the larger up to 54% short).
func (c stepCost) gemm() float64 {
	experts := fusedMoESeconds(c.experts, c.expertWeights)
	if c.serial {
		return c.compute + c.weights + c.multiplyFixed + experts
	}
	return math.Max(c.compute, c.weights+c.multiplyFixed) + experts
}

// fusedMoESeconds is the time of the fused MoE kernel whose matrix
// multiplies take compute seconds at the compute roof and whose expert
// weights take reads seconds to read: their sum (stepCost.gemm).
func fusedMoESeconds(compute, reads float64) float64 { return compute + reads }

// attention is the attention kernel's time over attended query-key pairs
// and kvTokens tokens of KV cache: the larger of its compute and of
// reading the cache, or their sum (serial).
func (c stepCost) attention(kvTokens, attended float64) float64 {
	if c.serial {
		return attended*c.attend + kvTokens*c.kvToken
	}
	return math.Max(attended*c.attend, kvTokens*c.kvToken)
}

// GEMMEfficiency is the share of the assumed prefill MFU that the
// matrix multiplies of one of m's layers reach on h: small matrices leave
// part of a GPU's streaming multiprocessors idle or waiting on their
// tiles, and the more FLOP/s a multiprocessor delivers, the larger a
// matrix must be to keep it busy (gemmEfficiency). 1 on a processor
// without multiprocessors (the CPU). The size a layer needs is the
// hardware's, from its multiprocessors' peak (at h's compute precision),
// not an MFU, so a calibrated MFU scales the roof monotonically.
func (m ModelArch) GEMMEfficiency(h Hardware) float64 {
	return m.gemmEfficiencyAt(h, h.PeakTFLOPS())
}

// ExpertGEMMEfficiency is GEMMEfficiency for m's routed experts, whose
// fused MoE kernel runs at Hardware.FusedMoEPeakTFLOPS.
func (m ModelArch) ExpertGEMMEfficiency(h Hardware) float64 {
	return m.gemmEfficiencyAt(h, h.FusedMoEPeakTFLOPS())
}

// roofAt is the FLOP/s of matrix multiplies that run at peak TFLOP/s on
// each of h's GPUs, at the assumed MFU, sized against that peak
// (gemmEfficiencyAt) and at h's format's share of it (GEMMRoofShare).
func (m ModelArch) roofAt(h Hardware, peak float64) float64 {
	return h.count() * peak * 1e12 * h.Assume.PrefillMFU * m.gemmEfficiencyAt(h, peak) * h.GEMMRoofShare()
}

// gemmEfficiencyAt is GEMMEfficiency for multiplies that run at peak
// TFLOP/s on h (the routed experts' fused MoE kernel:
// Hardware.FusedMoEPeakTFLOPS).
func (m ModelArch) gemmEfficiencyAt(h Hardware, peak float64) float64 {
	if h.GPU.SMs <= 0 || m.Layers <= 0 {
		return 1
	}
	return gemmEfficiency(m.LayerParamsPerGPU(h), peak/float64(h.GPU.SMs))
}

// LayerParamsPerGPU is the parameters of one layer a token multiplies,
// on each of h's GPUs (tensor parallelism splits every layer's matrices):
// the active parameters less the output projection, over the layers. An
// untied input embedding counts (a few percent of a layer in the models
// of the catalog); a mixture of experts counts the experts a token
// reaches, although each is a matrix of its own.
func (m ModelArch) LayerParamsPerGPU(h Hardware) float64 {
	return (m.activeParams() - m.outputParams()) / float64(max(m.Layers, 1)) / h.count()
}

// gemmEfficiency is the share of the MFU that a layer's matrix
// multiplies reach with layerParams parameters a GPU, on multiprocessors
// of peakPerSM TFLOP/s each:
//
//	1 / (1 + (half / layerParams)^gemmSizeExponent),  half = gemmHalfParams x peakPerSM
//
// Fitted to Microsoft's Vidur kernel profiles
// (github.com/microsoft/vidur, data/profiling/compute: the four matrix
// multiplies of a layer, QKV, attention output, MLP up and down, of
// Llama 2 7B and 70B, CodeLlama 34B, InternLM 20B, Qwen 72B and Phi-2 at
// tensor parallelism 1-8, timed on A100, H100 and A40), at their
// compute-bound sizes (512-4,096 tokens, compute time over 4x the
// weights' read time): planner/perf/testdata/kernels and
// TestGEMMEfficiencyMatchesKernelProfiles. The layer's norms, rotary
// embedding and activation are timed apart (elementwiseSeconds). Fitted
// on the A100 and H100 alone, the law holds on the A40, held out. The
// multiplies reach 0.69-0.79 of the peak on every GPU from 40M
// parameters a GPU at 2,048 tokens and more; the size matters on the
// H100, whose multiprocessors each deliver three times an A100's: its
// layers of 25M (Llama 2 7B over 8 GPUs) reach 0.49 at 1,024 tokens and
// 0.66 at 4,096.
func gemmEfficiency(layerParams, peakPerSM float64) float64 {
	if layerParams <= 0 {
		return 1
	}
	half := gemmHalfParams * peakPerSM
	return 1 / (1 + math.Pow(half/layerParams, gemmSizeExponent))
}

// The fitted law of gemmEfficiency: the layer size, in parameters a GPU
// per TFLOP/s of a multiprocessor's peak, at which the matrix multiplies
// run at half the MFU, and how steeply the efficiency rises with the
// layer's size. Fitted with the large layers at 0.72 of the peak, what
// the profiles' multiplies reach alone; the catalog's MFU of the A100 and
// H100 (GPU.PrefillMFU) is lower, the level of whole served steps.
const (
	gemmHalfParams   = 1.5e6
	gemmSizeExponent = 1.8
)

// elementwiseSeconds is the time of one token's elementwise kernels on
// h's GPUs: ElementwiseBytesPerToken at the GPU's elementwise share of
// its peak bandwidth (GPU.ElementwiseEfficiency; 0 where the catalog's
// MFU is a whole-step figure that includes them: the GDDR parts, the
// CPU).
func (m ModelArch) elementwiseSeconds(h Hardware) float64 {
	eff := h.GPU.ElementwiseEfficiency
	if eff <= 0 || h.GPU.BandwidthGBs <= 0 {
		return 0
	}
	return m.ElementwiseBytesPerToken(h) / (h.GPU.BandwidthGBs * 1e9 * eff)
}

// ElementwiseBytesPerToken is what one token's memory-bound kernels read
// and write on each of h's GPUs over all layers, in activations of the
// model's 16-bit (or 32-bit) width: each hidden-size norm reads and
// writes the hidden state and the residual add reads two and writes one,
// on every GPU; the rotary embedding reads and writes the token's
// queries and keys (their per-head norms, QKNorm, as much again) and the
// gated activation reads the gate and up projections and writes their
// product, split over the GPUs with the heads and the MLP. In elements
// of a layer: (2 norms + 3) x hidden + (2 (q + k) + 3 x MLP width) / GPUs.
// Microsoft's Vidur kernel profiles time these kernels at 0.47 of the
// A100's and 0.50 of the H100's peak bandwidth and 0.71 of the A40's for
// this count, the same within a few percent across seven models and
// tensor parallelism 1-8 (TestElementwiseKernelsMatchProfiles).
func (m ModelArch) ElementwiseBytesPerToken(h Hardware) float64 {
	hidden := float64(m.Hidden)
	if hidden <= 0 {
		hidden = float64(m.Heads * m.HeadDim)
	}
	norms := m.NormsPerLayer
	if norms <= 0 {
		norms = 2
	}
	rope := 2 * float64(m.Heads*m.HeadDim+m.KVHeads*m.HeadDim)
	if m.QKNorm {
		rope *= 2
	}
	perLayer := float64(2*norms+3)*hidden + (rope+3*m.mlpWidth())/h.count()
	return float64(m.Layers) * perLayer * float64(h.bytesPerElem())
}

// mlpWidth is MLPWidth or, for an architecture given without it, what a
// layer's parameters leave for a gated MLP after attention's projections.
func (m ModelArch) mlpWidth() float64 {
	if m.MLPWidth > 0 {
		return float64(m.MLPWidth)
	}
	hidden := float64(m.Hidden)
	if hidden <= 0 || m.Layers <= 0 {
		return 0
	}
	q, kv := float64(m.Heads*m.HeadDim), float64(m.KVHeads*m.HeadDim)
	layer := (m.activeParams() - m.outputParams() - m.inputEmbedding()) / float64(m.Layers)
	return math.Max((layer-2*q*hidden-2*kv*hidden)/(3*hidden), 0)
}

// attentionSeconds is the compute time of one query-key pair's attention
// in every layer (attentionFLOPs) on h's GPUs, at the 16-bit peak and the
// assumed MFU; 0 when h.Assume.OmitAttention.
func (m ModelArch) attentionSeconds(h Hardware) float64 {
	if h.Assume.OmitAttention {
		return 0
	}
	return m.AttentionKernelFactor(h) * m.attentionFLOPs(1) / (h.count() * h.attentionTFLOPS() * 1e12 * h.Assume.PrefillMFU)
}

// AttentionKernelFactor is how many times the FlashAttention rate
// (attentionSeconds) attention's multiplies take in the kernel vLLM runs
// for m on h: tritonSinkAttentionFactor for a model with attention sinks
// (gpt-oss) on a GPU of compute capability 8.x (A100, A10, L4, L40S),
// else 1. FlashAttention 2 and FlashInfer take no sinks there, so vLLM
// runs its Triton unified attention kernel (vllm-project/vllm PR #22714,
// "Enable gpt-oss on ampere"; issue #40153 logs the selector turning
// FLASH_ATTN and FLASHINFER down for "sink setting not supported"; PR
// #37949, March 2026, still keeps GPT-OSS on Triton on SM8x). Hopper runs
// vLLM's FlashAttention 3, which takes sinks, and Blackwell FlashInfer's
// TRT-LLM kernels (PR #28561). Reads of the KV cache in decode steps are
// left as they are: the published A100 gpt-oss decodes are not slower
// than the model (docs/performance-model.md, "Attention sinks on Ampere").
func (m ModelArch) AttentionKernelFactor(h Hardware) float64 {
	if m.AttentionSinks && h.GPU.Capability >= 80 && h.GPU.Capability < 90 {
		return tritonSinkAttentionFactor
	}
	return 1
}

// tritonSinkAttentionFactor is vLLM's Triton unified attention against the
// model's FlashAttention rate, from the one end-to-end timing of its
// prefill found on an NVIDIA GPU: vllm-project/vllm PR #20690 (July 2025)
// timed Llama-3.1-8B-Instruct on an H100, one 10,000-token prompt and 4
// output tokens (benchmark_latency.py, TRITON_ATTN_VLLM_V1), at 0.665 s on
// the upstream kernel (16-row query tiles, the causal tiles skipped since
// PR #20308). The model gives that request 0.366 s besides attention (its
// prefill step less attention, and three decode steps) and 0.053 s of
// attention at the FlashAttention rate, so the kernel took (0.665 -
// 0.366) / 0.053 = 5.6 times it. The PR's larger tiles (0.372 s) did not
// merge; 16-row query tiles were still the kernel's default for prefill
// in 2026 (PR #47246 quotes it). Not fitted: GPUStack's two A100 gpt-oss
// bursts of 32,000-token prompts (the fit set) come to -1% and -2% on
// output tokens/s with it, from +95% and +81% (TestPublishedMeasurements).
const tritonSinkAttentionFactor = 5.6

// attentionTFLOPS is the peak attention's matrix multiplies run at: the
// 16-bit peak (PeakTFLOPS when the GPU gives none).
func (h Hardware) attentionTFLOPS() float64 {
	if h.GPU.BF16TFLOPS > 0 {
		return h.GPU.BF16TFLOPS
	}
	return h.PeakTFLOPS()
}

// UsableGB is the memory the engine may use on one GPU (GB).
func (h Hardware) UsableGB() float64 { return h.GPU.MemoryGB * h.Assume.GPUMemoryUtilization }

// KVCapacityTokens is how many tokens of KV cache fit beside the weights:
// each GPU's usable memory less its share of the weights and its
// activation reserve, over a token's KV cache on one GPU.
func KVCapacityTokens(m ModelArch, h Hardware) float64 {
	n := float64(h.GPUs())
	usable := h.UsableGB()*1e9 - m.WeightBytesOn(h)/n - h.Assume.ActivationReserveGB*1e9
	if usable <= 0 {
		return 0
	}
	return usable / m.KVBytesPerTokenPerGPU(h)
}

// SamplerProfileGB is the memory, in GB on each GPU, that a vLLM engine
// keeps from its KV cache for its start-up profile of the sampler: vLLM
// (0.8 and later: GPUModelRunner._dummy_sampler_run; the V0 engine's
// profile run samples too) samples maxNumSeqs dummy requests over the
// whole vocabulary with top-k and top-p set, which the PyTorch-native
// path does by sorting the float32 logits: about six float32 copies of
// them, samplerBytesPerLogit bytes a request a vocabulary entry, on top
// of samplerBaseGB for the CUDA context and the rest of the profile. The
// profile's peak is what the engine subtracts before sizing its cache,
// so a lane's reserve (Assumptions.ActivationReserveGB) is at least this.
// It is what fits gpt-oss-120b (201,088 entries) on one H100 at vLLM's
// default 1,024 sequences: vLLM's logs there put the memory besides
// weights and KV cache at 7.4 GiB (vllm-project/vllm issue #23278,
// 0.10.1) and 7.6-9.1 GiB (issue #27508, at 0.95, out of memory inside
// _dummy_sampler_run), and GPUStack's ShareGPT, 2,000/100 and 32,000/100
// bursts of it on one H100 (docs/performance-model.md) come within 20% on
// output tokens/s and TTFT with it, where 1.5 GB leaves three times their
// cache. vLLM's newer model runner (vllm/v1/worker/gpu/model_runner.py)
// notes that its profile "may skip top_k, top_p, and logprobs", which
// would leave a third to a half of this; it became the default for dense
// models with vLLM PR #44443 (July 2026), and which release first shipped
// that is not established here, so the rule holds for every version. 0
// when the vocabulary is not known.
func SamplerProfileGB(m ModelArch, maxNumSeqs int) float64 {
	if m.Vocab <= 0 || maxNumSeqs <= 0 {
		return 0
	}
	return samplerBaseGB + samplerBytesPerLogit*float64(maxNumSeqs)*float64(m.Vocab)/1e9
}

// The sampler profile's figures (SamplerProfileGB).
const (
	samplerBaseGB        = 0.5
	samplerBytesPerLogit = 24.0
)

// StartupSeconds is the time from starting a server to its first healthy
// answer: weight loading plus engine start-up.
func StartupSeconds(m ModelArch, h Hardware) float64 {
	return m.WeightBytesOn(h)/(h.Assume.LoadBandwidthGBs*1e9) + h.Assume.ServerStartSeconds
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
