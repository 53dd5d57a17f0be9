package planner

import (
	"fmt"
	"strings"

	"github.com/infercrane/infercrane/planner/perf"
)

// writeDeployments explains each deployment's memory fit and what its
// estimates rest on: the architecture and where it came from, the
// precision, the GPUs and tensor-parallel size, the weights and KV cache
// a GPU holds, the compute roof and the interconnect.
func writeDeployments(ew *errWriter, p *Plan) {
	seen := map[string]bool{}
	first := true
	for _, l := range p.Lanes {
		if l.Perf == nil || seen[l.Deployment] || !l.Work() {
			continue
		}
		seen[l.Deployment] = true
		if first {
			ew.printf("\nDeployments (the memory fit and what each estimate rests on):\n")
			first = false
		}
		for _, line := range FitLines(l) {
			ew.printf("  %s\n", line)
		}
	}
}

// FitLines explains a lane's deployment in a few lines: the model, its
// architecture's source, the weights and KV cache on each GPU, the
// compute roof and the interconnect.
func FitLines(l *Lane) []string {
	s := l.Perf
	m, h := s.Model, s.Hardware
	n, gpus := max(h.Count, 1), h.GPUs()
	runtime := ""
	if l.Runtime != "" {
		runtime = ", runtime " + l.Runtime
	}
	src := m.Source
	if src == "" {
		src = "the model block's attributes"
	}
	if m.ConfigDigest != "" {
		src += ", " + shortDigest(m.ConfigDigest)
	}
	arch := m.Architecture
	if arch == "" {
		arch = fmt.Sprintf("%d layers, %d KV heads of %d", m.Layers, m.KVHeads, m.HeadDim)
	}
	params := billions(float64(m.Params)) + " parameters"
	if m.ActiveParams > 0 {
		params += " (" + billions(float64(m.ActiveParams)) + " active a token)"
	}
	prec := "bf16"
	if p := h.Precision; p != nil {
		prec = orDefault(p.Quantization, "16-bit") + " weights"
		if p.WeightOnly {
			prec += " (weight-only: multiplied in bf16)"
		}
		if p.KVCacheDtype != "auto" {
			prec += ", " + p.KVCacheDtype + " KV cache"
		}
	} else if h.BytesPerElem == 4 {
		prec = "float32"
	}
	weights := m.WeightBytesOn(h) / 1e9
	usable := h.UsableGB()
	kvTokens := s.Engine.KVBlocks * s.Engine.BlockSize
	comm := "one GPU: no all-reduce"
	if n > 1 {
		comm = fmt.Sprintf("%d-way tensor parallel over %s (%.0f GB/s a direction at %.0f%%, %.0f µs an all-reduce, 2 a layer a step)",
			n, orDefault(h.GPU.Interconnect, "the host"), h.GPU.LinkGBs, 100*h.Assume.InterconnectEfficiency, h.Assume.AllReduceLatencyUs)
		if h.NCCLProfiled() {
			comm += ", messages over 8 MiB through NCCL at its measured times"
		}
	}
	if h.Stages > 1 {
		comm += fmt.Sprintf("; %d pipeline stages of %d GPU(s), each 1/%d of the layers, %d micro-batches in flight (a step is their cycle)",
			h.Stages, n, h.Stages, h.Stages)
	}
	window := ""
	switch e := s.Engine; {
	case e.SlidingWindow > 0:
		window = fmt.Sprintf("; %d of %d layers keep only their %s-token sliding window, so a request of n > %s tokens holds n - %d/%d (n - %s)",
			e.SlidingLayers, e.KVLayers, fmtInt(int64(e.SlidingWindow)), fmtInt(int64(e.SlidingWindow)), e.SlidingLayers, e.KVLayers, fmtInt(int64(e.SlidingWindow)))
	case m.SlidingWindow > 0:
		window = fmt.Sprintf("; the %d sliding-window layers counted at full length (the engine keeps every token)", m.SlidingLayers)
	}
	return append([]string{
		fmt.Sprintf("%s: %s on %d x %s%s: %s (%s; from %s)", l.Deployment, l.Model, gpus, h.GPU.Name, runtime, m.ID, arch, src),
		fmt.Sprintf("  %s at %s: %.1f GB of weights, %.1f GB a GPU of %.1f GB usable (%.0f GB x %.2f) less %s; KV cache %s a token a GPU, %s tokens (%s blocks)%s",
			params, prec, weights, weights/float64(gpus), usable, h.GPU.MemoryGB, usable/h.GPU.MemoryGB, reserve(s),
			kib(m.KVBytesPerTokenPerGPU(h)), fmtInt(int64(kvTokens)), fmtInt(int64(s.Engine.KVBlocks)), window),
		fmt.Sprintf("  compute roof %g TFLOPS a GPU (%s) at MFU %.2f%s%s; memory %.0f GB/s at %.2f%s%s; %s", h.PeakTFLOPS(), computeName(h), h.Assume.PrefillMFU,
			gemmSize(m, h), dequantizing(h), h.GPU.BandwidthGBs, h.Assume.DecodeEfficiency, elementwise(m, h), fusedExperts(m, h)+attentionKernel(m, h), comm),
	}, stepLines(l)...)
}

// stepLines shows what two steps of the lane's shape cost on its
// deployment, part by part (perf.StepPartsOf): a decode step of its
// requests in flight (at most the engine's batch and what the KV cache
// holds), each halfway through its output, and a prefill chunk of one
// prompt (at most the step's token budget).
func stepLines(l *Lane) []string {
	in := l.Inputs
	ctx := max(in.InputTokens+in.OutputTokens/2, 1)
	seqs, decode := l.Perf.DecodeStep(in.Concurrency, ctx)
	chunk, prefill := l.Perf.PrefillChunk(in.InputTokens)
	return []string{
		fmt.Sprintf("  steps at lane %s's shape: %s decodes at %s tokens of context: %s", l.ID, fmtInt(int64(seqs)), fmtInt(int64(ctx)), stepAnatomy(decode)),
		fmt.Sprintf("    a prefill chunk of %s tokens: %s", fmtInt(int64(chunk)), stepAnatomy(prefill)),
	}
}

// stepAnatomy renders a step's parts: the total, then each part that
// takes time, the overlapping pairs (multiplies against weight reads
// with the multiplies' fixed time, attention against KV reads) as the
// one that counts with the other beside it, or both added up on a
// processor that does not overlap them.
func stepAnatomy(p perf.StepParts) string {
	ms := func(sec float64) string { return fmtMs(1000 * sec) }
	var parts []string
	// timed is a named part of a step and its seconds.
	type timed struct {
		name string
		sec  float64
	}
	// pair renders compute seconds against the memory side's parts
	// added up ("weight reads 2.61 ms + the multiplies' fixed time 0.61
	// ms"), the first always, the others when they take time.
	pair := func(name string, compute float64, memory ...timed) {
		var reads float64
		var names []string
		for i, m := range memory {
			if m.sec > 0 || i == 0 {
				reads += m.sec
				names = append(names, m.name+" "+ms(m.sec))
			}
		}
		readsText := strings.Join(names, " + ")
		switch {
		case compute <= 0 && reads <= 0:
		case p.Serial:
			parts = append(parts, fmt.Sprintf("%s %s + %s", name, ms(compute), readsText))
		case compute >= reads:
			parts = append(parts, fmt.Sprintf("%s %s (%s under them)", name, ms(compute), readsText))
		default:
			parts = append(parts, fmt.Sprintf("%s (%s %s under them)", readsText, name, ms(compute)))
		}
	}
	pair("matrix multiplies", p.Multiplies, timed{"weight reads", p.WeightReads}, timed{"the multiplies' fixed time", p.MultiplyFixed})
	if p.ExpertMultiplies > 0 || p.ExpertReads > 0 {
		parts = append(parts, fmt.Sprintf("routed experts %s multiplying + %s reading", ms(p.ExpertMultiplies), ms(p.ExpertReads)))
	}
	pair("attention", p.Attention, timed{"KV reads", p.KVReads})
	for _, x := range []timed{{"elementwise", p.Elementwise}, {"all-reduces", p.AllReduces}, {"kernel launches without a CUDA graph beyond the GPU's work", p.Launches}, {"engine", p.Engine}} {
		if x.sec > 0 {
			parts = append(parts, x.name+" "+ms(x.sec))
		}
	}
	return fmt.Sprintf("%s = %s", ms(p.Total), strings.Join(parts, ", "))
}

// reserve says what the memory kept from the KV cache is: the catalog's
// activation reserve, or the engine's start-up profile of its sampler
// where that is larger (perf.SamplerProfileGB).
func reserve(s *perf.Lane) string {
	r := fmt.Sprintf("%.1f GB reserve", s.Hardware.Assume.ActivationReserveGB)
	if src := s.ReserveSource(); src != "" {
		r += " (" + src + ")"
	}
	return r
}

// fusedExperts says that a mixture of experts' routed experts take their
// multiplies plus their reads (the fused MoE kernel, perf's stepCost),
// where the rest of a step takes the larger of the two, and at which peak
// they multiply when it is not the compute roof's
// (perf.Hardware.FusedMoEPeakTFLOPS: FP8 experts at the BF16 peak).
func fusedExperts(m perf.ModelArch, h perf.Hardware) string {
	if !m.RoutesExperts() {
		return ""
	}
	s := "; routed experts (fused MoE kernel) take their multiplies plus their reads"
	if peak := h.FusedMoEPeakTFLOPS(); peak != h.PeakTFLOPS() {
		s += fmt.Sprintf(", multiplying at the BF16 peak (%g TFLOPS, x %.2f for their size)", peak, m.ExpertGEMMEfficiency(h))
	}
	if f := h.ServedExpertFactor(); f != 1 {
		s += fmt.Sprintf(", their multiplies %.2f times the kernel's timings in a served step (fitted to published measurements)", f)
	}
	return s
}

// attentionKernel says that attention's multiplies take longer than the
// FlashAttention rate in the kernel the engine runs for the model on the
// GPU (perf.ModelArch.AttentionKernelFactor), when they do.
func attentionKernel(m perf.ModelArch, h perf.Hardware) string {
	f := m.AttentionKernelFactor(h)
	if f == 1 {
		return ""
	}
	return fmt.Sprintf("; attention in vLLM's Triton kernel (attention sinks on capability 8.x): %.1f times the FlashAttention rate", f)
}

// gemmSize says how much of the MFU the layers' matrix multiplies reach
// for their size (perf.ModelArch.GEMMEfficiency), when it is less than
// all of it.
func gemmSize(m perf.ModelArch, h perf.Hardware) string {
	e := m.GEMMEfficiency(h)
	if e >= 1 {
		return ""
	}
	return fmt.Sprintf(" x %.2f for layers of %.1fM parameters a GPU", e, m.LayerParamsPerGPU(h)/1e6)
}

// dequantizing says that weight-only formats multiply at a share of the
// 16-bit roof (perf.Hardware.GEMMRoofShare), when they do.
func dequantizing(h perf.Hardware) string {
	if s := h.GEMMRoofShare(); s < 1 {
		return fmt.Sprintf(" x %.2f (weights widened to 16 bits in the kernel)", s)
	}
	return ""
}

// elementwise says what a token's norms, rotary embeddings, activations
// and residual adds move on each GPU and at what share of the bandwidth
// (perf.ModelArch.ElementwiseBytesPerToken), where the model costs them
// apart.
func elementwise(m perf.ModelArch, h perf.Hardware) string {
	eff := h.GPU.ElementwiseEfficiency
	if eff <= 0 {
		return ""
	}
	return fmt.Sprintf(", elementwise kernels %.1f MB a token at %.2f", m.ElementwiseBytesPerToken(h)/1e6, eff)
}

func computeName(h perf.Hardware) string {
	if p := h.Precision; p != nil && p.Compute != "" && h.PeakTFLOPS() != h.GPU.BF16TFLOPS {
		return strings.ToUpper(p.Compute)
	}
	return "BF16"
}

func billions(x float64) string { return fmt.Sprintf("%.2fB", x/1e9) }

func kib(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }

func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}
