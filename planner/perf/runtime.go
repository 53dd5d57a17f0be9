package perf

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/infercrane/infercrane/lang/engine"
)

// RuntimeSettings are the serving engine's settings that change
// performance, resolved from the runtime block, its args and the engine
// version's defaults. Sources says where each came from.
type RuntimeSettings struct {
	MaxNumSeqs           int     `json:"max_num_seqs"`
	MaxBatchedTokens     int     `json:"max_num_batched_tokens"`
	ChunkedPrefill       bool    `json:"chunked_prefill"`
	PrefixCaching        bool    `json:"prefix_caching"`
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
	TensorParallel       int     `json:"tensor_parallel_size"`
	BlockSize            int     `json:"block_size"`
	// PipelineParallel is --pipeline-parallel-size (0 or 1: none): the
	// lane's Hardware.Stages.
	PipelineParallel int `json:"pipeline_parallel_size,omitempty"`
	// DataParallel is --data-parallel-size (0 or 1: none): replicas of
	// the tensor x pipeline server behind one front end, which the model
	// does not model (the estimate is one replica's; Unmodelled lists it)
	// but counts in the deployment's GPUs.
	DataParallel int `json:"data_parallel_size,omitempty"`
	// Quantization and KVCacheDtype are the runtime's --quantization and
	// --kv-cache-dtype ("": not set; the checkpoint's quantization and the
	// model's dtype).
	Quantization string `json:"quantization,omitempty"`
	KVCacheDtype string `json:"kv_cache_dtype,omitempty"`
	// FullLengthKV: the KV cache keeps every token in sliding-window
	// layers too. vLLM's V1 KV cache manager (0.8 on) keeps only a
	// sliding-window layer's window (SlidingWindowSpec), unless
	// --disable-hybrid-kv-cache-manager makes a model that mixes window and
	// full layers count every layer as full; before 0.8 (V0) the model
	// counts every token too (an upper bound: V0's block manager is not
	// modelled).
	FullLengthKV bool `json:"full_length_kv,omitempty"`
	// AsyncScheduling: the engine core schedules the next step while the
	// GPU runs the current one (--async-scheduling; vLLM's default from
	// 0.14), so part of its work for each sequence overlaps the GPU's
	// (Assumptions.AsyncScheduling, AsyncOverlapShare). vLLM before 0.15 does not run it with
	// pipeline parallelism.
	AsyncScheduling bool `json:"async_scheduling,omitempty"`
	// EnforceEager: --enforce-eager, no CUDA graphs (and in vLLM's V1
	// engine no torch.compile): every step launches its kernels one by
	// one (Assumptions.EagerSteps).
	EnforceEager bool `json:"enforce_eager,omitempty"`
	// Unmodelled lists the args given that change vLLM's performance in
	// ways the model leaves out (unmodelledArgs), in their order, without
	// their leading dashes.
	Unmodelled []string `json:"unmodelled,omitempty"`
	// Sources maps each setting's name to "args", "runtime" (the block's
	// attribute), "gpu" (tensor parallelism from the gpu block's count) or
	// the default's origin, e.g. "vllm>=0.8 default on a <70 GB GPU".
	Sources map[string]string `json:"sources,omitempty"`
}

// ResolveRuntime resolves the engine settings of a deployment of gpus GPUs
// of type g: the version's defaults (vLLM's API-server defaults: the v1
// engine from 0.8 chunks prefills under 2,048 tokens a step and runs 256
// sequences on GPUs under 70 GB and on A100s, 8,192 and 1,024 on larger
// ones, 2,048 x TP and 128 x TP on CPU, prefix caching on; the v0 engine
// before 0.8 prefills whole prompts with a budget of max(max model len,
// 2,048), 256 sequences, no prefix caching), then the block's attributes,
// then its args (vLLM takes the last flag given, and the executors put args
// last). An unparsable flag value is an error naming it.
func ResolveRuntime(b engine.Runtime, g GPU, gpus, maxModelLen int) (RuntimeSettings, error) {
	s := RuntimeSettings{GPUMemoryUtilization: 0.9, TensorParallel: max(gpus, 1), BlockSize: DefaultBlockSize,
		Sources: map[string]string{"gpu_memory_utilization": "vllm default", "tensor_parallel_size": "gpu count", "block_size": "vllm default"}}
	v1 := versionAtLeast(b.RuntimeVersion, 0, 8)
	// vLLM compares the device's total with 70 GiB (_set_default_args_v1
	// in vllm/engine/arg_utils.py: device_memory >= 70 * GiB_bytes).
	big := g.MemoryGB*1e9 >= 70*(1<<30) && !strings.HasPrefix(g.Name, "A100")
	switch {
	case g.Name == "CPU":
		s.MaxBatchedTokens, s.MaxNumSeqs = 2048*s.TensorParallel, 128*s.TensorParallel
		s.ChunkedPrefill, s.PrefixCaching = true, true
		s.setSource("vllm>=0.8 default on CPU", "max_num_batched_tokens", "max_num_seqs", "chunked_prefill", "prefix_caching")
	case v1 && big:
		s.MaxBatchedTokens, s.MaxNumSeqs, s.ChunkedPrefill, s.PrefixCaching = 8192, 1024, true, true
		s.setSource("vllm>=0.8 default on a >=70 GB GPU", "max_num_batched_tokens", "max_num_seqs", "chunked_prefill", "prefix_caching")
	case v1:
		s.MaxBatchedTokens, s.MaxNumSeqs, s.ChunkedPrefill, s.PrefixCaching = 2048, 256, true, true
		s.setSource("vllm>=0.8 default on a <70 GB GPU or A100", "max_num_batched_tokens", "max_num_seqs", "chunked_prefill", "prefix_caching")
	default:
		s.MaxBatchedTokens, s.MaxNumSeqs, s.FullLengthKV = max(maxModelLen, 2048), 256, true
		s.setSource("vllm<0.8 (v0 engine) default", "max_num_batched_tokens", "max_num_seqs", "chunked_prefill", "prefix_caching", "full_length_kv")
	}
	if v1 && versionAtLeast(b.RuntimeVersion, 0, 14) {
		s.AsyncScheduling = true
		s.setSource("vllm>=0.14 default", "async_scheduling")
	}
	if b.GPUMemoryUtil > 0 {
		s.GPUMemoryUtilization = b.GPUMemoryUtil
		s.setSource("runtime", "gpu_memory_utilization")
	}
	if b.MaxNumSeqs > 0 {
		s.MaxNumSeqs = b.MaxNumSeqs
		s.setSource("runtime", "max_num_seqs")
	}
	if b.MaxBatchedTokens > 0 {
		s.MaxBatchedTokens = b.MaxBatchedTokens
		s.setSource("runtime", "max_num_batched_tokens")
	}
	batchedFromArgs := false
	args := b.RuntimeArgs
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		name = strings.ReplaceAll(strings.TrimLeft(name, "-"), "_", "-")
		value := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
				i++
				return args[i], nil
			}
			return "", fmt.Errorf("runtime arg %s needs a value", a)
		}
		positive := func(dst *int, key string) error {
			v, err := value()
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("runtime arg %s: %q is not a positive whole number", a, v)
			}
			*dst = n
			s.setSource("args", key)
			return nil
		}
		// parallel is positive for a parallel size, at most
		// maxParallelSize.
		parallel := func(dst *int, key string) error {
			if err := positive(dst, key); err != nil {
				return err
			}
			if *dst > maxParallelSize {
				return fmt.Errorf("runtime arg %s: %d is more than %d GPUs", a, *dst, maxParallelSize)
			}
			return nil
		}
		text := func(dst *string, key string) error {
			v, err := value()
			if err != nil {
				return err
			}
			*dst = strings.ToLower(strings.TrimSpace(v))
			s.setSource("args", key)
			return nil
		}
		flag := func(dst *bool, on bool, key string) error {
			if hasVal {
				switch strings.ToLower(val) {
				case "true", "1", "yes":
				case "false", "0", "no":
					on = !on
				default:
					return fmt.Errorf("runtime arg %s: %q is not true or false", a, val)
				}
			}
			*dst = on
			s.setSource("args", key)
			return nil
		}
		var err error
		switch name {
		case "max-num-batched-tokens":
			err = positive(&s.MaxBatchedTokens, "max_num_batched_tokens")
			batchedFromArgs = true
		case "max-num-seqs":
			err = positive(&s.MaxNumSeqs, "max_num_seqs")
		case "tensor-parallel-size", "tp":
			err = parallel(&s.TensorParallel, "tensor_parallel_size")
		case "pipeline-parallel-size", "pp":
			err = parallel(&s.PipelineParallel, "pipeline_parallel_size")
		case "data-parallel-size", "dp":
			err = parallel(&s.DataParallel, "data_parallel_size")
		case "quantization", "q":
			err = text(&s.Quantization, "quantization")
		case "kv-cache-dtype":
			err = text(&s.KVCacheDtype, "kv_cache_dtype")
		case "disable-hybrid-kv-cache-manager":
			err = flag(&s.FullLengthKV, true, "full_length_kv")
		case "block-size":
			err = positive(&s.BlockSize, "block_size")
		case "enable-chunked-prefill":
			err = flag(&s.ChunkedPrefill, true, "chunked_prefill")
		case "no-enable-chunked-prefill":
			err = flag(&s.ChunkedPrefill, false, "chunked_prefill")
		case "enable-prefix-caching":
			err = flag(&s.PrefixCaching, true, "prefix_caching")
		case "no-enable-prefix-caching":
			err = flag(&s.PrefixCaching, false, "prefix_caching")
		case "async-scheduling":
			err = flag(&s.AsyncScheduling, true, "async_scheduling")
		case "no-async-scheduling":
			err = flag(&s.AsyncScheduling, false, "async_scheduling")
		case "enforce-eager":
			err = flag(&s.EnforceEager, true, "enforce_eager")
		case "gpu-memory-utilization":
			var v string
			if v, err = value(); err == nil {
				f, perr := strconv.ParseFloat(v, 64)
				if perr != nil || !(f > 0 && f <= 1) {
					err = fmt.Errorf("runtime arg %s: %q is not a fraction in (0, 1]", a, v)
				} else {
					s.GPUMemoryUtilization = f
					s.setSource("args", "gpu_memory_utilization")
				}
			}
		default:
			if takesValue, ok := unmodelledArgs[name]; ok {
				if takesValue && !hasVal && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					i++ // the flag's value (speculative-config's JSON)
				}
				s.Unmodelled = append(s.Unmodelled, name)
			}
		}
		if err != nil {
			return s, err
		}
	}
	if s.AsyncScheduling && s.PipelineParallel > 1 && !versionAtLeast(b.RuntimeVersion, 0, 15) {
		// Async scheduling with pipeline parallelism came with vLLM PR
		// #32359 (January 2026); GPUStack's gpt-oss-120b run with
		// --async-scheduling -pp 2 on vLLM 0.11 decoded as the synchronous
		// scheduler does (planner/perf/testdata/published).
		s.AsyncScheduling = false
		s.setSource("vllm<0.15: not with pipeline parallelism", "async_scheduling")
	}
	if s.DataParallel > 1 {
		// Replicas are not modelled (the estimate is one replica's).
		s.Unmodelled = append(s.Unmodelled, "data-parallel-size")
	}
	if !s.ChunkedPrefill && !batchedFromArgs && b.MaxBatchedTokens == 0 {
		// vLLM sizes the budget to a whole context when prompts cannot be chunked.
		s.MaxBatchedTokens = max(s.MaxBatchedTokens, maxModelLen)
	}
	return s, nil
}

// maxParallelSize bounds --tensor-parallel-size, --pipeline-parallel-size
// and --data-parallel-size: their product is the deployment's GPUs, which
// must stay a number the plan can count and compare with a gpu block's.
const maxParallelSize = 4096

// unmodelledArgs are the vLLM args that change its performance in ways
// the model leaves out, true for those that take a value:
// --enable-expert-parallel (experts spread over the GPUs instead of
// split) and --speculative-config (draft tokens).
var unmodelledArgs = map[string]bool{"enable-expert-parallel": false, "speculative-config": true}

// Assume sets the assumptions the settings decide on g: the GPU memory
// utilisation, whether the engine's work per sequence overlaps the GPU's
// (AsyncScheduling) and, with EnforceEager on a CUDA GPU, that every step
// launches its kernels one by one (EagerAll, whatever the version's
// EngineOverheads.Apply sets before or after).
func (s RuntimeSettings) Assume(a *Assumptions, g GPU) {
	a.GPUMemoryUtilization, a.AsyncScheduling = s.GPUMemoryUtilization, s.AsyncScheduling
	if s.EnforceEager && g.Capability > 0 {
		a.EagerSteps, a.EagerLayerUs = EagerAll, eagerLayerUs
	}
}

// GPUs is the GPUs one server of these settings runs on: tensor x
// pipeline x data parallel sizes.
func (s RuntimeSettings) GPUs() int {
	return max(s.TensorParallel, 1) * max(s.PipelineParallel, 1) * max(s.DataParallel, 1)
}

func (s *RuntimeSettings) setSource(src string, keys ...string) {
	for _, k := range keys {
		s.Sources[k] = src
	}
}

// Engine returns the scheduler settings of s (the KV cache is sized later,
// from the hardware).
func (s RuntimeSettings) Engine() EngineConfig {
	return EngineConfig{MaxNumSeqs: s.MaxNumSeqs, MaxBatchedTokens: s.MaxBatchedTokens, ChunkedPrefill: s.ChunkedPrefill,
		PrefixCaching: s.PrefixCaching, BlockSize: s.BlockSize, FullLengthKV: s.FullLengthKV}
}

// versionAtLeast reports whether version (e.g. "0.22.1", "v0.8.5.post1")
// is at least major.minor; an empty or unparsable version counts as the
// newest (the engine's current defaults).
func versionAtLeast(version string, major, minor int) bool {
	v := strings.TrimPrefix(strings.TrimSpace(version), "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return true
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return true
	}
	return ma > major || (ma == major && mi >= minor)
}

// VersionAtLeast reports whether version is at least min ("0.5.0": its
// major and minor count), by versionAtLeast's rules.
func VersionAtLeast(version, min string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(min, "%d.%d", &major, &minor); err != nil {
		return true
	}
	return versionAtLeast(version, major, minor)
}
