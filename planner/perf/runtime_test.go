package perf

import (
	"slices"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang/engine"
)

func TestResolveRuntimeDefaultsByVersionAndGPU(t *testing.T) {
	l40s, _ := LookupGPU("L40S")
	h100, _ := LookupGPU("H100")
	a100, _ := LookupGPU("A100-80GB")
	cpu, _ := LookupGPU("CPU")
	for _, c := range []struct {
		name          string
		g             GPU
		version       string
		tp            int
		batched, seqs int
		chunked       bool
	}{
		{"v1 small gpu", l40s, "0.22.1", 1, 2048, 256, true},
		{"v1 large gpu", h100, "0.10.0", 1, 8192, 1024, true},
		{"v1 A100 counts as small", a100, "0.9.2", 1, 2048, 256, true},
		{"cpu scales with tp", cpu, "0.22.1", 2, 4096, 256, true},
		{"v0", l40s, "0.6.3", 1, 8192, 256, false},
		{"unknown version: current defaults", l40s, "", 1, 2048, 256, true},
	} {
		s, err := ResolveRuntime(engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: c.version}, c.g, c.tp, 8192)
		if err != nil {
			t.Fatal(err)
		}
		if s.MaxBatchedTokens != c.batched || s.MaxNumSeqs != c.seqs || s.ChunkedPrefill != c.chunked || s.TensorParallel != c.tp {
			t.Errorf("%s: %+v", c.name, s)
		}
	}
}

func TestResolveRuntimeArgs(t *testing.T) {
	l40s, _ := LookupGPU("L40S")
	b := engine.Runtime{RuntimeVersion: "0.22.1", MaxNumSeqs: 64, GPUMemoryUtil: 0.8, RuntimeArgs: []string{
		"--max-model-len", "8192", "--max-num-batched-tokens=4096", "--max_num_seqs", "32",
		"--no-enable-chunked-prefill", "--enable-prefix-caching=false", "-tp", "2", "--gpu-memory-utilization", "0.7", "--block-size", "32",
	}}
	s, err := ResolveRuntime(b, l40s, 1, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxBatchedTokens != 4096 || s.MaxNumSeqs != 32 || s.ChunkedPrefill || s.PrefixCaching || s.TensorParallel != 2 || s.GPUMemoryUtilization != 0.7 || s.BlockSize != 32 {
		t.Errorf("args not applied (the last flag wins, as in vLLM): %+v", s)
	}
	if s.Sources["max_num_seqs"] != "args" || s.Sources["max_num_batched_tokens"] != "args" {
		t.Errorf("sources %v", s.Sources)
	}
	// The block's attributes apply when args do not say otherwise.
	s, _ = ResolveRuntime(engine.Runtime{RuntimeVersion: "0.22.1", MaxNumSeqs: 64, MaxBatchedTokens: 512}, l40s, 1, 8192)
	if s.MaxNumSeqs != 64 || s.MaxBatchedTokens != 512 || s.Sources["max_num_seqs"] != "runtime" {
		t.Errorf("block attributes: %+v", s)
	}
	// Without chunked prefill the default budget holds a whole context.
	s, _ = ResolveRuntime(engine.Runtime{RuntimeVersion: "0.22.1", RuntimeArgs: []string{"--no-enable-chunked-prefill"}}, l40s, 1, 16384)
	if s.MaxBatchedTokens != 16384 {
		t.Errorf("unchunked default budget %d, want the 16384-token context", s.MaxBatchedTokens)
	}
	for arg, want := range map[string]string{
		"--max-num-seqs=lots":            `"lots" is not a positive whole number`,
		"--max-num-batched-tokens":       "needs a value",
		"--gpu-memory-utilization=1.5":   "not a fraction",
		"--enable-chunked-prefill=maybe": "not true or false",
		"--tensor-parallel-size=0":       "not a positive whole number",
	} {
		if _, err := ResolveRuntime(engine.Runtime{RuntimeArgs: []string{arg}}, l40s, 1, 8192); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", arg, err, want)
		}
	}
}

// TestUnmodelledArgs: the args that change vLLM's performance in ways the
// model leaves out are listed (a flag's value consumed, so the args after
// it still resolve), and the others are not.
func TestUnmodelledArgs(t *testing.T) {
	h100, _ := LookupGPU("H100")
	args := []string{"--async-scheduling", "--speculative-config", `{"method":"eagle3","num_speculative_tokens":3}`, "--max-num-seqs", "64", "--enforce-eager=true", "--enable-expert-parallel", "-dp", "2"}
	s, err := ResolveRuntime(engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: "0.11.0", RuntimeArgs: args}, h100, 1, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"speculative-config", "enable-expert-parallel", "data-parallel-size"}; !slices.Equal(s.Unmodelled, want) || s.MaxNumSeqs != 64 || s.DataParallel != 2 || s.GPUs() != 2 || !s.AsyncScheduling {
		t.Errorf("unmodelled %v, max num seqs %d, async scheduling %v; want %v, 64 and true", s.Unmodelled, s.MaxNumSeqs, s.AsyncScheduling, want)
	}
	// --enforce-eager is modelled (TestEagerStepsLaunchTheirKernels).
	if !s.EnforceEager || s.Sources["enforce_eager"] != "args" {
		t.Errorf("--enforce-eager=true: enforce eager %v from %q, want true from the args", s.EnforceEager, s.Sources["enforce_eager"])
	}
	if s, _ := ResolveRuntime(engine.Runtime{RuntimeEngine: "vllm", RuntimeArgs: []string{"--max-model-len", "4096"}}, h100, 1, 4096); len(s.Unmodelled) != 0 {
		t.Errorf("unmodelled %v for args the model covers", s.Unmodelled)
	}
}

// TestAsyncSchedulingSetting: async scheduling is vLLM's default from
// 0.14 and the args' flag before it; --no-async-scheduling (or the flag
// set to false) turns it off; with pipeline parallelism vLLM before 0.15
// does not run it; and the settings carry it to the lane's assumptions.
func TestAsyncSchedulingSetting(t *testing.T) {
	h100, _ := LookupGPU("H100")
	for _, c := range []struct {
		version string
		args    []string
		want    bool
		source  string
	}{
		{"0.11.0", nil, false, ""},
		{"0.11.0", []string{"--async-scheduling"}, true, "args"},
		{"0.11.0", []string{"--async_scheduling=true"}, true, "args"},
		{"0.11.0", []string{"--async-scheduling=false"}, false, "args"},
		{"0.6.0", []string{"--async-scheduling"}, true, "args"},
		{"0.14.0", nil, true, "vllm>=0.14 default"},
		{"", nil, true, "vllm>=0.14 default"},
		{"0.14.1", []string{"--no-async-scheduling"}, false, "args"},
		{"0.11.0", []string{"--async-scheduling", "-pp", "2"}, false, "vllm<0.15: not with pipeline parallelism"},
		{"0.14.0", []string{"--pipeline-parallel-size=2"}, false, "vllm<0.15: not with pipeline parallelism"},
		{"0.15.0", []string{"-pp", "2"}, true, "vllm>=0.14 default"},
	} {
		s, err := ResolveRuntime(engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: c.version, RuntimeArgs: c.args}, h100, 2, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if s.AsyncScheduling != c.want || s.Sources["async_scheduling"] != c.source {
			t.Errorf("vLLM %q %v: async scheduling %v from %q, want %v from %q", c.version, c.args, s.AsyncScheduling, s.Sources["async_scheduling"], c.want, c.source)
		}
		var a Assumptions
		s.Assume(&a, h100)
		if a.AsyncScheduling != c.want || a.GPUMemoryUtilization != s.GPUMemoryUtilization {
			t.Errorf("vLLM %q %v: assumptions %+v from settings %+v", c.version, c.args, a, s)
		}
	}
}

// TestParallelSizesBounded: a tensor- or pipeline-parallel size beyond any
// deployment is refused, naming the arg, so tensor x pipeline cannot
// overflow the GPU count the plan compares with the gpu block's.
func TestParallelSizesBounded(t *testing.T) {
	h100, _ := LookupGPU("H100")
	for _, args := range [][]string{{"-tp", "4097"}, {"--pipeline-parallel-size", "9223372036854775807"}} {
		_, err := ResolveRuntime(engine.Runtime{RuntimeEngine: "vllm", RuntimeArgs: args}, h100, 1, 4096)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: %v, want an error naming %s", args, err, args[0])
		}
	}
	if _, err := ResolveRuntime(engine.Runtime{RuntimeEngine: "vllm", RuntimeArgs: []string{"-tp", "8", "-pp", "4"}}, h100, 32, 4096); err != nil {
		t.Errorf("tp 8 x pp 4: %v", err)
	}
}

// FuzzResolveRuntime feeds runtime args (split at spaces) and versions to
// the resolver: it never panics, and what it accepts is a setting vLLM
// could run: positive budgets and parallel sizes within their bound, a
// memory fraction in (0, 1], every setting's source recorded, and no async
// scheduling with pipeline parallelism before vLLM 0.15.
func FuzzResolveRuntime(f *testing.F) {
	for _, s := range [][2]string{
		{"0.11.0", "--async-scheduling -pp 2"},
		{"0.14.0", "--no-async-scheduling --max-num-seqs 64"},
		{"0.6.0", "--tensor-parallel-size=4 --gpu-memory-utilization 0.95 --enable-chunked-prefill"},
		{"", "--max-num-batched-tokens 512 --no-enable-prefix-caching --kv-cache-dtype fp8"},
		{"v0.8.5.post1", "--speculative-config {} -dp 2 --async-scheduling=false"},
	} {
		f.Add(s[0], s[1])
	}
	h100, _ := LookupGPU("H100")
	f.Fuzz(func(t *testing.T, version, args string) {
		s, err := ResolveRuntime(engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: version, RuntimeArgs: strings.Fields(args)}, h100, 1, 4096)
		if err != nil {
			return
		}
		if s.MaxNumSeqs < 1 || s.MaxBatchedTokens < 1 || s.TensorParallel < 1 || s.TensorParallel > maxParallelSize ||
			s.PipelineParallel > maxParallelSize || s.DataParallel > maxParallelSize || s.BlockSize < 1 ||
			!(s.GPUMemoryUtilization > 0 && s.GPUMemoryUtilization <= 1) {
			t.Fatalf("%q %q resolved out of bounds: %+v", version, args, s)
		}
		if s.AsyncScheduling && s.PipelineParallel > 1 && !versionAtLeast(version, 0, 15) {
			t.Fatalf("%q %q: async scheduling with pipeline parallelism before 0.15: %+v", version, args, s)
		}
		for _, k := range []string{"max_num_seqs", "max_num_batched_tokens", "tensor_parallel_size", "gpu_memory_utilization", "block_size"} {
			if s.Sources[k] == "" {
				t.Fatalf("%q %q: no source for %s: %+v", version, args, k, s.Sources)
			}
		}
		if s.AsyncScheduling && s.Sources["async_scheduling"] == "" {
			t.Fatalf("%q %q: async scheduling from nowhere: %+v", version, args, s.Sources)
		}
	})
}
