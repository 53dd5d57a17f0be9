package perf

import "github.com/infercrane/infercrane/planner/arch"

// linearBytes, otherBytes and kvBytes are the bytes of a linear-layer
// parameter, of any other parameter and of a KV cache element at h's
// precision (BytesPerElem throughout without one).
func (h Hardware) linearBytes() float64 {
	if p := h.Precision; p != nil {
		return p.LinearBytes
	}
	return float64(h.bytesPerElem())
}

func (h Hardware) otherBytes() float64 {
	if p := h.Precision; p != nil {
		return p.OtherBytes
	}
	return float64(h.bytesPerElem())
}

func (h Hardware) kvBytes() float64 {
	if p := h.Precision; p != nil {
		return p.KVBytes
	}
	return float64(h.bytesPerElem())
}

// PeakTFLOPS is the compute roof of one GPU at h's precision: its FP8 or
// INT8 peak when the matrix multiplies run in that format, else BF16.
func (h Hardware) PeakTFLOPS() float64 {
	if p := h.Precision; p != nil {
		switch {
		case p.Compute == "fp8" && h.GPU.FP8TFLOPS > 0:
			return h.GPU.FP8TFLOPS
		case p.Compute == "int8" && h.GPU.INT8TOPS > 0:
			return h.GPU.INT8TOPS
		}
	}
	return h.GPU.BF16TFLOPS
}

// FusedMoEPeakTFLOPS is the peak the routed experts of a mixture of
// experts multiply at on h: the BF16 peak, whatever format their weights
// and activations are multiplied in. vLLM's fused MoE kernel (Triton)
// gains little from FP8: both tuned, FP8 ran 10-17% faster than BF16 on
// an H200 at 4 tokens and more (vllm-project/vllm PR #35457, E=128
// N=96), and on an L40S its FP8 timings follow the BF16 peak, where the
// FP8 peak makes them up to 36% shorter than measured
// (TestFusedMoEKernelTimes, vllm-project/vllm PR #53710); vLLM's Triton
// kernel for 128x128-block FP8 weights reaches 305-357 TFLOP/s on an H100
// at 4,096-16,384 tokens untuned, against cuBLAS BF16's 711-715 (PR
// #23939). The weights are still read at their own width, and the
// multiplies are sized against this peak (ModelArch.ExpertGEMMEfficiency).
func (h Hardware) FusedMoEPeakTFLOPS() float64 { return h.GPU.BF16TFLOPS }

// ServedExpertFactor is how many times the fused MoE kernel's timings
// (fusedMoESeconds: TestFusedMoEKernelTimes) a mixture of experts' routed
// multiplies take in a served step on h: servedExpertFactor on a CUDA
// GPU, 1 for MXFP4 experts (gpt-oss), whose dequantizing share
// (GEMMRoofShare) was chosen on their own served points and holds it, and
// 1 elsewhere (the CPU's MFU is a whole-step fit). Their reads are as the
// kernel's: decode-sized steps match its timings (docs/performance-model.md,
// "Mixtures of experts in served steps").
func (h Hardware) ServedExpertFactor() float64 {
	if h.GPU.Capability <= 0 || h.mxfp4() {
		return 1
	}
	return servedExpertFactor
}

// mxfp4 says whether h holds the model's weights in MXFP4 (gpt-oss's
// experts), which the served factor and the weak regimes treat apart.
func (h Hardware) mxfp4() bool { return h.Precision != nil && h.Precision.Quantization == "mxfp4" }

// servedExpertFactor is chosen on the fit set of published measurements
// (planner/perf/testdata/published: its 14 points of mixtures of experts
// served by vLLM 0.11 on A100s, H100s and H200s, GPUStack's Qwen3-235B-A22B,
// GLM-4.5-Air, GLM-4.6 and DeepSeek-R1-0528), where the mean of its
// output tokens/s, TPOT and TTFT errors over all points is least at 2.25
// of 1 to 3 in steps of 0.25; the held-out set checks it. vLLM's served
// routed experts multiply at less than half the rate the kernel's own
// timings give (benchmark_moe.py: the kernel alone, tokens routed
// uniformly at random, the tuned configuration). Which of the candidates
// makes it (the served shapes' experts of 96-384 columns a GPU, against
// 704-7,168 in the timings; configurations vLLM ships none of for the
// served shapes; real prompts' skewed routing) is not separated.
const servedExpertFactor = 2.25

// GEMMRoofShare is the share of the compute roof (PeakTFLOPS at the
// assumed MFU) the weights' matrix multiplies reach at h's precision:
// dequantizingGEMMShare when the weights are stored narrower than they
// are multiplied (Precision.WeightOnly: Marlin's kernels for AWQ, GPTQ
// and FP8 on GPUs without FP8 tensor cores, MXFP4's dequantizing
// kernels), 1 otherwise. It only binds where a step is compute-bound
// (prefill chunks, large decode batches): reading the narrower weights
// is what a weight-only format speeds up.
func (h Hardware) GEMMRoofShare() float64 {
	if p := h.Precision; p != nil && p.WeightOnly {
		return dequantizingGEMMShare
	}
	return 1
}

// dequantizingGEMMShare is the throughput of a dequantizing matrix
// multiply at compute-bound sizes over the 16-bit one the catalog's MFU
// gives. Marlin, the kernel vLLM runs weight-only formats with on
// Ampere and Hopper, widens each weight tile to 16 bits in registers and
// then multiplies at the 16-bit rate; for more than 64 rows it runs its
// 64-row kernel repeatedly (its author, IST-DASLab/marlin issue #2), and
// vLLM PR #2497 timed it on an A100 at a plateau of 141 TFLOP/s from 64
// to 4,000 rows (0.60-0.74 of PyTorch's FP16 GEMM from 256 rows), which
// is 0.70 of the A100's 312 TFLOP/s at the catalog's prefill MFU (0.65).
// The fit set agrees: its weight-only points (gpt-oss's MXFP4 bursts on
// an A100) miss least at 0.7 of 0.6, 0.7, 0.8 and 1.0 (output tokens/s
// and TPOT together); the held-out set checks it
// (docs/performance-model.md).
const dequantizingGEMMShare = 0.7

// activationBytes is the width of the activations tensor parallelism
// all-reduces (16-bit, whatever the weights).
const activationBytes = 2

// allReduce is the tensor-parallel communication of one model's steps on
// one hardware, as a function of a step's tokens (seconds): vLLM
// all-reduces the hidden state twice a layer (after attention and after
// the MLP), each of tokens x hidden 16-bit values over h.Count GPUs. A
// message up to customAllReduceMaxBytes goes through vLLM's custom
// all-reduce over NVLink: a ring's 2(n-1)/n of the message over each
// GPU's link (GPU.LinkGBs at the assumed interconnect efficiency) plus a
// fixed latency. A larger one (a prefill chunk of more than about a
// thousand tokens) goes through NCCL, whose time on an NVLink server is
// measured (ncclAllReduceOf); over PCIe, where vLLM has no custom
// all-reduce, the ring formula stands for NCCL at every size. None on one
// GPU.
type allReduce struct {
	// gpus is h.Count (none below 2); latency is each all-reduce's fixed
	// time in seconds, bw a link's bandwidth.
	gpus                           int
	n, latency, bw, hidden, layers float64
	// nccl is the measured NCCL time of one all-reduce on the server
	// (nil: the ring formula at every size).
	nccl *ncclTimes
}

// allReduceOf returns m's all-reduces on h.
func (m ModelArch) allReduceOf(h Hardware) allReduce {
	return allReduce{gpus: h.Count, n: float64(h.Count), latency: h.Assume.AllReduceLatencyUs / 1e6,
		bw: h.GPU.LinkGBs * 1e9 * h.Assume.InterconnectEfficiency, hidden: float64(m.Hidden), layers: float64(m.Layers),
		nccl: ncclAllReduceOf(h.GPU, h.Count)}
}

// seconds is the all-reduces of a step of tokens tokens.
func (a allReduce) seconds(tokens float64) float64 {
	if a.gpus <= 1 || tokens <= 0 {
		return 0
	}
	size := tokens * a.hidden * activationBytes
	if a.nccl != nil && size > customAllReduceMaxBytes {
		return 2 * a.layers * a.nccl.seconds(size)
	}
	per := a.latency
	if a.bw > 0 {
		per += 2 * (a.n - 1) / a.n * size / a.bw
	}
	return 2 * a.layers * per
}

// customAllReduceMaxBytes is the largest message vLLM's custom
// all-reduce takes (CustomAllreduce's max_size, 8,192 x 1,024 bytes, in
// vllm/distributed/device_communicators/custom_all_reduce.py from 0.4 on);
// larger ones go to NCCL.
const customAllReduceMaxBytes = 8192 * 1024

// ncclTimes is NCCL's time for one all-reduce on one server at message
// sizes of 8, 16, 32 and 64 MiB, in milliseconds; between them the time
// is interpolated linearly, above them extrapolated along the last
// segment.
type ncclTimes [4]float64

// seconds is the time of an all-reduce of size bytes (above 8 MiB).
func (t *ncclTimes) seconds(size float64) float64 {
	mib := size / (1 << 20)
	sizes := [4]float64{8, 16, 32, 64}
	i := 0
	for i < 2 && mib > sizes[i+1] {
		i++
	}
	slope := (t[i+1] - t[i]) / (sizes[i+1] - sizes[i])
	return (t[i] + slope*(mib-sizes[i])) / 1000
}

// ncclAllReduce holds NCCL's measured all-reduce times on one server of
// 2, 4 and 8 GPUs, from
// Microsoft Vidur's network profiles (github.com/microsoft/vidur,
// data/profiling/network/{a100,h100}_dgx/all_reduce.csv at 7d47513: the
// median of torch.distributed's all_reduce on one node; the rows from 8
// to 64 MiB are in testdata/kernels/vidur-all-reduce.csv, which
// TestNCCLAllReduceMatchesProfiles checks the interpolation against). On
// an A100 server NCCL reaches about half the ring formula's 0.8 of
// NVLink at these sizes (16 MiB over 8 GPUs: 0.275 ms, where the formula
// gives 0.132); on an H100 server it is within a quarter of it.
var ncclAllReduce = map[string]map[int]ncclTimes{
	"NVLink 3": { // DGX A100
		2: {0.095, 0.139, 0.247, 0.430},
		4: {0.123, 0.2005, 0.319, 0.603},
		8: {0.155, 0.2745, 0.411, 0.675},
	},
	"NVLink 4": { // DGX H100
		2: {0.046, 0.0735, 0.136, 0.245},
		4: {0.062, 0.0935, 0.167, 0.318},
		8: {0.074, 0.115, 0.196, 0.322},
	},
}

// NCCLProfiled reports whether h's all-reduces above vLLM's custom
// all-reduce limit take NCCL's measured times (ncclAllReduceOf) rather
// than the ring formula.
func (h Hardware) NCCLProfiled() bool { return ncclAllReduceOf(h.GPU, h.Count) != nil }

// ncclAllReduceOf returns NCCL's all-reduce times for gpus GPUs of type g
// on one server: the measured ones of its NVLink generation at the
// smallest measured count of at least gpus (6 GPUs take 8's), or nil
// where none were measured (PCIe, NVLink 5, more than 8 GPUs): the ring
// formula then stands for NCCL too.
func ncclAllReduceOf(g GPU, gpus int) *ncclTimes {
	byCount, ok := ncclAllReduce[g.Interconnect]
	if !ok || gpus < 2 {
		return nil
	}
	for _, n := range []int{2, 4, 8} {
		if gpus <= n {
			t := byCount[n]
			return &t
		}
	}
	return nil
}

// interconnectDefaults are the catalog's all-reduce assumptions for g:
// NCCL's ring reaches about 80% of NVLink's bandwidth and 70% of PCIe's
// (nccl-tests bus bandwidth against the link rate), with a latency of
// about 10 µs over NVLink (vLLM's custom all-reduce) and 25 µs over PCIe.
func interconnectDefaults(g GPU) (efficiency, latencyUs float64) {
	if g.NVLink() {
		return 0.8, 10
	}
	return 0.7, 25
}

// precisionOf returns p as a Hardware's precision: nil when it is
// BytesPerElem throughout with 16-bit compute (the plain case plans
// have always carried), else p.
func precisionOf(p arch.Precision, bytesPerElem int) *arch.Precision {
	b := float64(bytesPerElem)
	if p.Quantization == "" && p.LinearBytes == b && p.OtherBytes == b && p.KVBytes == b && p.Compute == "bf16" {
		return nil
	}
	return &p
}

// ResolvePrecision is how an engine of runtime settings rs holds a model
// of config c (the zero Config for one without a config.json) on GPU g at
// the runtime's dtype: arch.ResolvePrecision with the runtime's
// --quantization and --kv-cache-dtype and the GPU's compute capability.
// The planner and calibrate both resolve a lane's precision here.
func ResolvePrecision(c arch.Config, dtype string, rs RuntimeSettings, g GPU) (arch.Precision, error) {
	return arch.ResolvePrecision(c, arch.PrecisionInputs{Dtype: dtype, Quantization: rs.Quantization,
		QuantizationSource: rs.Sources["quantization"], KVCacheDtype: rs.KVCacheDtype, Capability: g.Capability})
}
