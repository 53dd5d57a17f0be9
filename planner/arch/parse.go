package arch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Bounds on what Parse accepts: well above any published model, low
// enough that no count overflows an int64.
const (
	maxLayers  = 1 << 10
	maxHidden  = 1 << 16
	maxWidth   = 1 << 19
	maxHeads   = 1 << 10
	maxHeadDim = 1 << 12
	maxVocab   = 1 << 22
	maxExperts = 1 << 12
	maxRank    = 1 << 16
	maxContext = 1 << 24
	maxImage   = 1 << 14
)

// family reads the family-specific parts of a config after the common
// decoder fields.
type family struct {
	// tied is tie_word_embeddings' default in the family's transformers
	// config class.
	tied bool
	read func(o object, c *Config) error
}

var families = map[string]family{
	"llama":       {read: readLlama},
	"mistral":     {read: readLlama},
	"mixtral":     {read: readMixtral},
	"qwen2":       {read: readQwen2},
	"qwen2_moe":   {read: readQwen2MoE},
	"qwen3":       {read: readQwen3},
	"qwen3_moe":   {read: readQwen3MoE},
	"gemma":       {tied: true, read: readGemma},
	"gemma2":      {tied: true, read: readGemma2},
	"gemma3_text": {tied: true, read: readGemma3},
	"gemma3":      {tied: true}, // multimodal: its text_config is gemma3_text
	"deepseek_v2": {read: readDeepSeek},
	"deepseek_v3": {read: readDeepSeek},
	"glm4_moe":    {read: readGLM4MoE},
	"gpt_oss":     {read: readGptOss},
}

// gemma3TextDefaults are Gemma3TextConfig's defaults, which Gemma 3's
// published configs rely on (gemma-3-4b-it's text_config gives six fields).
var gemma3TextDefaults = map[string]any{
	"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
	"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131072,
	"sliding_window": 4096, "sliding_window_pattern": 6,
}

// siglipDefaults are SiglipVisionConfig's defaults.
var siglipDefaults = map[string]any{
	"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
	"image_size": 224, "patch_size": 16, "num_channels": 3,
}

// Parse reads a config.json. An error names the field it cannot read
// (nested ones as text_config.hidden_size) and what is wrong with it.
func Parse(data []byte) (Config, error) {
	top, err := parseObject(data, "")
	if err != nil {
		return Config{}, err
	}
	mt, err := top.str("model_type")
	if err != nil {
		return Config{}, err
	}
	fam, ok := families[mt]
	if !ok {
		return Config{}, fmt.Errorf("%q: model type %q is not one InferCrane reads (it reads %s); give the architecture in the model block instead",
			"model_type", mt, strings.Join(Families(), ", "))
	}
	var c Config
	c.ModelType = mt
	if archs, err := top.strs("architectures"); err != nil {
		return Config{}, err
	} else if len(archs) > 0 {
		c.Architecture = archs[0]
	}
	if c.Dtype, err = top.dtype(); err != nil {
		return Config{}, err
	}
	if c.Quantization, err = readQuantization(top); err != nil {
		return Config{}, err
	}
	text := top
	if mt == "gemma3" {
		if text, err = top.object("text_config", true); err != nil {
			return Config{}, err
		}
		text.defaults = gemma3TextDefaults
		fam = families["gemma3_text"]
		vis, err := top.object("vision_config", false)
		if err != nil {
			return Config{}, err
		}
		if vis.m != nil {
			vis.defaults = siglipDefaults
			if c.Vision, err = readVision(vis); err != nil {
				return Config{}, err
			}
		}
		if c.Dtype == "" {
			if c.Dtype, err = text.dtype(); err != nil {
				return Config{}, err
			}
		}
	} else if mt == "gemma3_text" {
		text.defaults = gemma3TextDefaults
	}
	if err := readDecoder(text, fam, &c); err != nil {
		return Config{}, err
	}
	if err := fam.read(text, &c); err != nil {
		return Config{}, err
	}
	if c.MoE != nil && c.MoE.Layers == 0 {
		c.MoE = nil
	}
	return c, nil
}

// readDecoder reads the fields every decoder family shares.
func readDecoder(o object, fam family, c *Config) error {
	var err error
	fields := []struct {
		name     string
		dst      *int
		min, max int
	}{
		{"num_hidden_layers", &c.Layers, 1, maxLayers},
		{"hidden_size", &c.Hidden, 1, maxHidden},
		{"num_attention_heads", &c.Heads, 1, maxHeads},
		{"vocab_size", &c.Vocab, 1, maxVocab},
	}
	for _, f := range fields {
		if *f.dst, err = o.reqInt(f.name, f.min, f.max); err != nil {
			return err
		}
	}
	if c.KVHeads, err = o.optInt("num_key_value_heads", c.Heads, 1, maxHeads); err != nil {
		return err
	}
	if c.KVHeads > c.Heads || c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("%q: %d KV heads do not divide the %d attention heads", o.path("num_key_value_heads"), c.KVHeads, c.Heads)
	}
	if c.HeadDim, err = o.optInt("head_dim", c.Hidden/c.Heads, 1, maxHeadDim); err != nil {
		return err
	}
	if c.HeadDim == 0 {
		return fmt.Errorf("%q: missing, and hidden_size %d / num_attention_heads %d is 0", o.path("head_dim"), c.Hidden, c.Heads)
	}
	if c.MaxPositions, err = o.optInt("max_position_embeddings", 0, 0, maxContext); err != nil {
		return err
	}
	if c.TiedEmbeddings, err = o.optBool("tie_word_embeddings", fam.tied); err != nil {
		return err
	}
	c.NormsPerLayer = 2
	return nil
}

// readIntermediate reads the dense MLP width.
func readIntermediate(o object, c *Config) (err error) {
	c.Intermediate, err = o.reqInt("intermediate_size", 1, maxWidth)
	return err
}

func readLlama(o object, c *Config) error {
	var err error
	if c.QKVBias, err = o.optBool("attention_bias", false); err != nil {
		return err
	}
	c.OutputBias = c.QKVBias
	if c.MLPBias, err = o.optBool("mlp_bias", false); err != nil {
		return err
	}
	if c.SlidingWindow, err = o.optInt("sliding_window", 0, 0, maxContext); err != nil {
		return err
	}
	if c.SlidingWindow > 0 {
		c.SlidingLayers = c.Layers
	}
	return readIntermediate(o, c)
}

func readMixtral(o object, c *Config) error {
	if err := readLlama(o, c); err != nil {
		return err
	}
	m := &MoE{Intermediate: c.Intermediate, Layers: c.Layers}
	var err error
	if m.Experts, err = o.reqInt("num_local_experts", 1, maxExperts); err != nil {
		return err
	}
	if m.ExpertsPerToken, err = o.reqInt("num_experts_per_tok", 1, m.Experts); err != nil {
		return err
	}
	c.MoE = m
	return nil
}

func readQwen2(o object, c *Config) error {
	c.QKVBias = true
	return readQwenWindow(o, c)
}

// readQwenWindow reads Qwen's sliding window, used only when
// use_sliding_window is true, and the dense width.
func readQwenWindow(o object, c *Config) error {
	use, err := o.optBool("use_sliding_window", false)
	if err != nil {
		return err
	}
	if use {
		if c.SlidingWindow, err = o.optInt("sliding_window", 0, 0, maxContext); err != nil {
			return err
		}
		mwl, err := o.optInt("max_window_layers", c.Layers, 0, maxLayers)
		if err != nil {
			return err
		}
		c.SlidingLayers = max(c.Layers-mwl, 0) // layers from max_window_layers on use the window
		if c.SlidingLayers == 0 {
			c.SlidingWindow = 0
		}
	}
	return readIntermediate(o, c)
}

func readQwen3(o object, c *Config) error {
	var err error
	if c.QKVBias, err = o.optBool("attention_bias", false); err != nil {
		return err
	}
	c.OutputBias = c.QKVBias
	c.QKNorm = true
	return readQwenWindow(o, c)
}

// readQwenMoE reads the MoE layers Qwen2-MoE and Qwen3-MoE share: layer i
// is an MoE layer unless mlp_only_layers lists it or (i+1) is not a
// multiple of decoder_sparse_step.
func readQwenMoE(o object, c *Config) (*MoE, error) {
	m := &MoE{}
	var err error
	if m.Experts, err = o.reqInt("num_experts", 1, maxExperts); err != nil {
		return nil, err
	}
	if m.ExpertsPerToken, err = o.reqInt("num_experts_per_tok", 1, m.Experts); err != nil {
		return nil, err
	}
	if m.Intermediate, err = o.reqInt("moe_intermediate_size", 1, maxWidth); err != nil {
		return nil, err
	}
	step, err := o.optInt("decoder_sparse_step", 1, 1, maxLayers)
	if err != nil {
		return nil, err
	}
	only, err := o.ints("mlp_only_layers")
	if err != nil {
		return nil, err
	}
	dense := map[int]bool{}
	for _, l := range only {
		dense[l] = true
	}
	for i := range c.Layers {
		if !dense[i] && (i+1)%step == 0 {
			m.Layers++
		}
	}
	return m, nil
}

func readQwen2MoE(o object, c *Config) error {
	if err := readQwen2(o, c); err != nil {
		return err
	}
	m, err := readQwenMoE(o, c)
	if err != nil {
		return err
	}
	if m.SharedIntermediate, err = o.optInt("shared_expert_intermediate_size", 0, 0, maxWidth); err != nil {
		return err
	}
	m.SharedGate = m.SharedIntermediate > 0
	c.MoE = m
	return nil
}

func readQwen3MoE(o object, c *Config) error {
	if err := readQwen3(o, c); err != nil {
		return err
	}
	m, err := readQwenMoE(o, c)
	c.MoE = m
	return err
}

func readGemma(o object, c *Config) error {
	var err error
	if c.QKVBias, err = o.optBool("attention_bias", false); err != nil {
		return err
	}
	c.OutputBias = c.QKVBias
	return readIntermediate(o, c)
}

// readGemma2 reads Gemma 2: four norms a layer, and every other layer
// (the even ones) attends within sliding_window.
func readGemma2(o object, c *Config) error {
	if err := readGemma(o, c); err != nil {
		return err
	}
	c.NormsPerLayer = 4
	var err error
	if c.SlidingWindow, err = o.optInt("sliding_window", 4096, 0, maxContext); err != nil {
		return err
	}
	return readLayerTypes(o, c, func(i int) bool { return i%2 == 0 })
}

// readGemma3 reads Gemma 3's text model: Gemma 2's layers with q/k norms,
// and five sliding layers in six (sliding_window_pattern).
func readGemma3(o object, c *Config) error {
	if err := readGemma(o, c); err != nil {
		return err
	}
	c.NormsPerLayer = 4
	c.QKNorm = true
	var err error
	if c.SlidingWindow, err = o.optInt("sliding_window", 4096, 0, maxContext); err != nil {
		return err
	}
	pattern, err := o.optInt("sliding_window_pattern", 6, 1, maxLayers)
	if err != nil {
		return err
	}
	return readLayerTypes(o, c, func(i int) bool { return (i+1)%pattern != 0 })
}

// readLayerTypes counts the sliding-window layers from layer_types when
// the config lists them, else by the family's rule.
func readLayerTypes(o object, c *Config, sliding func(int) bool) error {
	types, err := o.strs("layer_types")
	if err != nil {
		return err
	}
	if types != nil && len(types) != c.Layers {
		return fmt.Errorf("%q: %d entries for %d layers", o.path("layer_types"), len(types), c.Layers)
	}
	c.SlidingLayers = 0
	for i := range c.Layers {
		if (types != nil && types[i] == "sliding_attention") || (types == nil && sliding(i)) {
			c.SlidingLayers++
		}
	}
	if c.SlidingWindow == 0 {
		c.SlidingLayers = 0
	}
	return nil
}

// readDeepSeek reads DeepSeek V2/V3: multi-head latent attention, and MoE
// layers from first_k_dense_replace on (every moe_layer_freq-th) with
// shared experts.
func readDeepSeek(o object, c *Config) error {
	if err := readIntermediate(o, c); err != nil {
		return err
	}
	var err error
	if c.QKVBias, err = o.optBool("attention_bias", false); err != nil {
		return err
	}
	if c.QKVBias {
		return fmt.Errorf("%q: true is not read for latent attention", o.path("attention_bias"))
	}
	a := &MLA{}
	if a.QLoraRank, err = o.optInt("q_lora_rank", 0, 0, maxRank); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		dst  *int
	}{{"kv_lora_rank", &a.KVLoraRank}, {"qk_nope_head_dim", &a.QKNopeHeadDim}, {"qk_rope_head_dim", &a.QKRopeHeadDim}, {"v_head_dim", &a.VHeadDim}} {
		if *f.dst, err = o.reqInt(f.name, 1, maxRank); err != nil {
			return err
		}
	}
	c.MLA = a
	c.HeadDim = a.QKNopeHeadDim + a.QKRopeHeadDim
	c.KVHeads = c.Heads // each head has its own K and V, decompressed from the latent
	if c.MTPLayers, err = o.optInt("num_nextn_predict_layers", 0, 0, maxLayers); err != nil {
		return err
	}
	m, err := readRoutedExperts(o, c)
	if err != nil || m == nil {
		return err
	}
	method, err := o.optStr("topk_method")
	if err != nil {
		return err
	}
	m.RouterBias = method == "noaux_tc"
	c.MoE = m
	return nil
}

// readRoutedExperts reads the expert layout DeepSeek V2/V3 and GLM-4.5
// share: n_routed_experts (nil when 0 or absent), shared experts of the
// routed experts' width, and MoE layers from first_k_dense_replace on,
// every moe_layer_freq-th.
func readRoutedExperts(o object, c *Config) (*MoE, error) {
	experts, err := o.optInt("n_routed_experts", 0, 0, maxExperts)
	if err != nil || experts == 0 {
		return nil, err
	}
	m := &MoE{Experts: experts}
	if m.ExpertsPerToken, err = o.reqInt("num_experts_per_tok", 1, experts); err != nil {
		return nil, err
	}
	if m.Intermediate, err = o.reqInt("moe_intermediate_size", 1, maxWidth); err != nil {
		return nil, err
	}
	shared, err := o.optInt("n_shared_experts", 0, 0, maxExperts)
	if err != nil {
		return nil, err
	}
	m.SharedIntermediate = shared * m.Intermediate
	first, err := o.optInt("first_k_dense_replace", 0, 0, maxLayers)
	if err != nil {
		return nil, err
	}
	freq, err := o.optInt("moe_layer_freq", 1, 1, maxLayers)
	if err != nil {
		return nil, err
	}
	for i := first; i < c.Layers; i++ {
		if i%freq == 0 {
			m.Layers++
		}
	}
	return m, nil
}

// readGLM4MoE reads GLM-4.5 and GLM-4.5-Air (glm4_moe): grouped-query
// attention with biased q, k and v projections (attention_bias; the
// output projection has none) and q/k norms when use_qk_norm is set,
// DeepSeek V3's expert layout (readRoutedExperts) with a score
// correction bias on the router (vLLM's Glm4MoE always loads one), and
// num_nextn_predict_layers multi-token-prediction layers, not counted
// (MTPLayers).
func readGLM4MoE(o object, c *Config) error {
	if err := readIntermediate(o, c); err != nil {
		return err
	}
	var err error
	if c.QKVBias, err = o.optBool("attention_bias", false); err != nil {
		return err
	}
	if c.QKNorm, err = o.optBool("use_qk_norm", false); err != nil {
		return err
	}
	if c.MTPLayers, err = o.optInt("num_nextn_predict_layers", 0, 0, maxLayers); err != nil {
		return err
	}
	m, err := readRoutedExperts(o, c)
	if err != nil || m == nil {
		return err
	}
	m.RouterBias = true
	c.MoE = m
	return nil
}

// readGptOss reads OpenAI's gpt-oss: every layer a mixture of experts
// (num_local_experts of intermediate_size, num_experts_per_tok a token)
// whose experts and router carry biases, attention with biases on all
// four projections and a learned sink a head, and every other layer
// (layer_types, else the even ones) attending within sliding_window; its
// chat is rendered by harmony (HarmonyChat).
func readGptOss(o object, c *Config) error {
	if err := readIntermediate(o, c); err != nil {
		return err
	}
	var err error
	if c.QKVBias, err = o.optBool("attention_bias", true); err != nil {
		return err
	}
	c.OutputBias, c.AttentionSinks, c.HarmonyChat = c.QKVBias, true, true
	m := &MoE{Intermediate: c.Intermediate, Layers: c.Layers, ExpertBias: true, RouterBias: true}
	if m.Experts, err = o.reqInt("num_local_experts", 1, maxExperts); err != nil {
		return err
	}
	if m.ExpertsPerToken, err = o.reqInt("num_experts_per_tok", 1, m.Experts); err != nil {
		return err
	}
	c.MoE = m
	if c.SlidingWindow, err = o.optInt("sliding_window", 0, 0, maxContext); err != nil {
		return err
	}
	return readLayerTypes(o, c, func(i int) bool { return i%2 == 0 })
}

// readVision reads a SigLIP vision_config.
func readVision(o object) (*Vision, error) {
	v := &Vision{}
	var err error
	for _, f := range []struct {
		name     string
		dst      *int
		min, max int
	}{
		{"num_hidden_layers", &v.Layers, 1, maxLayers},
		{"hidden_size", &v.Hidden, 1, maxHidden},
		{"intermediate_size", &v.Intermediate, 1, maxWidth},
		{"image_size", &v.ImageSize, 1, maxImage},
		{"patch_size", &v.PatchSize, 1, maxImage},
		{"num_channels", &v.Channels, 1, 16},
	} {
		if *f.dst, err = o.reqInt(f.name, f.min, f.max); err != nil {
			return nil, err
		}
	}
	if v.PatchSize > v.ImageSize {
		return nil, fmt.Errorf("%q: patch_size %d is larger than image_size %d", o.path("patch_size"), v.PatchSize, v.ImageSize)
	}
	return v, nil
}

// readQuantization reads quantization_config: the method, and the weight
// and activation formats where the config gives them (awq and gptq: bits,
// 4 by default; fp8: 8-bit float; compressed-tensors: the first config
// group's weights and input_activations).
func readQuantization(top object) (*Quantization, error) {
	o, err := top.object("quantization_config", false)
	if err != nil || o.m == nil {
		return nil, err
	}
	q := &Quantization{}
	if q.Method, err = o.str("quant_method"); err != nil {
		return nil, err
	}
	switch q.Method {
	case "fp8":
		q.WeightBits, q.WeightType = 8, "float"
		scheme, err := o.optStr("activation_scheme")
		if err != nil {
			return nil, err
		}
		if scheme != "" {
			q.ActivationBits = 8
		}
	case "mxfp4":
		// The OCP Microscaling format: blocks of 32 FP4 weights sharing an
		// E8M0 scale. vLLM's MXFP4 method quantises the fused MoE layers
		// only.
		q.WeightBits, q.WeightType, q.GroupSize, q.ExpertsOnly = 4, "float", 32, true
	case "awq", "gptq":
		q.WeightType = "int"
		if q.WeightBits, err = o.optInt("bits", 4, 2, 8); err != nil {
			return nil, err
		}
		if q.GroupSize, err = o.optInt("group_size", 0, -1, maxWidth); err != nil {
			return nil, err
		}
		q.GroupSize = max(q.GroupSize, 0)
	case "compressed-tensors":
		groups, err := o.object("config_groups", false)
		if err != nil || groups.m == nil {
			return q, err
		}
		// The first group (by name) describes the linear layers.
		if names := groups.keys(); len(names) > 0 {
			g, err := groups.object(names[0], true)
			if err != nil {
				return nil, err
			}
			w, err := g.object("weights", false)
			if err != nil {
				return nil, err
			}
			if w.m != nil {
				if q.WeightBits, err = w.optInt("num_bits", 0, 0, 32); err != nil {
					return nil, err
				}
				if q.WeightType, err = w.optStr("type"); err != nil {
					return nil, err
				}
				if q.GroupSize, err = w.optInt("group_size", 0, 0, maxWidth); err != nil {
					return nil, err
				}
			}
			a, err := g.object("input_activations", false)
			if err != nil {
				return nil, err
			}
			if a.m != nil {
				if q.ActivationBits, err = a.optInt("num_bits", 0, 0, 32); err != nil {
					return nil, err
				}
			}
		}
	}
	return q, nil
}

// object is one JSON object of a config, with the path that leads to it
// (for errors) and the defaults of its transformers class.
type object struct {
	prefix   string
	m        map[string]json.RawMessage
	defaults map[string]any
}

func parseObject(data []byte, prefix string) (object, error) {
	var m map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&m); err != nil || m == nil {
		what := "the config"
		if prefix != "" {
			what = fmt.Sprintf("%q", strings.TrimSuffix(prefix, "."))
		}
		if err == nil {
			err = fmt.Errorf("null")
		}
		return object{}, fmt.Errorf("%s is not a JSON object: %v", what, err)
	}
	if d.More() {
		return object{}, fmt.Errorf("the config has more after its JSON object")
	}
	return object{prefix: prefix, m: m}, nil
}

func (o object) path(name string) string { return o.prefix + name }

// raw returns the field's JSON, or its class default, or nil when it is
// absent or null.
func (o object) raw(name string) json.RawMessage {
	r, ok := o.m[name]
	if ok && string(bytes.TrimSpace(r)) != "null" {
		return r
	}
	if d, ok := o.defaults[name]; ok {
		b, _ := json.Marshal(d)
		return b
	}
	return nil
}

func (o object) keys() []string {
	out := make([]string, 0, len(o.m))
	for k := range o.m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// object reads a nested object (its m is nil when absent and not required).
func (o object) object(name string, required bool) (object, error) {
	r := o.raw(name)
	if r == nil {
		if required {
			return object{}, fmt.Errorf("%q: missing", o.path(name))
		}
		return object{prefix: o.path(name) + "."}, nil
	}
	return parseObject(r, o.path(name)+".")
}

// integer reads an integer field within [lo, hi]; ok is false when the
// field is absent or null.
func (o object) integer(name string, lo, hi int) (v int, ok bool, err error) {
	r := o.raw(name)
	if r == nil {
		return 0, false, nil
	}
	var f float64
	if err := json.Unmarshal(r, &f); err != nil {
		return 0, false, fmt.Errorf("%q: want an integer, got %s", o.path(name), clip(r))
	}
	if f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, false, fmt.Errorf("%q: want an integer from %d to %d, got %s", o.path(name), lo, hi, clip(r))
	}
	return int(f), true, nil
}

func (o object) reqInt(name string, lo, hi int) (int, error) {
	v, ok, err := o.integer(name, lo, hi)
	if err == nil && !ok {
		err = fmt.Errorf("%q: missing", o.path(name))
	}
	return v, err
}

func (o object) optInt(name string, def, lo, hi int) (int, error) {
	v, ok, err := o.integer(name, lo, hi)
	if !ok {
		return def, err
	}
	return v, err
}

func (o object) optBool(name string, def bool) (bool, error) {
	r := o.raw(name)
	if r == nil {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(r, &b); err != nil {
		return false, fmt.Errorf("%q: want true or false, got %s", o.path(name), clip(r))
	}
	return b, nil
}

func (o object) optStr(name string) (string, error) {
	r := o.raw(name)
	if r == nil {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(r, &s); err != nil {
		return "", fmt.Errorf("%q: want a string, got %s", o.path(name), clip(r))
	}
	return s, nil
}

func (o object) str(name string) (string, error) {
	s, err := o.optStr(name)
	if err == nil && s == "" {
		err = fmt.Errorf("%q: missing", o.path(name))
	}
	return s, err
}

func (o object) strs(name string) ([]string, error) {
	r := o.raw(name)
	if r == nil {
		return nil, nil
	}
	var s []string
	if err := json.Unmarshal(r, &s); err != nil {
		return nil, fmt.Errorf("%q: want a list of strings, got %s", o.path(name), clip(r))
	}
	return s, nil
}

func (o object) ints(name string) ([]int, error) {
	r := o.raw(name)
	if r == nil {
		return nil, nil
	}
	var s []int
	if err := json.Unmarshal(r, &s); err != nil {
		return nil, fmt.Errorf("%q: want a list of integers, got %s", o.path(name), clip(r))
	}
	return s, nil
}

// dtype reads torch_dtype, or dtype (transformers 4.56 and later).
func (o object) dtype() (string, error) {
	if s, err := o.optStr("torch_dtype"); s != "" || err != nil {
		return s, err
	}
	return o.optStr("dtype")
}

// clip shortens a JSON value for an error message.
func clip(r json.RawMessage) string {
	s := strings.Join(strings.Fields(string(r)), " ")
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}
