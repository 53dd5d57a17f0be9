package perf

import (
	"strings"

	"github.com/infercrane/infercrane/planner/arch"
)

// GPU is one accelerator type of the catalog.
type GPU struct {
	Name string `json:"name"` // canonical catalog name, e.g. "L40S"
	// MemoryGB is the device's total memory as the serving engine sees it
	// (CUDA's cudaMemGetInfo total, what vLLM's profile calls
	// total_gpu_memory and multiplies by gpu_memory_utilization), in GB
	// (1e9 bytes): a little under the nvidia-smi total (the driver keeps
	// some) and well above the marketing "80 GB" of an 80 GB part.
	MemoryGB       float64 `json:"memory_gb"`
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
	// ElementwiseEfficiency is the fraction of peak bandwidth that the
	// memory-bound elementwise kernels (norms, rotary embeddings,
	// activations, residual adds) reach (ModelArch.elementwiseSeconds; 0:
	// not modelled apart).
	ElementwiseEfficiency float64 `json:"elementwise_efficiency,omitempty"`
	// SMs is the number of streaming multiprocessors (0: not a CUDA GPU),
	// which sets how large a layer's matrix multiplies must be to keep
	// the GPU busy (gemmEfficiency).
	SMs int `json:"sms,omitempty"`
	// FP8TFLOPS and INT8TOPS are the dense FP8 and INT8 tensor peaks (0:
	// the GPU has none; FP8 from Ada and Hopper on).
	FP8TFLOPS float64 `json:"fp8_tflops,omitempty"`
	INT8TOPS  float64 `json:"int8_tops,omitempty"`
	// Capability is the CUDA compute capability times ten (89: Ada), which
	// decides the quantisation kernels vLLM can run (0: not a CUDA GPU).
	Capability int `json:"compute_capability,omitempty"`
	// Interconnect names the links between the GPUs of one server and
	// LinkGBs is a GPU's bandwidth on them in one direction (GB/s), which
	// tensor parallelism's all-reduces share.
	Interconnect string  `json:"interconnect,omitempty"`
	LinkGBs      float64 `json:"link_gbs,omitempty"`
}

// Published figures (design section 8). Efficiency defaults: llm-d's roofline
// MFU for prefill (0.32 on L40S-class parts, 0.45 on B200), except on the
// A100 and H100 dies, each scanned on the published measurements' fit set
// (planner/perf/testdata/published; docs/performance-model.md, "The
// H100's prefill MFU"): the A100s 0.65, the H100 0.50 (the H200, the same
// die at the same 700 W, taken as the H100's). Both dies' matrix
// multiplies timed alone reach about 0.72 of their peaks
// (gemmEfficiency); served, the H100 keeps a smaller share of its
// datasheet peak than the A100 (sustained clocks, and the step's fixed
// host costs weigh more on the faster part).
// The decode bandwidth efficiency is GenZ's 0.8; the H200's is the
// H100's times the ratio of the two GPUs' measured shares of their peaks
// in a layer's multiplies at decode sizes, 0.88 (our H200) over 0.90
// (Vidur's H100): 0.78 (TestDecodeLayersAreAFixedTimeAndTheirReads; the
// H200's compute-bound multiplies run as the law of the H100's,
// TestGEMMEfficiencyMatchesKernelProfiles). ElementwiseEfficiency
// is the share of the peak bandwidth that vLLM's norm, rotary, activation
// and residual kernels reach in Microsoft Vidur's profiles
// (ModelArch.ElementwiseBytesPerToken): 0.47 on the A100, 0.50 on the
// H100 (H200 and B200 taken as the H100's, HBM too). The GDDR parts (T4,
// L4, A10, L40S) leave it 0: their MFU is llm-d's whole-step figure,
// which includes those kernels (the profiles' A40, GDDR6, reaches 0.71,
// what the term would be there). FP8 and INT8 peaks are the
// datasheets' sparse figures halved (NVIDIA T4, L4, A10, L40S, A100, H100
// SXM, H200 SXM and HGX B200 datasheets); the link bandwidth is the
// datasheet's NVLink figure (both directions) halved, or PCIe's x16
// (Gen3 16 GB/s, Gen4 32 GB/s a direction) for cards without NVLink. The
// A100s are the SXM4 parts of HGX servers (NVLink 3, 600 GB/s); H100, H200
// are SXM5 (NVLink 4, 900 GB/s); B200 is NVLink 5 (1.8 TB/s). SMs is
// each part's count of streaming multiprocessors (its datasheet's CUDA
// cores over 128 a multiprocessor on Ampere GA10x, Ada and Turing over
// 64; the A100's 108, the H100 and H200 SXM's 132; the B200's 148 from
// its device query), which scales the size a layer needs to reach the
// MFU (ModelArch.GEMMEfficiency).
//
// Memory is each device's total as the engine sees it, from a published
// torch or vLLM figure (torch's "GPU 0 has a total capacity of X GiB" and
// vLLM's total_gpu_memory are both cudaMemGetInfo's total), else from
// nvidia-smi's total (which overstates it by what the driver keeps,
// 0.3-0.5 GiB on the parts where both are published: H100 81,559 MiB =
// 79.65 GiB against vLLM's 79.22 GiB), else the nominal figure:
//   - T4: 14.75 GiB, torch on a Colab T4 (hpcaitech/Open-Sora issue 697);
//     nvidia-smi 15,360 MiB (modal-labs/modal-client PR 2797).
//   - L4: nvidia-smi 23,034 MiB (modal-labs/modal-client PR 2797); no
//     torch or vLLM total found.
//   - A10: 22.18 GiB, torch on one A10 (OpenBMB/MiniCPM-V issue 640); an
//     A10G shows 23,028 MiB in nvidia-smi (modal-client PR 2797).
//   - L40S: 44.42 GiB, torch on 8x L40S (stepfun-ai/Step-Video-T2V issue
//     8); nvidia-smi 46,068 MiB (modal-client PR 2797).
//   - A100-40GB: 39.50 GiB, torch on one A100 40GB (TianheWu/CoSeR issue
//     10); nvidia-smi 40,960 MiB (modal-client PR 2797).
//   - A100-80GB: 79.35 GiB, torch's total capacity in vLLM's out-of-memory
//     error on 8x A100 (MoonshotAI/Kimi-VL issue 54); nvidia-smi 81,920
//     MiB (modal-client PR 2797), 0.65 GiB more.
//   - H100: 79.22 GiB, vLLM's own memory profile of an H100 SXM
//     (total_gpu_memory, vllm-project/vllm PR 10511); nvidia-smi 81,559 MiB
//     (modal-client PR 2797, NVIDIA/nccl issue 1264).
//   - H200: 139.81 GiB, torch and vLLM's environment report on 8x H200
//     (vllm-project/vllm issue 34553).
//   - B200: 178.35 GiB, "Total Global Memory: 178.35 GB" from
//     cudaGetDeviceProperties (pytorch/ao PR 4002), in GiB: nvidia-smi's
//     total is 183,359 MiB = 179.06 GiB (NVIDIA/TensorRT-LLM issue
//     10278), 0.7 GiB more, what the driver keeps; read as 1e9 bytes it
//     would be 13 GiB under nvidia-smi's. Its bandwidth is the driver's
//     memory bus (7,680 bits, not the 8,192 first reported) at 3,996 MHz
//     double data rate, 7,672 GB/s (the same PR), not the datasheet's
//     8 TB/s.
var gpus = []GPU{
	{Name: "T4", SMs: 40, MemoryGB: gib(14.75), BandwidthGBs: 320, BF16TFLOPS: 65, PricePerSecond: 0.000164, PrefillMFU: 0.30, DecodeEfficiency: 0.8,
		INT8TOPS: 130, Capability: 75, Interconnect: "PCIe 3.0 x16", LinkGBs: 16},
	{Name: "L4", SMs: 58, MemoryGB: mib(23034), BandwidthGBs: 300, BF16TFLOPS: 121, PricePerSecond: 0.000222, PrefillMFU: 0.32, DecodeEfficiency: 0.8,
		FP8TFLOPS: 242.5, INT8TOPS: 242.5, Capability: 89, Interconnect: "PCIe 4.0 x16", LinkGBs: 32},
	{Name: "A10", SMs: 72, MemoryGB: gib(22.18), BandwidthGBs: 600, BF16TFLOPS: 125, PricePerSecond: 0.000306, PrefillMFU: 0.32, DecodeEfficiency: 0.8,
		INT8TOPS: 250, Capability: 86, Interconnect: "PCIe 4.0 x16", LinkGBs: 32},
	{Name: "L40S", SMs: 142, MemoryGB: gib(44.42), BandwidthGBs: 864, BF16TFLOPS: 362, PricePerSecond: 0.000542, PrefillMFU: 0.32, DecodeEfficiency: 0.8,
		FP8TFLOPS: 733, INT8TOPS: 733, Capability: 89, Interconnect: "PCIe 4.0 x16", LinkGBs: 32},
	{Name: "A100-40GB", SMs: 108, MemoryGB: gib(39.50), BandwidthGBs: 1555, BF16TFLOPS: 312, PricePerSecond: 0.000583, PrefillMFU: 0.65, DecodeEfficiency: 0.8, ElementwiseEfficiency: 0.47,
		INT8TOPS: 624, Capability: 80, Interconnect: "NVLink 3", LinkGBs: 300},
	{Name: "A100-80GB", SMs: 108, MemoryGB: gib(79.35), BandwidthGBs: 2039, BF16TFLOPS: 312, PricePerSecond: 0.000694, PrefillMFU: 0.65, DecodeEfficiency: 0.8, ElementwiseEfficiency: 0.47,
		INT8TOPS: 624, Capability: 80, Interconnect: "NVLink 3", LinkGBs: 300},
	{Name: "H100", SMs: 132, MemoryGB: gib(79.22), BandwidthGBs: 3350, BF16TFLOPS: 989, PricePerSecond: 0.001097, PrefillMFU: 0.50, DecodeEfficiency: 0.8, ElementwiseEfficiency: 0.5,
		FP8TFLOPS: 1979, INT8TOPS: 1979, Capability: 90, Interconnect: "NVLink 4", LinkGBs: 450},
	{Name: "H200", SMs: 132, MemoryGB: gib(139.81), BandwidthGBs: 4800, BF16TFLOPS: 989, PricePerSecond: 0.001261, PrefillMFU: 0.50, DecodeEfficiency: 0.78, ElementwiseEfficiency: 0.5,
		FP8TFLOPS: 1979, INT8TOPS: 1979, Capability: 90, Interconnect: "NVLink 4", LinkGBs: 450},
	{Name: "B200", SMs: 148, MemoryGB: gib(178.35), BandwidthGBs: 7672, BF16TFLOPS: 2250, PricePerSecond: 0.001736, PrefillMFU: 0.45, DecodeEfficiency: 0.8, ElementwiseEfficiency: 0.5,
		FP8TFLOPS: 4500, INT8TOPS: 4500, Capability: 100, Interconnect: "NVLink 5", LinkGBs: 900},
	// CPU is the host processor, for local runs of vLLM's CPU build (tiny models
	// in integration tests): a modest host's memory for the KV cache, its DDR
	// bandwidth and AVX2 throughput, and no price. Its steps are serial
	// (compute plus memory traffic), and its prefill MFU is what vLLM 0.32's
	// CPU build reached with the tiny integration model on a 2-core host:
	// a 256-token prompt's TTFT 2.1-2.7 ms over a 128-token one's, about
	// 20 µs a token, at 0.6 MFLOP a token. Its MemoryGB is that host's
	// memory budget for the model and its KV cache, not a device total.
	{Name: "CPU", MemoryGB: 16, BandwidthGBs: 20, BF16TFLOPS: 0.2, PrefillMFU: 0.15, DecodeEfficiency: 0.5, Serial: true},
}

// gib and mib convert a memory total in GiB (2^30 bytes) or MiB (2^20
// bytes), as torch, vLLM and nvidia-smi print it, to the catalog's GB.
func gib(x float64) float64 { return x * (1 << 30) / 1e9 }
func mib(x float64) float64 { return x * (1 << 20) / 1e9 }

// NVLink reports whether g's GPUs talk over NVLink (else PCIe or, for the
// CPU, memory).
func (g GPU) NVLink() bool { return strings.HasPrefix(g.Interconnect, "NVLink") }

// gpuAliases maps the spellings vendorSpelling does not read to catalog
// names: Modal's "A100" (its 40 GB part) and "H100SXM" written together.
var gpuAliases = map[string]string{
	"A100":    "A100-40GB",
	"H100SXM": "H100",
}

// LookupGPU finds a GPU by catalog name or alias, ignoring case, or by
// the name nvidia-smi, torch or a cloud console prints for it
// (vendorSpelling): "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB",
// "Tesla T4".
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
	if n, ok := vendorSpelling(name); ok {
		return LookupGPU(n)
	}
	return GPU{}, false
}

// vendorSpelling maps a vendor's spelling of a catalog part to its
// catalog name: the words (split at spaces, hyphens and underscores, any
// case) are the part's name, "NVIDIA" or "Tesla" before it, and words
// that only restate the catalog part: its memory ("80GB", "80G"), its
// form factor ("SXM", "SXM4", "SXM5", "HGX") or its memory type ("HBM3",
// "HBM3E"). An A100 needs its memory size, as the catalog has both. A
// word that names another part ("PCIe", "NVL": other bandwidths, peaks
// and links) or a memory size the part does not come in matches nothing,
// so the catalog's figures are never taken for a part they do not
// describe.
func vendorSpelling(name string) (string, bool) {
	words := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool { return r == ' ' || r == '-' || r == '_' })
	for len(words) > 0 && (words[0] == "NVIDIA" || words[0] == "TESLA") {
		words = words[1:]
	}
	if len(words) == 0 {
		return "", false
	}
	part, ok := vendorParts[words[0]]
	if !ok {
		return "", false
	}
	memory := ""
	for _, w := range words[1:] {
		switch {
		case part.forms[w]:
		case strings.HasSuffix(w, "GB") || strings.HasSuffix(w, "G"):
			gb := strings.TrimSuffix(strings.TrimSuffix(w, "B"), "G")
			if _, ok := part.memory[gb]; !ok {
				return "", false
			}
			memory = gb
		default:
			return "", false
		}
	}
	if n, ok := part.memory[memory]; ok {
		return n, true
	}
	return "", false
}

// vendorPart is how vendors spell one catalog part: the catalog name by
// memory size in GB ("" for the spelling without one) and the words that
// restate its form factor or memory type.
type vendorPart struct {
	memory map[string]string
	forms  map[string]bool
}

var (
	sxmHBM = map[string]bool{"SXM": true, "SXM4": true, "SXM5": true, "SXM6": true, "HGX": true, "HBM2": true, "HBM2E": true, "HBM3": true, "HBM3E": true}
	card   = map[string]bool{"GDDR6": true}
	// vendorParts are the catalog's parts by their vendor name.
	vendorParts = map[string]vendorPart{
		"T4":   {memory: map[string]string{"": "T4", "16": "T4", "15": "T4"}, forms: card},
		"L4":   {memory: map[string]string{"": "L4", "24": "L4", "23": "L4"}, forms: card},
		"A10":  {memory: map[string]string{"": "A10", "24": "A10", "23": "A10"}, forms: card},
		"A10G": {memory: map[string]string{"": "A10", "24": "A10", "23": "A10"}, forms: card},
		"L40S": {memory: map[string]string{"": "L40S", "48": "L40S", "46": "L40S"}, forms: card},
		"A100": {memory: map[string]string{"40": "A100-40GB", "80": "A100-80GB"}, forms: sxmHBM},
		"H100": {memory: map[string]string{"": "H100", "80": "H100"}, forms: sxmHBM},
		"H200": {memory: map[string]string{"": "H200", "141": "H200", "143": "H200"}, forms: sxmHBM},
		"B200": {memory: map[string]string{"": "B200", "180": "B200", "192": "B200", "183": "B200"}, forms: sxmHBM},
	}
)

// GPUNames lists the catalog names in catalog order (smallest first).
func GPUNames() []string {
	out := make([]string, len(gpus))
	for i, g := range gpus {
		out[i] = g.Name
	}
	return out
}

// ModelArch holds the architecture facts of a model (from its config.json:
// FromConfig).
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
	// ActiveParams is the parameters one token uses when that is fewer
	// than Params (a mixture of experts, a vision tower); 0: Params.
	ActiveParams int64 `json:"active_params,omitempty"`
	// LinearParams is the parameters of the linear layers, which
	// quantisation narrows; 0: Params less the embeddings.
	LinearParams int64 `json:"linear_params,omitempty"`
	// KVLatent is the elements one token caches in one layer under latent
	// attention (DeepSeek's kv_lora_rank + qk_rope_head_dim), which every
	// GPU keeps whole; 0: a key and a value for each KV head, split over
	// the GPUs.
	KVLatent int `json:"kv_latent,omitempty"`
	// MoE describes the routed experts (nil: a dense model).
	MoE *MoE `json:"moe,omitempty"`
	// SlidingWindow is the window of the SlidingLayers layers that attend
	// only to their last SlidingWindow tokens (0: none).
	SlidingWindow int `json:"sliding_window,omitempty"`
	SlidingLayers int `json:"sliding_layers,omitempty"`
	// MLPWidth is the MLP width one token goes through in an average
	// decoder layer: the dense intermediate size, in a mixture of experts'
	// layers the experts it reaches times their width plus any shared
	// expert's (0: derived from the parameters, mlpWidth).
	MLPWidth int `json:"mlp_width,omitempty"`
	// NormsPerLayer is the hidden-size norms of a decoder layer (0: two)
	// and QKNorm a norm on each query and key head (Qwen3, Gemma 3).
	NormsPerLayer int  `json:"norms_per_layer,omitempty"`
	QKNorm        bool `json:"qk_norm,omitempty"`
	// AttentionSinks: each attention head has a learned sink logit
	// (gpt-oss), which only some attention kernels take
	// (ModelArch.AttentionKernelFactor).
	AttentionSinks bool `json:"attention_sinks,omitempty"`
	// Architecture summarises the config; Source, ConfigRevision and
	// ConfigDigest say where it came from (empty for an architecture given
	// by the model block's attributes alone).
	Architecture   string `json:"architecture,omitempty"`
	Source         string `json:"source,omitempty"`
	ConfigRevision string `json:"config_revision,omitempty"`
	ConfigDigest   string `json:"config_digest,omitempty"`
}

// LookupModel finds the architecture of a model of the catalog
// (planner/arch's pinned configs) by id, ignoring case.
func LookupModel(id string) (ModelArch, bool) {
	p, ok := arch.Lookup(id)
	if !ok {
		return ModelArch{}, false
	}
	return FromConfig(p), true
}

// ModelIDs lists the model ids the catalog knows, sorted.
func ModelIDs() []string {
	cat := arch.Catalog()
	out := make([]string, len(cat))
	for i, p := range cat {
		out[i] = p.ID
	}
	return out
}

// KVBytesPerToken is one token's KV cache over all layers at bytesPerElem
// bytes an element, on one GPU: 2 (K and V) x layers x kv_heads x
// head_dim, or layers x the latent under latent attention.
func (m ModelArch) KVBytesPerToken(bytesPerElem int) float64 {
	return float64(m.Layers) * m.kvElementsPerTokenLayer(1) * float64(bytesPerElem)
}

// EmbeddingParams is the size of the token embedding (vocab x hidden; 0
// when either is unknown). With tied embeddings it is also the output
// projection.
func (m ModelArch) EmbeddingParams() float64 { return float64(m.Vocab) * float64(m.Hidden) }

// WeightBytes is the memory the weights take at bytesPerElem per parameter.
func (m ModelArch) WeightBytes(bytesPerElem int) float64 {
	return float64(m.Params) * float64(bytesPerElem)
}
