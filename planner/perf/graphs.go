package perf

import "fmt"

// EagerSteps is which of an engine's steps run without a CUDA graph, their
// kernels launched one by one from Python (Assumptions.EagerSteps). Such a
// step lasts at least its layers' launches (Assumptions.EagerLayerUs a
// layer), which the CPU issues while the GPU runs the kernels already
// launched: a large step hides them under its GPU work, a small one on a
// fast GPU (a small model, tensor parallelism over many GPUs) waits for
// them. A step replayed as a graph launches once.
type EagerSteps string

const (
	// EagerNone: no step pays its launches in the model. vLLM's V1
	// engine (0.8 on) replays CUDA graphs of up to 512 tokens a step and
	// runs larger steps as torch.compile'd code, whose launches are not
	// measured here and are left out.
	EagerNone EagerSteps = ""
	// EagerUncaptured is vLLM's V0 engine (before 0.8): it captures
	// decode-only steps of up to v0GraphMaxSeqs sequences and runs every
	// step that carries a prefill, and every larger decode, in eager
	// PyTorch (worker/model_runner.py: _BATCH_SIZES_TO_CAPTURE).
	EagerUncaptured EagerSteps = "uncaptured"
	// EagerAll is --enforce-eager: no CUDA graph is captured, and in V1
	// the model is not compiled either, so every step launches its
	// kernels one by one.
	EagerAll EagerSteps = "all"
)

// v0GraphMaxSeqs is the largest decode batch vLLM's V0 engine captures
// as a CUDA graph (the last of _BATCH_SIZES_TO_CAPTURE, 8 to 256).
const v0GraphMaxSeqs = 256

// eagerLayerUs is the launches of one transformer layer's kernels in an
// eager step on a CUDA GPU (Assumptions.EagerLayerUs): about 300 us. What
// it rests on is decode steps small enough to be launch-bound, timed with
// and without CUDA graphs, their eager time over their layers: vLLM PR
// #1440 (Llama 2 7B on one GPU, 100 tokens at batch 1 in 1.2 s eager and
// 1.05 s with graphs: 12 ms a step, 375 us a layer of 32) and SGLang PR
// #1401 (Llama 3 8B at batch 1: 9.28 ms and 8.23 ms a step eager with its
// Triton and FlashInfer attention against 7.06 and 7.35 ms with graphs:
// 257-290 us a layer). docs/performance-model.md ("Steps without a CUDA
// graph") has the check against the published measurements.
const eagerLayerUs = 300.0

// launches says whether a step of tokens tokens, of which logitSeqs end
// a sequence's step (a decode-only step has as many as its tokens), runs
// without a CUDA graph.
func (e EagerSteps) launches(tokens, logitSeqs int) bool {
	switch e {
	case EagerAll:
		return true
	case EagerUncaptured:
		return tokens > logitSeqs || logitSeqs > v0GraphMaxSeqs
	}
	return false
}

// Describe says which steps run eager on a CUDA GPU and what their
// launches cost, for the plan's assumptions ("" for EagerNone).
func (e EagerSteps) Describe() string {
	switch e {
	case EagerUncaptured:
		return fmt.Sprintf("on a CUDA GPU a step without a CUDA graph (one with a prefill, or a decode of more than %d sequences) lasts at least %.0f µs a layer of kernel launches", v0GraphMaxSeqs, eagerLayerUs)
	case EagerAll:
		return fmt.Sprintf("--enforce-eager: on a CUDA GPU every step lasts at least %.0f µs a layer of kernel launches", eagerLayerUs)
	}
	return ""
}
