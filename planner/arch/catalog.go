package arch

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// catalogFiles holds the catalog's config.json files, one per model, named
// ORG--NAME.json as the Hugging Face cache names a model's directory.
//
//go:embed catalog/*.json
var catalogFiles embed.FS

// Pinned is a config.json with where it came from.
type Pinned struct {
	// ID is the Hugging Face repository id.
	ID string `json:"id"`
	// Source says where the file came from: the catalog entry's published
	// config.json, or the file or cache path it was read from.
	Source string `json:"source"`
	// Revision is the repository commit the file is from, where known.
	Revision string `json:"revision,omitempty"`
	// Digest is sha256 of the file's bytes, as read.
	Digest string `json:"digest"`
	// Config is the file, parsed.
	Config Config `json:"config"`
}

// revisions are the commits of the catalog's configs that the project
// pins elsewhere too (the examples and the design); the other entries
// are transcribed from the repository's main branch (2025-2026), their
// architecture fields checked against the published parameter counts
// (TestCatalogCountsMatchPublished). Qwen3-235B-A22B-Instruct-2507's
// keeps only the architecture fields, from the model card and vLLM's
// test config of Qwen3-235B-A22B, with the 2507 release's context;
// GLM-4.5-Air's likewise, from its model card's counts (106B, 12B
// active), the layout of slime's scripts/models/glm4.5-106B-A12B.sh (1
// dense and 45 MoE layers, 96 heads and 8 KV heads of 128, biased q, k
// and v, 128 experts of 1,408 with 8 a token and one shared, an expert
// bias on the router) and vLLM's fused-MoE configurations for its
// E=128, N=352 shape at tensor parallelism 4. GLM-4.6's is GLM-4.5's
// layout (slime's scripts/models/glm4.5-355B-A32B.sh: 3 dense and 89 MoE
// layers, hidden 5,120, 160 experts of 1,536, q/k norms; transformers'
// Glm4Moe serves both) with GLM-4.6's 202,752 positions.
// DeepSeek-R1-0528's is DeepSeek-V3's config (the same architecture and
// FP8 checkpoint format). The gpt-oss entries hold their model card's
// layout (arXiv:2508.10925: 36 and 24 layers of 128 and 32 experts, 4 a
// token, hidden 2,880, 64 heads of 64 with 8 KV heads, alternating
// 128-token sliding windows, MXFP4 experts); their counts equal its
// totals to 0.02%. The quantised checkpoints (Qwen's -FP8 and -AWQ
// releases of Qwen3 8B to 235B-A22B, zai-org's GLM-4.6-FP8) are their
// base model's config with the quantization_config their model cards
// describe: Qwen's FP8 checkpoints "fine-grained fp8 quantization with
// a block size of 128" (quant_method fp8, e4m3, dynamic activation
// scales, 128x128 weight blocks), its AWQ checkpoints AWQ 4-bit weights
// in groups of 128 (float16, as AWQ checkpoints are stored), and
// GLM-4.6-FP8 FP8 weights per channel with dynamic per-token FP8
// activations (compressed-tensors, llm-compressor's float-quantized
// format); what the planner reads of them is the method and the weight
// and activation widths (Quantization), which decide the precision.
var revisions = map[string]string{
	"Qwen/Qwen3-0.6B": "c1899de289a04d12100db370d81485cdf75e47ca",
	"Qwen/Qwen3-1.7B": "70d244cc86ccca08cf5af4e1e306ecf908b1ad5e",
}

// Catalog returns the catalog's pinned configs, sorted by id (the
// caller must not modify them).
func Catalog() []Pinned { return catalog() }

var catalog = sync.OnceValue(func() []Pinned {
	entries, err := catalogFiles.ReadDir("catalog")
	if err != nil {
		panic(err) // embedded at build time
	}
	out := make([]Pinned, 0, len(entries))
	for _, e := range entries {
		p, err := catalogEntry(e.Name())
		if err != nil {
			panic(err) // TestCatalogParses keeps the catalog readable
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
})

// Lookup finds a model of the catalog by id, ignoring case.
func Lookup(id string) (Pinned, bool) {
	for _, p := range Catalog() {
		if strings.EqualFold(p.ID, id) {
			return p, true
		}
	}
	return Pinned{}, false
}

func catalogEntry(name string) (Pinned, error) {
	b, err := catalogFiles.ReadFile("catalog/" + name)
	if err != nil {
		return Pinned{}, err
	}
	id := strings.Replace(strings.TrimSuffix(name, ".json"), "--", "/", 1)
	p, err := Pin(b, id, "huggingface.co/"+id+" config.json (InferCrane catalog)")
	if err != nil {
		return Pinned{}, fmt.Errorf("catalog %s: %w", name, err)
	}
	p.Revision = revisions[id]
	return p, nil
}

// Pin parses a config.json read from source for model id.
func Pin(data []byte, id, source string) (Pinned, error) {
	c, err := Parse(data)
	if err != nil {
		return Pinned{}, err
	}
	return Pinned{ID: id, Source: source, Digest: Digest(data), Config: c}, nil
}

// Digest is the sha256 digest of a file's bytes, as sha256:HEX.
func Digest(data []byte) string {
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:])
}
