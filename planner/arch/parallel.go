package arch

import (
	"fmt"
	"math"
)

// CheckTensorParallel refuses a tensor-parallel size that vLLM refuses for
// c (see CheckHeads).
func (c Config) CheckTensorParallel(tp int) error {
	return CheckHeads(c.ModelType, c.Heads, c.KVHeads, c.MLA != nil, tp)
}

// CheckHeads refuses a tensor-parallel size tp that vLLM refuses for a
// model (named by what) of heads attention heads and kvHeads KV heads: the
// attention heads must split evenly over the GPUs, and the KV heads either
// split evenly or, when there are fewer KV heads than GPUs, be replicated
// (the GPU count a multiple of the KV heads). Latent attention keeps its
// latent whole on every GPU, so only its heads must split.
func CheckHeads(what string, heads, kvHeads int, latent bool, tp int) error {
	switch {
	case tp < 1:
		return fmt.Errorf("tensor parallel size %d is not a positive whole number", tp)
	case heads < 1 || kvHeads < 1:
		return nil // unknown heads: nothing to check
	case heads%tp != 0:
		return fmt.Errorf("tensor parallel size %d does not divide the %d attention heads of %s; vLLM refuses it (use a size that divides %d)", tp, heads, what, heads)
	case latent:
		return nil
	case kvHeads >= tp && kvHeads%tp != 0:
		return fmt.Errorf("tensor parallel size %d does not divide the %d KV heads of %s; vLLM refuses it", tp, kvHeads, what)
	case kvHeads < tp && tp%kvHeads != 0:
		return fmt.Errorf("tensor parallel size %d is not a multiple of the %d KV heads of %s, which vLLM then replicates; vLLM refuses it", tp, kvHeads, what)
	}
	return nil
}

// KVHeadsPerGPU is each of tp GPUs' share of kvHeads KV heads: one
// replicated head when there are fewer heads than GPUs.
func KVHeadsPerGPU(kvHeads, tp int) int { return max(kvHeads/max(tp, 1), 1) }

// KVElementsPerTokenLayerPerGPU is what one token takes in one layer's KV
// cache on each of tp GPUs: its share of the KV heads (KVHeadsPerGPU), or
// with latent attention the whole latent, which every GPU keeps.
func (c Config) KVElementsPerTokenLayerPerGPU(tp int) int {
	if c.MLA != nil || tp <= 1 {
		return c.KVElementsPerTokenLayer()
	}
	return 2 * KVHeadsPerGPU(c.KVHeads, tp) * c.HeadDim
}

// ExpertParams is one routed expert's parameters in one MoE layer (0 for
// a dense model).
func (c Config) ExpertParams() int64 {
	if c.MoE == nil {
		return 0
	}
	return mlpParams(int64(c.Hidden), int64(c.MoE.Intermediate), false)
}

// ExpectedExperts is the expected number of distinct routed experts that
// tokens tokens reach in one MoE layer when each goes to k of e experts:
// e(1 - (1 - k/e)^tokens) under uniform routing. spread in (0, 1] narrows
// the experts routing actually spreads over to k + spread(e - k) (1:
// uniform; less: a skewed router that sends a batch to fewer distinct
// experts), which calibration can fit.
func ExpectedExperts(e, k int, tokens, spread float64) float64 {
	if e <= 0 || k <= 0 || tokens <= 0 {
		return 0
	}
	if spread <= 0 || spread > 1 {
		spread = 1
	}
	eff := float64(k) + spread*float64(e-k)
	return eff * (1 - math.Pow(1-float64(k)/eff, tokens))
}
