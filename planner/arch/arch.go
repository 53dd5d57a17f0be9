// Package arch reads a model's architecture from its Hugging Face
// config.json and counts what the performance model needs from it: the
// parameters (all of them, and those one token uses in a mixture of
// experts) and the KV cache one token takes in one attention layer.
//
// It reads the families vLLM serves most (Llama, Mistral, Mixtral, Qwen2,
// Qwen2-MoE, Qwen3, Qwen3-MoE, Gemma 1-3, DeepSeek V2/V3 with multi-head
// latent attention, GLM-4.5, gpt-oss); another model_type is an error
// that names it. A field it cannot read is an error that names the field.
package arch

import (
	"fmt"
	"sort"
	"strings"
)

// Config is the architecture of one model, as its config.json gives it.
type Config struct {
	// ModelType is config.json's model_type (for a multimodal Gemma 3, the
	// outer "gemma3"), Architecture its first architectures entry.
	ModelType    string `json:"model_type"`
	Architecture string `json:"architecture,omitempty"`
	Layers       int    `json:"layers"`
	Hidden       int    `json:"hidden"`
	Heads        int    `json:"heads"`
	KVHeads      int    `json:"kv_heads"`
	HeadDim      int    `json:"head_dim"`
	// Intermediate is the dense MLP's width (the layers that are not MoE
	// layers; Mixtral's experts' width too, as its config has no other).
	Intermediate   int  `json:"intermediate"`
	Vocab          int  `json:"vocab"`
	TiedEmbeddings bool `json:"tied_embeddings,omitempty"`
	MaxPositions   int  `json:"max_positions,omitempty"`
	// QKVBias and OutputBias: the attention projections carry biases
	// (Qwen2 on q, k and v; Llama's attention_bias on all four).
	QKVBias    bool `json:"qkv_bias,omitempty"`
	OutputBias bool `json:"output_bias,omitempty"`
	MLPBias    bool `json:"mlp_bias,omitempty"`
	// QKNorm: a norm of head_dim on each query and key head (Qwen3, Gemma 3).
	QKNorm bool `json:"qk_norm,omitempty"`
	// NormsPerLayer is the number of hidden-size norms in a decoder layer
	// (2, 4 in Gemma 2 and 3).
	NormsPerLayer int `json:"norms_per_layer"`
	// SlidingWindow is the attention window of the SlidingLayers layers
	// that attend only to their last SlidingWindow tokens (0: none).
	SlidingWindow int `json:"sliding_window,omitempty"`
	SlidingLayers int `json:"sliding_layers,omitempty"`
	// MoE is the mixture of experts (nil for a dense model).
	MoE *MoE `json:"moe,omitempty"`
	// MLA is multi-head latent attention (DeepSeek V2/V3; nil otherwise).
	MLA *MLA `json:"mla,omitempty"`
	// Vision is the vision tower a multimodal model loads with its text
	// model (nil for text-only models).
	Vision *Vision `json:"vision,omitempty"`
	// Dtype is config.json's torch_dtype (or dtype): the checkpoint's
	// weight type.
	Dtype string `json:"dtype,omitempty"`
	// Quantization is the checkpoint's quantization_config (nil: none).
	Quantization *Quantization `json:"quantization,omitempty"`
	// AttentionSinks: each attention head has a learned sink logit
	// (gpt-oss).
	AttentionSinks bool `json:"attention_sinks,omitempty"`
	// HarmonyChat: vLLM renders the model's chat with openai_harmony, not
	// a chat template (gpt-oss; serving_chat.py's use_harmony).
	HarmonyChat bool `json:"harmony_chat,omitempty"`
	// MTPLayers is DeepSeek V3's and GLM-4.5's multi-token-prediction layers
	// (num_nextn_predict_layers); they are not counted, as vLLM loads
	// them only for speculative decoding.
	MTPLayers int `json:"mtp_layers,omitempty"`
}

// MoE describes the mixture-of-experts layers of a model.
type MoE struct {
	// Experts is the routed experts of each MoE layer, of which a token
	// goes to ExpertsPerToken.
	Experts         int `json:"experts"`
	ExpertsPerToken int `json:"experts_per_token"`
	// Intermediate is a routed expert's MLP width.
	Intermediate int `json:"intermediate"`
	// SharedIntermediate is the width of the shared expert(s) every token
	// goes through (0: none); SharedGate is Qwen2-MoE's sigmoid gate on it.
	SharedIntermediate int  `json:"shared_intermediate,omitempty"`
	SharedGate         bool `json:"shared_gate,omitempty"`
	// Layers is how many decoder layers are MoE layers; the others have a
	// dense MLP of Config.Intermediate.
	Layers int `json:"layers"`
	// RouterBias is DeepSeek V3's e_score_correction_bias (noaux_tc), or
	// gpt-oss's router bias: one a routed expert.
	RouterBias bool `json:"router_bias,omitempty"`
	// ExpertBias: each routed expert's projections carry biases (gpt-oss).
	ExpertBias bool `json:"expert_bias,omitempty"`
}

// MLA is DeepSeek's multi-head latent attention: queries (through a
// low-rank QLoraRank projection when it is set), keys and values come from
// a compressed latent of KVLoraRank plus a shared rotary key of
// QKRopeHeadDim, which is what the KV cache holds.
type MLA struct {
	QLoraRank     int `json:"q_lora_rank,omitempty"`
	KVLoraRank    int `json:"kv_lora_rank"`
	QKNopeHeadDim int `json:"qk_nope_head_dim"`
	QKRopeHeadDim int `json:"qk_rope_head_dim"`
	VHeadDim      int `json:"v_head_dim"`
}

// Vision is a SigLIP-style vision tower and its projection into the text
// model (Gemma 3).
type Vision struct {
	Layers       int `json:"layers"`
	Hidden       int `json:"hidden"`
	Intermediate int `json:"intermediate"`
	ImageSize    int `json:"image_size"`
	PatchSize    int `json:"patch_size"`
	Channels     int `json:"channels"`
}

// Quantization is a checkpoint's quantization_config.
type Quantization struct {
	// Method is quant_method (fp8, awq, gptq, compressed-tensors, ...).
	Method string `json:"method"`
	// WeightBits and WeightType ("int" or "float") are the stored weight
	// format (0 and "" when the config does not say).
	WeightBits int    `json:"weight_bits,omitempty"`
	WeightType string `json:"weight_type,omitempty"`
	// ActivationBits is the activations' width when they are quantised
	// too (8 for w8a8; 0: they stay 16-bit).
	ActivationBits int `json:"activation_bits,omitempty"`
	// GroupSize is the weights per scale of a grouped int format (0: per
	// channel or not said).
	GroupSize int `json:"group_size,omitempty"`
	// ExpertsOnly: only the routed experts are quantised, every other
	// layer keeps the model's dtype (gpt-oss's MXFP4 checkpoints, whose
	// modules_to_not_convert name attention, router, embeddings and
	// output projection).
	ExpertsOnly bool `json:"experts_only,omitempty"`
}

// Families lists the model_type values Parse reads, sorted.
func Families() []string {
	out := make([]string, 0, len(families))
	for k := range families {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Count is a model's parameters by part. Every figure is a number of
// parameters (not bytes).
type Count struct {
	// Total is every parameter the engine loads: the text model and the
	// vision tower (not DeepSeek's multi-token-prediction layers).
	Total int64 `json:"total"`
	// Active is the parameters one text token uses: Total without the
	// vision tower and without the routed experts a token is not routed
	// to (ExpertsPerToken of Experts in each MoE layer). It counts both
	// embeddings, as Mixtral's published 12.9B does.
	Active int64 `json:"active"`
	// Embedding is the input embedding (vocab x hidden), LMHead the output
	// projection (0 when tied to the embedding).
	Embedding int64 `json:"embedding"`
	LMHead    int64 `json:"lm_head"`
	// Attention, DenseMLP, Norms: over all layers (Norms with the final
	// norm; the per-head q/k norms are in Attention).
	Attention int64 `json:"attention"`
	DenseMLP  int64 `json:"dense_mlp"`
	Norms     int64 `json:"norms"`
	// RoutedExperts is every routed expert of every MoE layer,
	// ActiveExperts the share of them one token uses; SharedExperts and
	// Routers are the shared experts (with their gates) and the router
	// weights.
	RoutedExperts int64 `json:"routed_experts,omitempty"`
	ActiveExperts int64 `json:"active_experts,omitempty"`
	SharedExperts int64 `json:"shared_experts,omitempty"`
	Routers       int64 `json:"routers,omitempty"`
	// Vision is the vision tower and its projection.
	Vision int64 `json:"vision,omitempty"`
	// Sinks is gpt-oss's attention sinks, a learned logit a head a layer.
	Sinks int64 `json:"sinks,omitempty"`
	// expertsOnly: the checkpoint quantises only the routed experts
	// (Linear).
	expertsOnly bool
}

// NonEmbedding is Total less the embedding and the output projection, the
// figure Qwen's model cards publish beside the total.
func (c Count) NonEmbedding() int64 { return c.Total - c.Embedding - c.LMHead - c.Vision }

// Count counts c's parameters.
func (c Config) Count() Count {
	h := int64(c.Hidden)
	var n Count
	n.Embedding = int64(c.Vocab) * h
	if !c.TiedEmbeddings {
		n.LMHead = n.Embedding
	}
	n.Attention = int64(c.Layers) * c.attentionParams()
	n.Norms = int64(c.Layers)*int64(c.NormsPerLayer)*h + h
	if c.AttentionSinks {
		n.Sinks = int64(c.Layers) * int64(c.Heads)
	}
	denseLayers := int64(c.Layers)
	if m := c.MoE; m != nil {
		denseLayers -= int64(m.Layers)
		expert := mlpParams(h, int64(m.Intermediate), m.ExpertBias)
		layers := int64(m.Layers)
		n.RoutedExperts = layers * int64(m.Experts) * expert
		n.ActiveExperts = layers * int64(m.ExpertsPerToken) * expert
		n.Routers = layers * int64(m.Experts) * h
		if m.RouterBias {
			n.Routers += layers * int64(m.Experts)
		}
		if m.SharedIntermediate > 0 {
			n.SharedExperts = layers * mlpParams(h, int64(m.SharedIntermediate), false)
			if m.SharedGate {
				n.SharedExperts += layers * h
			}
		}
	}
	n.DenseMLP = denseLayers * mlpParams(h, int64(c.Intermediate), c.MLPBias)
	if v := c.Vision; v != nil {
		n.Vision = v.params() + int64(v.Hidden)*h + int64(v.Hidden) // projector and its norm
	}
	n.expertsOnly = c.Quantization != nil && c.Quantization.ExpertsOnly
	text := n.Embedding + n.LMHead + n.Attention + n.Norms + n.DenseMLP + n.SharedExperts + n.Routers + n.Sinks
	n.Total = text + n.RoutedExperts + n.Vision
	n.Active = text + n.ActiveExperts
	return n
}

// attentionParams is one layer's attention projections (and their
// biases and per-head norms).
func (c Config) attentionParams() int64 {
	h := int64(c.Hidden)
	heads := int64(c.Heads)
	if m := c.MLA; m != nil {
		qk := int64(m.QKNopeHeadDim + m.QKRopeHeadDim)
		var p int64
		if m.QLoraRank > 0 {
			r := int64(m.QLoraRank)
			p += h*r + r + r*heads*qk // q_a_proj, q_a_layernorm, q_b_proj
		} else {
			p += h * heads * qk // q_proj
		}
		kv := int64(m.KVLoraRank)
		p += h*(kv+int64(m.QKRopeHeadDim)) + kv // kv_a_proj_with_mqa, kv_a_layernorm
		p += kv * heads * int64(m.QKNopeHeadDim+m.VHeadDim)
		p += heads * int64(m.VHeadDim) * h // o_proj
		return p
	}
	q := heads * int64(c.HeadDim)
	kv := int64(c.KVHeads) * int64(c.HeadDim)
	p := h*q + 2*h*kv + q*h
	if c.QKVBias {
		p += q + 2*kv
	}
	if c.OutputBias {
		p += h
	}
	if c.QKNorm {
		p += 2 * int64(c.HeadDim)
	}
	return p
}

// mlpParams is a gated MLP (gate, up and down projections).
func mlpParams(h, width int64, bias bool) int64 {
	p := 3 * h * width
	if bias {
		p += 2*width + h
	}
	return p
}

// params is the vision tower: patch and position embeddings, encoder
// layers (attention and MLP with biases, two layer norms) and the final
// layer norm.
func (v Vision) params() int64 {
	h, i := int64(v.Hidden), int64(v.Intermediate)
	side := int64(v.ImageSize / v.PatchSize)
	embed := int64(v.Channels)*int64(v.PatchSize)*int64(v.PatchSize)*h + h + side*side*h
	layer := 4*(h*h+h) + (h*i + i) + (i*h + h) + 2*2*h
	return embed + int64(v.Layers)*layer + 2*h
}

// KVElementsPerTokenLayer is the KV cache elements one token takes in one
// attention layer: a key and a value of head_dim for each KV head, or with
// multi-head latent attention the latent and the rotary key
// (kv_lora_rank + qk_rope_head_dim), which vLLM caches instead.
func (c Config) KVElementsPerTokenLayer() int {
	if m := c.MLA; m != nil {
		return m.KVLoraRank + m.QKRopeHeadDim
	}
	return 2 * c.KVHeads * c.HeadDim
}

// KVElementsPerToken is KVElementsPerTokenLayer over all layers (an
// upper bound where sliding-window layers keep only their window).
func (c Config) KVElementsPerToken() int64 {
	return int64(c.Layers) * int64(c.KVElementsPerTokenLayer())
}

// Describe is a one-line summary of the architecture for plans.
func (c Config) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d layers, hidden %d", c.ModelType, c.Layers, c.Hidden)
	if c.MLA != nil {
		fmt.Fprintf(&b, ", %d heads with latent attention (kv_lora_rank %d)", c.Heads, c.MLA.KVLoraRank)
	} else {
		fmt.Fprintf(&b, ", %d heads (%d KV) of %d", c.Heads, c.KVHeads, c.HeadDim)
	}
	if m := c.MoE; m != nil {
		fmt.Fprintf(&b, ", %d of %d experts in %d layers", m.ExpertsPerToken, m.Experts, m.Layers)
		if m.SharedIntermediate > 0 {
			b.WriteString(" (with shared)")
		}
	}
	if c.TiedEmbeddings {
		b.WriteString(", tied embeddings")
	}
	if c.Vision != nil {
		b.WriteString(", vision tower")
	}
	return b.String()
}
