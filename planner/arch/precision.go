package arch

import (
	"fmt"
	"sort"
	"strings"
)

// Precision is how an engine holds a model: the bytes of a parameter of
// the linear layers (attention and MLP projections, experts) and of the
// rest (embeddings, output projection, norms, routers, vision tower,
// which vLLM's quantisation methods leave at the model's dtype), the bytes
// of a KV cache element, and the number format its matrix multiplies run
// in ("bf16", "fp8" or "int8": the GPU's peak for it is the compute
// roof).
type Precision struct {
	// Quantization is the method ("" for none), as vLLM names it.
	Quantization string `json:"quantization,omitempty"`
	// LinearBytes and OtherBytes are bytes per parameter.
	LinearBytes float64 `json:"linear_bytes"`
	OtherBytes  float64 `json:"other_bytes"`
	// KVBytes is bytes per KV cache element; KVCacheDtype its name ("auto"
	// is the model's dtype).
	KVBytes      float64 `json:"kv_bytes"`
	KVCacheDtype string  `json:"kv_cache_dtype"`
	// Compute is the format of the matrix multiplies; WeightOnly says the
	// weights are stored narrower than they are multiplied (w4a16, and
	// fp8 on a GPU without FP8 tensor cores).
	Compute    string `json:"compute"`
	WeightOnly bool   `json:"weight_only,omitempty"`
	// Source says where the quantisation came from ("runtime", "args",
	// "checkpoint config.json").
	Source string `json:"source,omitempty"`
}

// WeightBytes is the memory n's weights take at precision p.
func (p Precision) WeightBytes(n Count) float64 {
	return float64(n.Linear())*p.LinearBytes + float64(n.Other())*p.OtherBytes
}

// Linear is the parameters of the linear layers (what quantisation
// narrows): attention projections, dense MLPs and experts; only the
// routed experts when the checkpoint quantises nothing else
// (Quantization.ExpertsOnly).
func (n Count) Linear() int64 {
	if n.expertsOnly {
		return n.RoutedExperts
	}
	return n.Attention + n.DenseMLP + n.RoutedExperts + n.SharedExperts
}

// Other is every parameter Linear leaves out.
func (n Count) Other() int64 { return n.Total - n.Linear() }

// Method is a quantisation method an engine can run, and what it needs.
type Method struct {
	// Name is vLLM's --quantization value.
	Name string
	// WeightBits is the stored weight width (0: from the checkpoint).
	WeightBits int
	// Online: the engine quantises a 16-bit checkpoint itself; otherwise
	// it needs a checkpoint quantised with the method.
	Online bool
	// MinCapability is the lowest CUDA compute capability (x10: 75 is
	// Turing) that runs it at all; NativeCapability the lowest that
	// multiplies in its own format (fp8 w8a8 from Ada, 89); below that
	// the weights are dequantised to 16 bits (weight-only).
	MinCapability, NativeCapability int
	// MinVersion is the first vLLM release that has it.
	MinVersion string
	// Source is where the requirement comes from.
	Source string
}

// Methods are the quantisation methods InferCrane models, from vLLM's
// "Supported Hardware" quantisation table (docs.vllm.ai, v0.6-v0.15:
// AWQ from Turing, GPTQ from Volta, INT8 W8A8 from Turing, FP8 W8A8 from
// Ada with Marlin's weight-only FP8 from Ampere).
var Methods = map[string]Method{
	"fp8": {Name: "fp8", WeightBits: 8, Online: true, MinCapability: 80, NativeCapability: 89, MinVersion: "0.5.0",
		Source: "docs.vllm.ai features/quantization/supported_hardware: FP8 W8A8 on Ada and Hopper, Marlin weight-only FP8 from Ampere"},
	"awq": {Name: "awq", WeightBits: 4, MinCapability: 75, MinVersion: "0.2.0",
		Source: "docs.vllm.ai features/quantization/supported_hardware: AWQ from Turing"},
	"awq_marlin": {Name: "awq_marlin", WeightBits: 4, MinCapability: 80, MinVersion: "0.5.3",
		Source: "docs.vllm.ai features/quantization/supported_hardware: Marlin (GPTQ/AWQ/FP8) from Ampere"},
	"gptq": {Name: "gptq", MinCapability: 70, MinVersion: "0.2.2",
		Source: "docs.vllm.ai features/quantization/supported_hardware: GPTQ from Volta"},
	"gptq_marlin": {Name: "gptq_marlin", MinCapability: 80, MinVersion: "0.5.0",
		Source: "docs.vllm.ai features/quantization/supported_hardware: Marlin (GPTQ/AWQ/FP8) from Ampere"},
	"mxfp4": {Name: "mxfp4", WeightBits: 4, MinCapability: 80, MinVersion: "0.10.1",
		Source: "vLLM's GPT-OSS recipe (docs.vllm.ai recipes, OpenAI gpt-oss): MXFP4 experts from vLLM 0.10.1, Hopper through Triton kernels, Ampere through Marlin (weight-only)"},
	"compressed-tensors": {Name: "compressed-tensors", MinCapability: 75, NativeCapability: 75, MinVersion: "0.5.0",
		Source: "docs.vllm.ai features/quantization/supported_hardware: INT8 W8A8 from Turing, FP8 W8A8 from Ada"},
}

// MethodNames lists Methods' names, sorted.
func MethodNames() []string {
	out := make([]string, 0, len(Methods))
	for k := range Methods {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// KVCacheDtypes are the kv_cache_dtype values InferCrane models, with
// their bytes per element (0: the model's dtype).
var KVCacheDtypes = map[string]float64{"auto": 0, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}

// PrecisionInputs are what decides a lane's precision.
type PrecisionInputs struct {
	// Dtype is the runtime's dtype (auto, bfloat16, float16, float32);
	// auto takes the checkpoint's (16-bit for a float32 checkpoint, as
	// vLLM does).
	Dtype string
	// Quantization is the runtime's method ("" for none) and
	// QuantizationSource where it was set.
	Quantization, QuantizationSource string
	// KVCacheDtype is the runtime's kv_cache_dtype ("" or auto: the
	// model's dtype).
	KVCacheDtype string
	// Capability is the GPU's compute capability x10 (0: not a CUDA GPU).
	Capability int
}

// ResolvePrecision decides how an engine holds model c: the runtime's
// quantisation, else the checkpoint's (vLLM reads quantization_config and
// refuses a runtime method that contradicts it), at the widths the method
// stores, multiplied natively where the GPU can. It refuses what vLLM
// refuses: an unknown method or kv_cache_dtype, a method that needs a
// checkpoint quantised with it, a GPU below the method's compute
// capability.
func ResolvePrecision(c Config, in PrecisionInputs) (Precision, error) {
	dtypeBytes := 2.0
	switch d := strings.ToLower(strings.TrimSpace(in.Dtype)); d {
	case "float32", "fp32", "float":
		dtypeBytes = 4
	case "", "auto", "bfloat16", "float16", "half":
	default:
		return Precision{}, fmt.Errorf("dtype %q is not one vLLM takes (auto, bfloat16, float16, float32)", in.Dtype)
	}
	p := Precision{LinearBytes: dtypeBytes, OtherBytes: dtypeBytes, Compute: "bf16", KVCacheDtype: "auto"}
	kv := strings.ToLower(strings.TrimSpace(in.KVCacheDtype))
	if kv == "" {
		kv = "auto"
	}
	kvBytes, ok := KVCacheDtypes[kv]
	if !ok {
		return Precision{}, fmt.Errorf("kv_cache_dtype %q is not one InferCrane models (auto, fp8, fp8_e4m3, fp8_e5m2)", in.KVCacheDtype)
	}
	p.KVCacheDtype, p.KVBytes = kv, kvBytes
	if kvBytes == 0 {
		p.KVBytes = dtypeBytes
	}
	method, source := strings.ToLower(strings.TrimSpace(in.Quantization)), in.QuantizationSource
	ck := c.Quantization
	if ck != nil {
		switch {
		case method == "":
			method, source = ck.Method, "checkpoint config.json"
		case !compatible(method, ck.Method):
			return Precision{}, fmt.Errorf("quantization %q contradicts the checkpoint's quantization_config (%s); vLLM refuses the pair: leave quantization out or use a checkpoint quantised with %s", method, ck.Method, method)
		}
	}
	if method == "" {
		return p, nil
	}
	m, ok := Methods[method]
	if !ok {
		return Precision{}, fmt.Errorf("quantization %q is not one InferCrane models (%s)", method, strings.Join(MethodNames(), ", "))
	}
	if !m.Online && ck == nil {
		return Precision{}, fmt.Errorf("quantization %q needs a checkpoint quantised with it (its config.json's quantization_config); %s's config has none. Use the quantised repository's id and config, or quantization = \"fp8\", which vLLM applies to a 16-bit checkpoint", method, c.ModelType)
	}
	if in.Capability > 0 && in.Capability < m.MinCapability {
		return Precision{}, fmt.Errorf("quantization %q needs CUDA compute capability %s or newer; this GPU has %s (%s)", method, capability(m.MinCapability), capability(in.Capability), m.Source)
	}
	p.Quantization, p.Source = method, source
	bits, weightType, actBits, group := m.WeightBits, "int", 0, 0
	if m.Name == "fp8" {
		weightType, actBits = "float", 8
	}
	if ck != nil {
		if ck.WeightBits > 0 {
			bits = ck.WeightBits
		}
		if ck.WeightType != "" {
			weightType = ck.WeightType
		}
		actBits, group = ck.ActivationBits, ck.GroupSize
		if m.Name == "fp8" {
			actBits = 8
		}
	}
	if bits == 0 {
		bits = 4 // GPTQ's default
	}
	p.LinearBytes = float64(bits) / 8
	switch {
	case m.Name == "mxfp4" && group > 0:
		p.LinearBytes += 1 / float64(group) // an 8-bit power-of-two scale a block
		p.LinearBytes *= mxfp4Resident(in.Capability)
	case group > 0 && bits < 8:
		p.LinearBytes += 2.5 / float64(group) // a 16-bit scale and a 4-bit zero point per group
	}
	native := m.NativeCapability > 0 && (in.Capability == 0 || in.Capability >= m.NativeCapability)
	switch {
	case actBits == 8 && weightType == "float" && in.Capability >= 89:
		p.Compute = "fp8"
	case actBits == 8 && weightType == "int" && native:
		p.Compute = "int8"
	default:
		p.WeightOnly = bits < 16
	}
	if weightType == "float" && actBits == 8 && in.Capability > 0 && in.Capability < 89 {
		p.WeightOnly = true // Marlin's weight-only FP8 below Ada
	}
	return p, nil
}

// mxfp4Resident is how much more memory vLLM holds MXFP4 experts in
// than the checkpoint stores them (4-bit values and an 8-bit scale a
// block of 32), in the layout of the kernels that multiply them on a GPU
// of compute capability cap. vLLM's logs of gpt-oss-120b, whose
// checkpoint holds 60.8 GiB (4.0 GiB of it 16-bit attention, router and
// embeddings): "Model loading took 64.38 GiB" on an H100 with the Triton
// kernels' swizzled layout (vLLM 0.14.1, vllm-project/vllm issue
// #33155), and "65.97 GiB" on an H100 with Marlin, the Ampere path
// (vLLM 0.10.1, issue #23278, where the Triton kernels were missing):
// the experts take 6.4% and 9.2% more. Unmeasured elsewhere (Blackwell's
// native FP4 kernels pad to other multiples): the checkpoint's size.
func mxfp4Resident(cap int) float64 {
	switch {
	case cap >= 100 || cap == 0:
		return 1
	case cap >= 90:
		return 1.064 // Triton kernels (Hopper)
	default:
		return 1.092 // Marlin (Ampere)
	}
}

// compatible reports whether vLLM runs a checkpoint quantised with ckpt
// under the runtime method flag (the Marlin kernels read AWQ and GPTQ
// checkpoints).
func compatible(flag, ckpt string) bool {
	return flag == ckpt || flag == ckpt+"_marlin"
}

func capability(c int) string { return fmt.Sprintf("%d.%d", c/10, c%10) }
