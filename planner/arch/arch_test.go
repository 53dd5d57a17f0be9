package arch

import (
	"math"
	"strings"
	"testing"
)

// published is a model's parameter count as its publisher states it, and
// where.
type published struct {
	total, nonEmbedding, active float64 // 0: not published
	// activeNonEmbedding is an active count that leaves both embeddings
	// out (GLM-4.5-Air's 12B).
	activeNonEmbedding float64
	source             string
}

// publishedCounts are the counts the model cards and papers state (the
// Hugging Face page's safetensors total where the card gives none).
var publishedCounts = map[string]published{
	"Qwen/Qwen3-0.6B":    {total: 0.6e9, nonEmbedding: 0.44e9, source: "huggingface.co/Qwen/Qwen3-0.6B model card"},
	"Qwen/Qwen3-1.7B":    {nonEmbedding: 1.4e9, source: "huggingface.co/Qwen/Qwen3-1.7B model card (1.7B total is rounded coarser than 1%)"},
	"Qwen/Qwen3-4B":      {total: 4.0e9, nonEmbedding: 3.6e9, source: "huggingface.co/Qwen/Qwen3-4B model card"},
	"Qwen/Qwen3-8B":      {total: 8.2e9, nonEmbedding: 6.95e9, source: "huggingface.co/Qwen/Qwen3-8B model card"},
	"Qwen/Qwen3-14B":     {total: 14.8e9, nonEmbedding: 13.2e9, source: "huggingface.co/Qwen/Qwen3-14B model card"},
	"Qwen/Qwen3-32B":     {total: 32.8e9, nonEmbedding: 31.2e9, source: "huggingface.co/Qwen/Qwen3-32B model card"},
	"Qwen/Qwen3-8B-FP8":  {total: 8.2e9, nonEmbedding: 6.95e9, source: "huggingface.co/Qwen/Qwen3-8B-FP8 model card (Qwen3-8B's counts; the FP8 checkpoint quantises its weights, not its architecture)"},
	"Qwen/Qwen3-14B-FP8": {total: 14.8e9, nonEmbedding: 13.2e9, source: "huggingface.co/Qwen/Qwen3-14B-FP8 model card (Qwen3-14B's counts)"},
	"Qwen/Qwen3-14B-AWQ": {total: 14.8e9, nonEmbedding: 13.2e9, source: "huggingface.co/Qwen/Qwen3-14B-AWQ model card (Qwen3-14B's counts)"},
	"Qwen/Qwen3-32B-FP8": {total: 32.8e9, nonEmbedding: 31.2e9, source: "huggingface.co/Qwen/Qwen3-32B-FP8 model card (Qwen3-32B's counts)"},
	"Qwen/Qwen3-32B-AWQ": {total: 32.8e9, nonEmbedding: 31.2e9, source: "huggingface.co/Qwen/Qwen3-32B-AWQ model card (Qwen3-32B's counts)"},
	"Qwen/Qwen3-30B-A3B-FP8": {total: 30.5e9, nonEmbedding: 29.9e9, active: 3.3e9,
		source: "huggingface.co/Qwen/Qwen3-30B-A3B-FP8 model card (Qwen3-30B-A3B's counts)"},
	"Qwen/Qwen3-235B-A22B-Instruct-2507-FP8": {total: 235e9, nonEmbedding: 234e9, active: 22e9,
		source: "huggingface.co/Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 model card (the 2507 release's counts)"},
	"zai-org/GLM-4.6-FP8": {total: 355e9, activeNonEmbedding: 32e9,
		source: "huggingface.co/zai-org/GLM-4.6-FP8 (GLM-4.6 in FP8: GLM-4.5's 355B total, 32B active)"},
	"Qwen/Qwen3-30B-A3B": {total: 30.5e9, nonEmbedding: 29.9e9, active: 3.3e9,
		source: "huggingface.co/Qwen/Qwen3-30B-A3B model card"},
	"Qwen/Qwen3-235B-A22B-Instruct-2507": {total: 235e9, nonEmbedding: 234e9, active: 22e9,
		source: "huggingface.co/Qwen/Qwen3-235B-A22B-Instruct-2507 model card (235B total, 234B non-embedding, 22B activated)"},
	"zai-org/GLM-4.5-Air": {total: 106e9, activeNonEmbedding: 12e9,
		source: "huggingface.co/zai-org/GLM-4.5-Air model card and github.com/zai-org/GLM-4.5 README (106B total, 12B active, which leaves the embeddings out)"},
	"zai-org/GLM-4.6": {total: 355e9, activeNonEmbedding: 32e9,
		source: "huggingface.co/zai-org/GLM-4.5 model card (355B total, 32B active; GLM-4.6 keeps GLM-4.5's architecture, transformers' Glm4Moe docs)"},
	"openai/gpt-oss-120b": {total: 116.83e9,
		source: "OpenAI, gpt-oss-120b & gpt-oss-20b model card (arXiv:2508.10925), table 1: 116.83B total (its 5.13B active counts the output projection, not the input embedding)"},
	"openai/gpt-oss-20b": {total: 20.91e9,
		source: "OpenAI, gpt-oss-120b & gpt-oss-20b model card (arXiv:2508.10925), table 1: 20.91B total (3.61B active)"},
	"Qwen/Qwen2.5-7B-Instruct": {total: 7.61e9, nonEmbedding: 6.53e9, source: "huggingface.co/Qwen/Qwen2.5-7B-Instruct model card"},
	"Qwen/Qwen1.5-MoE-A2.7B":   {total: 14.3e9, active: 2.7e9, source: "qwenlm.github.io/blog/qwen-moe (14.3B total, 2.7B activated)"},
	"meta-llama/Llama-3.1-8B":  {total: 8.03e9, source: "huggingface.co/meta-llama/Llama-3.1-8B (safetensors, 8.03B)"},
	"meta-llama/Llama-3.1-8B-Instruct": {total: 8.03e9,
		source: "huggingface.co/meta-llama/Llama-3.1-8B-Instruct (safetensors, 8.03B)"},
	"meta-llama/Llama-3.1-70B-Instruct": {total: 70.6e9,
		source: "huggingface.co/meta-llama/Llama-3.1-70B-Instruct (safetensors, 70.6B)"},
	"meta-llama/Llama-3.3-70B-Instruct": {total: 70.6e9,
		source: "huggingface.co/meta-llama/Llama-3.3-70B-Instruct (safetensors, 70.6B)"},
	"meta-llama/Llama-3.2-3B-Instruct": {total: 3.21e9,
		source: "huggingface.co/meta-llama/Llama-3.2-3B-Instruct (safetensors, 3.21B)"},
	"mistralai/Mistral-7B-Instruct-v0.3": {total: 7.25e9,
		source: "huggingface.co/mistralai/Mistral-7B-Instruct-v0.3 (safetensors, 7.25B)"},
	"mistralai/Mixtral-8x7B-Instruct-v0.1": {total: 46.7e9, active: 12.9e9,
		source: "mistral.ai/news/mixtral-of-experts (46.7B total, 12.9B per token)"},
	"google/gemma-7b":      {total: 8.54e9, source: "huggingface.co/google/gemma-7b (safetensors, 8.54B)"},
	"google/gemma-2-9b-it": {total: 9.24e9, source: "huggingface.co/google/gemma-2-9b-it (safetensors, 9.24B)"},
	"google/gemma-3-1b-it": {total: 1.0e9, source: "huggingface.co/google/gemma-3-1b-it (safetensors, 1000M)"},
	"google/gemma-3-12b-it": {total: 12.2e9,
		source: "huggingface.co/google/gemma-3-12b-it (safetensors, 12.2B, with the vision tower)"},
	"google/gemma-3-27b-it": {total: 27.4e9,
		source: "huggingface.co/google/gemma-3-27b-it (safetensors, 27.4B, with the vision tower)"},
	"deepseek-ai/DeepSeek-V2-Lite-Chat": {total: 15.7e9,
		source: "DeepSeek-V2 paper, arXiv:2405.04434, appendix B (15.7B total; its 2.4B activated leaves the embeddings out)"},
	"deepseek-ai/DeepSeek-R1-0528": {total: 671e9, active: 37e9,
		source: "DeepSeek-V3 technical report, arXiv:2412.19437 (R1-0528 is DeepSeek-V3's architecture: 671B total without the MTP module, 37B activated)"},
	"deepseek-ai/DeepSeek-V3": {total: 671e9, active: 37e9,
		source: "DeepSeek-V3 technical report, arXiv:2412.19437 (671B total without the 14B MTP module, 37B activated)"},
}

// activeTolerance is how far Count.Active may be from a published active
// count: publishers differ on which embeddings an "activated" figure
// counts (Mixtral's 12.9B counts both; Qwen3-30B-A3B's 3.3B and
// DeepSeek-V3's 37B are 1.6% and 1.5% under a count with both), so the
// test holds active counts to 2%, totals to 1%.
const activeTolerance = 0.02

func relErr(got int64, want float64) float64 { return math.Abs(float64(got)-want) / want }

// TestCatalogCountsMatchPublished: the parameters counted from each
// catalog config.json are the published counts within 1% (active counts
// of mixtures of experts within 2%, see activeTolerance). The errors are
// logged (go test -v -run TestCatalogCountsMatchPublished).
func TestCatalogCountsMatchPublished(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Catalog() {
		pub, ok := publishedCounts[p.ID]
		if !ok {
			t.Errorf("%s: no published count to check it against", p.ID)
			continue
		}
		seen[p.ID] = true
		n := p.Config.Count()
		check := func(what string, got int64, want, tol float64) {
			if want == 0 {
				return
			}
			e := relErr(got, want)
			t.Logf("%-36s %-13s %15d vs %6.2fB published: %+.2f%%", p.ID, what, got, want/1e9, 100*(float64(got)-want)/want)
			if e > tol {
				t.Errorf("%s: %s %d is %.2f%% from the published %.3gB (%s)", p.ID, what, got, 100*e, want/1e9, pub.source)
			}
		}
		check("total", n.Total, pub.total, 0.01)
		check("non-embedding", n.NonEmbedding(), pub.nonEmbedding, 0.01)
		check("active", n.Active, pub.active, activeTolerance)
		check("active non-embedding", n.Active-n.Embedding-n.LMHead, pub.activeNonEmbedding, activeTolerance)
		if p.Config.MoE == nil && n.Active != n.Total-n.Vision {
			t.Errorf("%s: a dense model's active count %d is not its text model %d", p.ID, n.Active, n.Total-n.Vision)
		}
	}
	for id := range publishedCounts {
		if !seen[id] {
			t.Errorf("%s has a published count but no catalog config", id)
		}
	}
}

// TestExactCounts pins the counts that equal the safetensors totals to the
// parameter, so a change to the counting rules shows.
func TestExactCounts(t *testing.T) {
	for id, want := range map[string]int64{
		"Qwen/Qwen3-0.6B":                      596_049_920,
		"Qwen/Qwen3-8B":                        8_190_735_360,
		"meta-llama/Llama-3.1-8B":              8_030_261_248,
		"meta-llama/Llama-3.1-70B-Instruct":    70_553_706_496,
		"mistralai/Mixtral-8x7B-Instruct-v0.1": 46_702_792_704,
		"google/gemma-2-9b-it":                 9_241_705_984,
		"google/gemma-3-27b-it":                27_432_406_640,
		"Qwen/Qwen2.5-7B-Instruct":             7_615_616_512,
	} {
		p, ok := Lookup(id)
		if !ok {
			t.Fatalf("%s not in the catalog", id)
		}
		if got := p.Config.Count().Total; got != want {
			t.Errorf("%s: %d parameters, want %d", id, got, want)
		}
	}
}

func mustLookup(t *testing.T, id string) Config {
	t.Helper()
	p, ok := Lookup(id)
	if !ok {
		t.Fatalf("%s not in the catalog", id)
	}
	return p.Config
}

func TestArchitectureFacts(t *testing.T) {
	q := mustLookup(t, "Qwen/Qwen3-30B-A3B")
	if q.MoE == nil || q.MoE.Experts != 128 || q.MoE.ExpertsPerToken != 8 || q.MoE.Layers != 48 || q.MoE.Intermediate != 768 {
		t.Errorf("Qwen3-30B-A3B MoE = %+v", q.MoE)
	}
	if got := q.KVElementsPerTokenLayer(); got != 2*4*128 {
		t.Errorf("Qwen3-30B-A3B KV elements a layer = %d, want %d", got, 2*4*128)
	}
	d := mustLookup(t, "deepseek-ai/DeepSeek-V3")
	if d.MLA == nil || d.MoE == nil || d.MoE.Layers != 58 || d.MoE.SharedIntermediate != 2048 || !d.MoE.RouterBias || d.MTPLayers != 1 {
		t.Errorf("DeepSeek-V3 = MLA %+v MoE %+v MTP %d", d.MLA, d.MoE, d.MTPLayers)
	}
	if got := d.KVElementsPerTokenLayer(); got != 512+64 {
		t.Errorf("DeepSeek-V3 caches %d elements a token a layer, want the latent and rotary key, 576", got)
	}
	if d.Quantization == nil || d.Quantization.Method != "fp8" || d.Quantization.WeightBits != 8 {
		t.Errorf("DeepSeek-V3 quantization = %+v", d.Quantization)
	}
	z := mustLookup(t, "zai-org/GLM-4.5-Air")
	if z.MoE == nil || z.MoE.Layers != 45 || z.MoE.Experts != 128 || z.MoE.SharedIntermediate != 1408 || !z.MoE.RouterBias ||
		!z.QKVBias || z.OutputBias || z.QKNorm || z.MTPLayers != 1 || z.KVElementsPerTokenLayer() != 2*8*128 {
		t.Errorf("GLM-4.5-Air (one dense layer, then 45 MoE layers; biased q, k and v) = %+v MoE %+v", z, z.MoE)
	}
	for id, active := range map[string]float64{"openai/gpt-oss-120b": 5.13e9, "openai/gpt-oss-20b": 3.61e9} {
		o := mustLookup(t, id)
		n := o.Count()
		// The model card's active counts leave the input embedding out.
		if o.MoE == nil || !o.MoE.ExpertBias || !o.MoE.RouterBias || !o.AttentionSinks || !o.OutputBias ||
			o.SlidingWindow != 128 || o.SlidingLayers != o.Layers/2 || relErr(n.Active-n.Embedding, active) > 0.002 {
			t.Errorf("%s = %+v MoE %+v, active without the input embedding %d (card %.3gB)", id, o, o.MoE, n.Active-n.Embedding, active/1e9)
		}
		// MXFP4 narrows the routed experts alone.
		if o.Quantization == nil || o.Quantization.Method != "mxfp4" || n.Linear() != n.RoutedExperts {
			t.Errorf("%s: quantization %+v, %d linear parameters of %d in the experts", id, o.Quantization, n.Linear(), n.RoutedExperts)
		}
	}
	g := mustLookup(t, "google/gemma-3-12b-it")
	if g.Vocab != 262208 || g.HeadDim != 256 || !g.TiedEmbeddings || g.Vision == nil || g.SlidingLayers != 40 || g.SlidingWindow != 1024 {
		t.Errorf("gemma-3-12b-it (its text_config relies on Gemma3TextConfig's defaults) = %+v", g)
	}
	g2 := mustLookup(t, "google/gemma-2-9b-it")
	if g2.SlidingLayers != 21 || g2.NormsPerLayer != 4 {
		t.Errorf("gemma-2-9b-it: %d sliding layers, %d norms a layer; want 21 and 4", g2.SlidingLayers, g2.NormsPerLayer)
	}
	l := mustLookup(t, "meta-llama/Llama-3.1-8B")
	if l.MoE != nil || l.MLA != nil || l.TiedEmbeddings || l.KVElementsPerToken() != 32*2*8*128 {
		t.Errorf("Llama-3.1-8B = %+v", l)
	}
	if s := l.Describe(); !strings.Contains(s, "32 layers") || !strings.Contains(s, "32 heads (8 KV) of 128") {
		t.Errorf("Describe = %q", s)
	}
}

// TestActiveFollowsExperts: routing more experts a token adds exactly the
// experts' parameters to the active count and leaves the total alone.
func TestActiveFollowsExperts(t *testing.T) {
	c := mustLookup(t, "Qwen/Qwen3-30B-A3B")
	base := c.Count()
	m := *c.MoE
	m.ExpertsPerToken *= 2
	c.MoE = &m
	more := c.Count()
	expert := int64(3 * c.Hidden * m.Intermediate)
	if more.Total != base.Total || more.Active-base.Active != int64(m.Layers)*int64(m.ExpertsPerToken/2)*expert {
		t.Errorf("doubling experts per token: total %d -> %d, active %d -> %d", base.Total, more.Total, base.Active, more.Active)
	}
}

func TestParseErrorsNameTheField(t *testing.T) {
	base := `"model_type":"llama","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":100,"intermediate_size":128`
	for _, tc := range []struct{ json, want string }{
		{`[]`, "not a JSON object"},
		{`{}`, `"model_type": missing`},
		{`{"model_type":"phi3"}`, `model type "phi3" is not one InferCrane reads`},
		{`{"model_type":"llama"}`, `"num_hidden_layers": missing`},
		{`{` + base + `,"num_key_value_heads":3}`, `"num_key_value_heads": 3 KV heads do not divide the 4 attention heads`},
		{`{` + strings.Replace(base, `"hidden_size":64`, `"hidden_size":"64"`, 1) + `}`, `"hidden_size": want an integer, got "64"`},
		{`{` + strings.Replace(base, `"hidden_size":64`, `"hidden_size":1e12`, 1) + `}`, `"hidden_size": want an integer from 1 to 65536`},
		{`{` + strings.Replace(base, `"hidden_size":64`, `"hidden_size":64.5`, 1) + `}`, `"hidden_size": want an integer`},
		{`{` + strings.Replace(base, `"intermediate_size":128`, `"x":1`, 1) + `}`, `"intermediate_size": missing`},
		{`{` + strings.Replace(base, `"llama"`, `"mixtral"`, 1) + `}`, `"num_local_experts": missing`},
		{`{` + strings.Replace(base, `"llama"`, `"mixtral"`, 1) + `,"num_local_experts":4,"num_experts_per_tok":5}`, `"num_experts_per_tok": want an integer from 1 to 4`},
		{`{"model_type":"gemma3"}`, `"text_config": missing`},
		{`{"model_type":"gemma3","text_config":{"hidden_size":true}}`, `"text_config.hidden_size": want an integer, got true`},
		{`{"model_type":"gemma3","text_config":{},"vision_config":{"patch_size":1000}}`, `"vision_config.patch_size": patch_size 1000 is larger than image_size 224`},
		{`{` + strings.Replace(base, `"llama"`, `"deepseek_v3"`, 1) + `}`, `"kv_lora_rank": missing`},
		{`{` + strings.Replace(base, `"llama"`, `"glm4_moe"`, 1) + `,"n_routed_experts":8}`, `"num_experts_per_tok": missing`},
		{`{` + strings.Replace(base, `"llama"`, `"glm4_moe"`, 1) + `,"use_qk_norm":1}`, `"use_qk_norm"`},
		{`{` + strings.Replace(base, `"llama"`, `"gpt_oss"`, 1) + `}`, `"num_local_experts": missing`},
		{`{` + base + `,"tie_word_embeddings":"yes"}`, `"tie_word_embeddings": want true or false, got "yes"`},
		{`{` + base + `,"quantization_config":{"bits":4}}`, `"quantization_config.quant_method": missing`},
		{`{` + base + `} {}`, "more after its JSON object"},
	} {
		_, err := Parse([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v, want an error containing %q", tc.json, err, tc.want)
		}
	}
}

func TestParseQuantization(t *testing.T) {
	base := `"model_type":"qwen3","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":100,"intermediate_size":128`
	for _, tc := range []struct {
		q    string
		want Quantization
	}{
		{`{"activation_scheme":"dynamic","fmt":"e4m3","quant_method":"fp8","weight_block_size":[128,128]}`,
			Quantization{Method: "fp8", WeightBits: 8, WeightType: "float", ActivationBits: 8}},
		{`{"bits":4,"group_size":128,"quant_method":"awq","version":"gemm","zero_point":true}`,
			Quantization{Method: "awq", WeightBits: 4, WeightType: "int", GroupSize: 128}},
		{`{"bits":8,"group_size":-1,"quant_method":"gptq","desc_act":false}`,
			Quantization{Method: "gptq", WeightBits: 8, WeightType: "int"}},
		{`{"quant_method":"compressed-tensors","format":"int-quantized","config_groups":{"group_0":{"targets":["Linear"],
			"weights":{"num_bits":8,"type":"int","strategy":"channel","symmetric":true},
			"input_activations":{"num_bits":8,"type":"int","dynamic":true,"strategy":"token"}}}}`,
			Quantization{Method: "compressed-tensors", WeightBits: 8, WeightType: "int", ActivationBits: 8}},
		{`{"quant_method":"compressed-tensors","config_groups":{"group_0":{"weights":{"num_bits":4,"type":"int","group_size":128}}}}`,
			Quantization{Method: "compressed-tensors", WeightBits: 4, WeightType: "int", GroupSize: 128}},
	} {
		c, err := Parse([]byte(`{` + base + `,"quantization_config":` + tc.q + `}`))
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		if c.Quantization == nil || *c.Quantization != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.q, c.Quantization, tc.want)
		}
	}
}

func TestCatalogDigests(t *testing.T) {
	for _, p := range Catalog() {
		b, err := catalogFiles.ReadFile("catalog/" + strings.Replace(p.ID, "/", "--", 1) + ".json")
		if err != nil {
			t.Fatal(err)
		}
		if p.Digest != Digest(b) || !strings.HasPrefix(p.Digest, "sha256:") {
			t.Errorf("%s: digest %s", p.ID, p.Digest)
		}
	}
	if _, ok := Lookup("qwen/qwen3-8b"); !ok {
		t.Error("Lookup is not case-insensitive")
	}
}
