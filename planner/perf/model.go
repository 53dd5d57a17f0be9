package perf

import (
	"math"

	"github.com/infercrane/infercrane/planner/arch"
)

// MoE is a mixture of experts as the performance model sees it: in each
// of Layers layers a token goes to ExpertsPerToken of Experts routed
// experts of ExpertParams parameters each.
type MoE struct {
	Experts         int   `json:"experts"`
	ExpertsPerToken int   `json:"experts_per_token"`
	Layers          int   `json:"layers"`
	ExpertParams    int64 `json:"expert_params"`
}

// FromConfig is the performance model's view of a pinned config.json.
func FromConfig(p arch.Pinned) ModelArch {
	c := p.Config
	n := c.Count()
	m := ModelArch{
		ID: p.ID, Params: n.Total, Layers: c.Layers, Hidden: c.Hidden, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim,
		Vocab: c.Vocab, TiedEmbedding: c.TiedEmbeddings, MaxPositions: c.MaxPositions, LinearParams: n.Linear(),
		Architecture: c.Describe(), Source: p.Source, ConfigRevision: p.Revision, ConfigDigest: p.Digest,
		SlidingWindow: c.SlidingWindow, SlidingLayers: c.SlidingLayers, AttentionSinks: c.AttentionSinks,
	}
	if n.Active != n.Total {
		m.ActiveParams = n.Active
	}
	if c.MLA != nil {
		m.KVLatent = c.KVElementsPerTokenLayer()
	}
	if e := c.MoE; e != nil {
		m.MoE = &MoE{Experts: e.Experts, ExpertsPerToken: e.ExpertsPerToken, Layers: e.Layers, ExpertParams: c.ExpertParams()}
	}
	m.MLPWidth, m.NormsPerLayer, m.QKNorm = mlpWidthOf(c), c.NormsPerLayer, c.QKNorm
	return m
}

// mlpWidthOf is ModelArch.MLPWidth of c: the dense layers' intermediate
// size and the MoE layers' routed experts a token reaches (times their
// width) plus their shared experts, averaged over the layers.
func mlpWidthOf(c arch.Config) int {
	e := c.MoE
	if e == nil || c.Layers <= 0 {
		return c.Intermediate
	}
	moe := min(e.Layers, c.Layers)
	perToken := e.ExpertsPerToken*e.Intermediate + e.SharedIntermediate
	return ((c.Layers-moe)*c.Intermediate + moe*perToken) / c.Layers
}

// activeParams is the parameters one token uses.
func (m ModelArch) activeParams() float64 {
	if m.ActiveParams > 0 && m.ActiveParams < m.Params {
		return float64(m.ActiveParams)
	}
	return float64(m.Params)
}

// outputParams is the output projection (vocab x hidden, at most every
// parameter), which only the tokens that produce logits multiply.
func (m ModelArch) outputParams() float64 { return math.Min(m.EmbeddingParams(), float64(m.Params)) }

// inputEmbedding is the input embedding when it is not also the output
// projection (quantisation leaves it 16-bit).
func (m ModelArch) inputEmbedding() float64 {
	if m.TiedEmbedding {
		return 0
	}
	return math.Min(m.EmbeddingParams(), float64(m.Params)-m.outputParams())
}

// linearParams is the parameters quantisation narrows.
func (m ModelArch) linearParams() float64 {
	if m.LinearParams > 0 && m.LinearParams <= m.Params {
		return float64(m.LinearParams)
	}
	return math.Max(float64(m.Params)-m.outputParams()-m.inputEmbedding(), 0)
}

// kvElementsPerTokenLayer is one token's KV cache elements in one layer on
// each of tp GPUs (arch.KVHeadsPerGPU; the latent whole on every GPU).
func (m ModelArch) kvElementsPerTokenLayer(tp int) float64 {
	if m.KVLatent > 0 {
		return float64(m.KVLatent)
	}
	if tp <= 1 {
		return float64(2 * m.KVHeads * m.HeadDim)
	}
	return float64(2 * arch.KVHeadsPerGPU(m.KVHeads, tp) * m.HeadDim)
}

// CheckTensorParallel refuses a tensor-parallel size vLLM refuses for m
// (arch.CheckHeads).
func (m ModelArch) CheckTensorParallel(tp int) error {
	return arch.CheckHeads(m.ID, m.Heads, m.KVHeads, m.KVLatent > 0, tp)
}

// WeightBytesOn is the memory m's weights take on all of h's GPUs
// together, at h's precision.
func (m ModelArch) WeightBytesOn(h Hardware) float64 {
	lin := m.linearParams()
	return lin*h.linearBytes() + (float64(m.Params)-lin)*h.otherBytes()
}

// KVBytesPerTokenPerGPU is one token's KV cache over all layers on each of
// h's GPUs, at h's KV cache dtype.
func (m ModelArch) KVBytesPerTokenPerGPU(h Hardware) float64 {
	return float64(m.Layers) * m.kvElementsPerTokenLayer(h.Count) * h.kvBytes() / h.stages()
}

// RoutesExperts reports whether m is a mixture of experts: routed
// experts that a token reaches some of.
func (m ModelArch) RoutesExperts() bool { return m.MoE != nil && m.MoE.Experts > 0 }

// routedParams is the routed experts' parameters one token multiplies
// (0 without experts).
func (m ModelArch) routedParams() float64 {
	if !m.RoutesExperts() {
		return 0
	}
	e := m.MoE
	return float64(e.Layers) * float64(e.ExpertsPerToken) * float64(e.ExpertParams)
}

// routedBytes is every routed expert's weights at linearBytes a
// parameter (0 without experts).
func (m ModelArch) routedBytes(linearBytes float64) float64 {
	if !m.RoutesExperts() {
		return 0
	}
	e := m.MoE
	return float64(e.Layers) * float64(e.Experts) * float64(e.ExpertParams) * linearBytes
}

// unreadExpertBytes is the routed experts of e that none of a step's
// tokens goes to, in bytes at linearBytes a parameter: a step of a
// mixture of experts reads every weight but these (arch.ExpectedExperts
// of the experts are reached in each MoE layer, at the assumed routing
// spread; stepCoster).
func unreadExpertBytes(e *MoE, tokens, spread, linearBytes float64) float64 {
	reached := arch.ExpectedExperts(e.Experts, e.ExpertsPerToken, tokens, spread)
	return float64(e.Layers) * (float64(e.Experts) - reached) * float64(e.ExpertParams) * linearBytes
}

// matmulFLOPs is a step's matrix-multiply work: 2 FLOPs per parameter
// per token, for the inner parameters every token multiplies and the
// output ones (the output projection) only the logitSeqs tokens that
// produce logits do (stepCoster).
func matmulFLOPs(inner, output, tokens, logitSeqs float64) float64 {
	return 2 * (inner*tokens + output*logitSeqs)
}

// attentionFLOPs is the work of attention's own two matrix multiplies
// (Q K^T and the weights times V) for pairs query-key pairs in every
// layer: 2 FLOPs per multiply-add, each multiply heads x head_dim wide,
// so 2 x 2 x heads x head_dim a pair a layer. Grouped-query attention
// shares keys and values between query heads but every query head still
// multiplies them, so the KV heads do not enter (they narrow only the KV
// cache). This is FlashAttention's own FLOP count, 4 x seqlen^2 x heads x
// head_dim for a sequence attending to all of itself, halved when causal
// (flops() in Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py),
// and Chinchilla's (Hoffmann et al. 2022, appendix F: 2 x seq x seq x
// key_size x heads for the logits and as much for the reduction).
// Latent attention (DeepSeek) is counted with its query-key width
// (qk_nope + qk_rope) for the values too, a slight overcount.
func (m ModelArch) attentionFLOPs(pairs float64) float64 {
	return 4 * float64(m.Heads) * float64(m.HeadDim) * float64(m.Layers) * pairs
}
