package perf

import (
	"sort"
	"strings"
)

// GPU is one accelerator type of the catalog.
type GPU struct {
	Name           string  `json:"name"`             // canonical catalog name, e.g. "L40S"
	MemoryGB       float64 `json:"memory_gb"`        // usable device memory in GB (1e9 bytes)
	BandwidthGBs   float64 `json:"bandwidth_gbs"`    // peak HBM/GDDR bandwidth in GB/s
	BF16TFLOPS     float64 `json:"bf16_tflops"`      // dense BF16 peak, no sparsity
	PricePerSecond float64 `json:"price_per_second"` // Modal's published on-demand USD price per GPU-second
	// PrefillMFU is the assumed fraction of peak FLOPS reached in prefill.
	PrefillMFU float64 `json:"prefill_mfu"`
	// DecodeEfficiency is the assumed fraction of peak bandwidth reached in decode.
	DecodeEfficiency float64 `json:"decode_efficiency"`
	// Serial is set for a processor that does not overlap compute with
	// memory traffic (a CPU): a step lasts their sum, not the roofline's
	// maximum (StepTime).
	Serial bool `json:"serial,omitempty"`
}

// Published figures (design section 8). Efficiency defaults: llm-d's roofline
// MFU for prefill (0.32 on L40S-class parts, 0.45 on Hopper and newer) and
// GenZ's 0.8 bandwidth efficiency for decode.
var gpus = []GPU{
	{"T4", 16, 320, 65, 0.000164, 0.30, 0.8, false},
	{"L4", 24, 300, 121, 0.000222, 0.32, 0.8, false},
	{"A10", 24, 600, 125, 0.000306, 0.32, 0.8, false},
	{"L40S", 48, 864, 362, 0.000542, 0.32, 0.8, false},
	{"A100-40GB", 40, 1555, 312, 0.000583, 0.40, 0.8, false},
	{"A100-80GB", 80, 2039, 312, 0.000694, 0.40, 0.8, false},
	{"H100", 80, 3350, 989, 0.001097, 0.45, 0.8, false},
	{"H200", 141, 4800, 989, 0.001261, 0.45, 0.8, false},
	{"B200", 180, 8000, 2250, 0.001736, 0.45, 0.8, false},
	// CPU is the host processor, for local runs of vLLM's CPU build (tiny models
	// in integration tests): a modest host's memory for the KV cache, its DDR
	// bandwidth and AVX2 throughput, and no price. Its steps are serial
	// (compute plus memory traffic), and its prefill MFU is what vLLM 0.32's
	// CPU build reached with the tiny integration model on a 2-core host:
	// a 256-token prompt's TTFT 2.1-2.7 ms over a 128-token one's, about
	// 20 µs a token, at 0.6 MFLOP a token.
	{Name: "CPU", MemoryGB: 16, BandwidthGBs: 20, BF16TFLOPS: 0.2, PrefillMFU: 0.15, DecodeEfficiency: 0.5, Serial: true},
}

// gpuAliases maps other spellings to catalog names.
var gpuAliases = map[string]string{
	"A100":     "A100-40GB",
	"H100-SXM": "H100",
	"H100SXM":  "H100",
	"A10G":     "A10",
}

// LookupGPU finds a GPU by catalog name or alias, ignoring case.
func LookupGPU(name string) (GPU, bool) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if alias, ok := gpuAliases[n]; ok {
		n = alias
	}
	for _, g := range gpus {
		if strings.ToUpper(g.Name) == n {
			return g, true
		}
	}
	return GPU{}, false
}

// GPUNames lists the catalog names in catalog order (smallest first).
func GPUNames() []string {
	out := make([]string, len(gpus))
	for i, g := range gpus {
		out[i] = g.Name
	}
	return out
}

// ModelArch holds the architecture facts of a model (from its config.json).
type ModelArch struct {
	ID            string `json:"id"`
	Params        int64  `json:"params"`
	Layers        int    `json:"layers"`
	Hidden        int    `json:"hidden"`
	Heads         int    `json:"heads"`
	KVHeads       int    `json:"kv_heads"`
	HeadDim       int    `json:"head_dim"`
	Vocab         int    `json:"vocab,omitempty"`
	TiedEmbedding bool   `json:"tied_embedding,omitempty"`
	MaxPositions  int    `json:"max_positions,omitempty"`
}

var models = []ModelArch{
	{"Qwen/Qwen3-0.6B", 596_049_920, 28, 1024, 16, 8, 128, 151_936, true, 40_960},
	{"Qwen/Qwen3-1.7B", 1_720_574_976, 28, 2048, 16, 8, 128, 151_936, true, 40_960},
	{"Qwen/Qwen3-4B", 4_022_468_096, 36, 2560, 32, 8, 128, 151_936, true, 40_960},
	{"Qwen/Qwen3-8B", 8_190_735_360, 36, 4096, 32, 8, 128, 151_936, false, 40_960},
	{"meta-llama/Llama-3.1-8B", 8_030_261_248, 32, 4096, 32, 8, 128, 128_256, false, 131_072},
	{"meta-llama/Llama-3.1-8B-Instruct", 8_030_261_248, 32, 4096, 32, 8, 128, 128_256, false, 131_072},
}

// LookupModel finds the architecture of a known model id, ignoring case.
func LookupModel(id string) (ModelArch, bool) {
	for _, m := range models {
		if strings.EqualFold(m.ID, id) {
			return m, true
		}
	}
	return ModelArch{}, false
}

// ModelIDs lists the model ids the catalog knows, sorted.
func ModelIDs() []string {
	out := make([]string, len(models))
	for i, m := range models {
		out[i] = m.ID
	}
	sort.Strings(out)
	return out
}

// KVBytesPerToken is 2 (K and V) x layers x kv_heads x head_dim x bytes per element.
func (m ModelArch) KVBytesPerToken(bytesPerElem int) float64 {
	return float64(2 * m.Layers * m.KVHeads * m.HeadDim * bytesPerElem)
}

// EmbeddingParams is the size of the token embedding (vocab x hidden; 0
// when either is unknown). With tied embeddings it is also the output
// projection.
func (m ModelArch) EmbeddingParams() float64 { return float64(m.Vocab) * float64(m.Hidden) }

// WeightBytes is the memory the weights take at bytesPerElem per parameter.
func (m ModelArch) WeightBytes(bytesPerElem int) float64 {
	return float64(m.Params) * float64(bytesPerElem)
}
