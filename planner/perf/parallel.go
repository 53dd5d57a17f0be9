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

// activationBytes is the width of the activations tensor parallelism
// all-reduces (16-bit, whatever the weights).
const activationBytes = 2

// allReduce is the tensor-parallel communication of one model's steps on
// one hardware, as a function of a step's tokens (seconds): vLLM
// all-reduces the hidden state twice a layer (after attention and after
// the MLP), each a ring all-reduce of tokens x hidden 16-bit values over
// h.Count GPUs, which moves 2(n-1)/n of the message over each GPU's link
// (GPU.LinkGBs at the assumed interconnect efficiency), plus a fixed
// latency each. None on one GPU.
type allReduce struct {
	// gpus is h.Count (none below 2); latency is each all-reduce's fixed
	// time in seconds, bw a link's bandwidth.
	gpus                           int
	n, latency, bw, hidden, layers float64
}

// allReduceOf returns m's all-reduces on h.
func (m ModelArch) allReduceOf(h Hardware) allReduce {
	return allReduce{gpus: h.Count, n: float64(h.Count), latency: h.Assume.AllReduceLatencyUs / 1e6,
		bw: h.GPU.LinkGBs * 1e9 * h.Assume.InterconnectEfficiency, hidden: float64(m.Hidden), layers: float64(m.Layers)}
}

// seconds is the all-reduces of a step of tokens tokens.
func (a allReduce) seconds(tokens float64) float64 {
	if a.gpus <= 1 || tokens <= 0 {
		return 0
	}
	per := a.latency
	if a.bw > 0 {
		per += 2 * (a.n - 1) / a.n * tokens * a.hidden * activationBytes / a.bw
	}
	return 2 * a.layers * per
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
