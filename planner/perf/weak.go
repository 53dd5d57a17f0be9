package perf

import (
	"fmt"
	"strings"
)

// WeakRegime is a kind of deployment where published measurements show
// the catalog's cold estimates missing by more than its stated
// uncertainty (CatalogUncertainty). The plan names the lanes that lie in
// one and the misses measured there (Misses: the published points of the
// regime, planner/perf/testdata/published; TestWeakRegimeMissesAsPublished
// holds the spans to them), rather than a symmetric range around the
// estimate, which an estimate 96% under the measurement cannot state.
// docs/performance-model.md, "Where the model is weak", has the
// measurements and what is known of the causes.
type WeakRegime struct {
	// Name is the regime in words, e.g. "mixtures of experts on A100s".
	Name string
	// Misses are the published points' errors, (estimate - measured) /
	// measured, lowest and highest, per metric family.
	Misses Misses
}

// Misses are the lowest and highest relative errors of the estimates
// against published measurements, per metric family: output tokens/s,
// TPOT and TTFT (p50, or the mean where a source gives no median).
type Misses struct {
	Throughput, TPOT, TTFT [2]float64
}

// String is the misses in words, e.g. "output tokens/s -31% to +96%,
// TPOT -54% to +1%, TTFT -46% to +63%" (+: the estimate above the
// measurement).
func (m Misses) String() string {
	span := func(s [2]float64) string {
		return fmt.Sprintf("%+.0f%% to %+.0f%%", 100*s[0], 100*s[1])
	}
	return fmt.Sprintf("output tokens/s %s, TPOT %s, TTFT %s", span(m.Throughput), span(m.TPOT), span(m.TTFT))
}

// weakRegimes are the regimes in the order they are matched: the first
// whose test holds names a deployment's. The misses are the published
// points' at the time they were set, rounded outwards to 1% (go test
// ./planner -run TestWeakRegimeMissesAsPublished -v prints them).
var weakRegimes = []struct {
	regime WeakRegime
	holds  func(m ModelArch, h Hardware) bool
}{
	{
		// GPUStack's gpt-oss-20b and -120b bursts on an A100 or an H100
		// (vLLM 0.10.2 and 0.11): MXFP4 experts (Marlin on the A100,
		// Triton kernels on the H100), for which the model has no kernel
		// timings; up to 33% slow and 22% fast on throughput, TPOT from
		// 95% short to 91% over (the 128/4 bursts), TTFT up to 125% over.
		// The long-prompt bursts on an A100 came within 2% on throughput
		// once attention took vLLM's Triton kernel there
		// (ModelArch.AttentionKernelFactor; +95% and +81% before).
		WeakRegime{Name: "MXFP4 mixtures of experts (gpt-oss)",
			Misses: Misses{Throughput: [2]float64{-0.33, 0.23}, TPOT: [2]float64{-0.95, 0.91}, TTFT: [2]float64{-0.35, 1.25}}},
		func(m ModelArch, h Hardware) bool {
			return h.mxfp4()
		},
	},
	{
		// GPUStack's Qwen3-235B-A22B over eight A100s and GLM-4.5-Air over
		// four (vLLM 0.11), and the FP8 checkpoints of GLM-4.6 and
		// Qwen3-235B-A22B (Marlin): up to 51% fast on throughput on the
		// long-prompt bursts even with the served experts' factor
		// (Hardware.ServedExpertFactor), their 128/4 bursts up to 38%
		// slow; the A100 timings of vLLM's fused MoE kernel do not
		// explain it.
		WeakRegime{Name: "mixtures of experts on A100s",
			Misses: Misses{Throughput: [2]float64{-0.38, 0.51}, TPOT: [2]float64{-0.39, 0.33}, TTFT: [2]float64{-0.30, 0.75}}},
		func(m ModelArch, h Hardware) bool {
			return m.RoutesExperts() && strings.HasPrefix(h.GPU.Name, "A100")
		},
	},
	{
		// GPUStack's bursts of Qwen3-235B-A22B over eight H100s and of
		// GLM-4.6 and DeepSeek-R1-0528 over eight H200s (vLLM 0.11), and
		// GLM-4.6-FP8's ShareGPT burst over eight H100s (119% over):
		// the 128/4 bursts' TTFT up to 153% over (their front ends
		// admitted faster than the model's), Qwen3-235B-A22B's
		// long-prompt bursts on H100s up to 37% slow on TPOT with the
		// served experts' factor.
		WeakRegime{Name: "mixtures of experts over eight GPUs",
			Misses: Misses{Throughput: [2]float64{-0.56, 1.19}, TPOT: [2]float64{-0.63, 0.37}, TTFT: [2]float64{-0.26, 1.53}}},
		func(m ModelArch, h Hardware) bool {
			return m.RoutesExperts() && h.Count >= 8
		},
	},
	{
		// LambdaLabsML's bursts of neuralmagic's FP8 Llama 3.1 70B over
		// two and four H100s (vLLM 0.6): the same servers' BF16 runs show
		// FP8 prefilling 1.12-1.24 times faster than BF16 where the model
		// makes it 1.45-1.62 times, and about 2.5 ms a decode step the
		// model does not have; on one GPU within the catalog's ranges.
		// GPUStack's ShareGPT bursts of Qwen3-235B-A22B-FP8 over four
		// H100s (vLLM 0.11): TTFT up to 97% over (the front end admitted
		// the burst faster than the model's).
		WeakRegime{Name: "FP8 multiplies over several GPUs",
			Misses: Misses{Throughput: [2]float64{-0.22, 0.24}, TPOT: [2]float64{-0.24, 0.12}, TTFT: [2]float64{-0.18, 1.20}}},
		func(m ModelArch, h Hardware) bool {
			return h.Precision != nil && h.Precision.Compute == "fp8" && h.Count >= 2
		},
	},
	{
		// Qwen3-0.6B, the one model under a billion parameters in the
		// sets: against kvcached's on an H100 (vLLM 0.19) and Tenstorrent's
		// sweep on an A100 (vLLM 0.9.1, one stream) the model's TPOT falls
		// 19-46% short and its TTFT up to 73% short, where Qwen3-1.7B of
		// the same A100 sweep, with the same 28 layers, fits within 3% on
		// TPOT. The small model's step is not
		// its weight reads plus the constants the larger ones fit; what
		// sets it is not known (docs/performance-model.md, "Where the
		// model is weak").
		WeakRegime{Name: "models under 1B parameters",
			Misses: Misses{Throughput: [2]float64{-0.05, 0.26}, TPOT: [2]float64{-0.46, -0.19}, TTFT: [2]float64{-0.73, -0.09}}},
		func(m ModelArch, h Hardware) bool {
			return !m.RoutesExperts() && m.Params < smallModelParams
		},
	},
}

// smallModelParams bounds the models of the weak regime "models under 1B
// parameters": Qwen3-0.6B's misses put it inside, Qwen3-1.7B's fit
// outside, and a billion is the round figure between them.
const smallModelParams = 1e9

// WeakRegimeOf is the weak regime a deployment of m on h lies in, if any.
func WeakRegimeOf(m ModelArch, h Hardware) (WeakRegime, bool) {
	for _, r := range weakRegimes {
		if r.holds(m, h) {
			return r.regime, true
		}
	}
	return WeakRegime{}, false
}

// WeakRegimeNames are the regimes' names in their order.
func WeakRegimeNames() []string {
	names := make([]string, len(weakRegimes))
	for i, r := range weakRegimes {
		names[i] = r.regime.Name
	}
	return names
}
