package planner

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/arch"
)

// customConfig is a small Qwen3-style config.json of a model the catalog
// does not know.
const customConfig = `{"model_type":"qwen3","num_hidden_layers":24,"hidden_size":2048,"num_attention_heads":16,
"num_key_value_heads":4,"head_dim":128,"vocab_size":32000,"intermediate_size":8192,"max_position_embeddings":32768}`

// customFixture is the fixture with model qwen06 renamed to a model the
// catalog does not know.
func customFixture(t *testing.T) (*lang.Config, *lang.Model) {
	cfg := fixture()
	cfg.Dir = t.TempDir()
	m := cfg.Models["qwen06"]
	m.ID, m.Revision = "example/Custom-2B", "0123456789abcdef0123456789abcdef01234567"
	return cfg, m
}

func lanesOf(p *Plan, model string) []*Lane {
	var out []*Lane
	for _, l := range p.Lanes {
		if l.Model == model {
			out = append(out, l)
		}
	}
	return out
}

// TestModelConfigFile: a model block's config file gives the architecture
// (the plan says where it came from); a changed, missing or unreadable
// file is an error at its attribute.
func TestModelConfigFile(t *testing.T) {
	cfg, m := customFixture(t)
	if err := os.WriteFile(filepath.Join(cfg.Dir, "config.json"), []byte(customConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	digest := arch.Digest([]byte(customConfig))
	m.Config = &lang.PinnedFile{File: "config.json", Digest: digest}
	p := build(t, cfg)
	want, _ := arch.Parse([]byte(customConfig))
	for _, l := range lanesOf(p, "qwen06") {
		a := l.Perf.Model
		if !l.Estimate.Available || a.Params != want.Count().Total || a.Source != "config.json" || a.ConfigDigest != digest || a.ConfigRevision != m.Revision || a.KVHeads != 4 {
			t.Errorf("lane %s: estimate %v, architecture %+v", l.Key, l.Estimate.Available, a)
		}
	}
	if len(findingsMatching(p, "estimates unavailable")) != 0 {
		t.Errorf("a config file must enable estimates: %+v", p.Preflight)
	}

	for name, tc := range map[string]struct {
		file, digest, content, want string
	}{
		"changed":  {"config.json", "sha256:" + strings.Repeat("0", 64), customConfig, "Model config digest mismatch"},
		"missing":  {"nope.json", "", "", "Cannot read model config"},
		"invalid":  {"config.json", "", `{"model_type":"qwen3","num_hidden_layers":"many"}`, `"num_hidden_layers": want an integer`},
		"unknown":  {"config.json", "", `{"model_type":"rwkv"}`, `model type "rwkv" is not one InferCrane reads`},
		"notjson":  {"config.json", "", `model_type: qwen3`, "not a JSON object"},
		"catalog!": {"config.json", "", `{}`, `"model_type": missing`},
	} {
		if tc.content != "" {
			if err := os.WriteFile(filepath.Join(cfg.Dir, "config.json"), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m.Config = &lang.PinnedFile{File: tc.file, Digest: tc.digest}
		_, diags := Build(cfg, nil, Options{})
		if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", name, diags, tc.want)
		}
	}
}

// TestModelConfigFromHFCache: a model the catalog does not know takes its
// config.json from the local Hugging Face cache at its pinned revision (or
// the commit refs/main names), without the network; HF_HUB_CACHE wins over
// HF_HOME; without the file the warning says where it looked.
func TestModelConfigFromHFCache(t *testing.T) {
	cfg, m := customFixture(t)
	home := t.TempDir()
	repo := filepath.Join(home, "hub", "models--example--Custom-2B")
	snap := filepath.Join(repo, "snapshots", m.Revision)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "config.json"), []byte(customConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(vars map[string]string) Env { return func(k string) string { return vars[k] } }
	check := func(e Env, wantSource string) {
		t.Helper()
		p, diags := Build(cfg, nil, Options{Env: e})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		for _, l := range lanesOf(p, "qwen06") {
			if wantSource == "" {
				if l.Estimate.Available {
					t.Errorf("lane %s has an estimate without a config", l.Key)
				}
				continue
			}
			if l.Perf == nil || !strings.Contains(l.Perf.Model.Source, wantSource) || l.Perf.Model.ConfigRevision != m.Revision {
				t.Errorf("lane %s: perf %+v", l.Key, l.Perf)
			}
		}
	}
	check(env(map[string]string{"HF_HOME": home}), filepath.Join(snap, "config.json"))
	check(env(map[string]string{"HF_HUB_CACHE": filepath.Join(home, "hub"), "HF_HOME": "/nonexistent"}), filepath.Join(snap, "config.json"))

	// No revision: refs/main names the snapshot.
	m.Revision = ""
	check(env(map[string]string{"HF_HOME": home}), "")
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("0123456789abcdef0123456789abcdef01234567\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.Revision = "main"
	p, _ := Build(cfg, nil, Options{Env: env(map[string]string{"HF_HOME": home})})
	if l := lanesOf(p, "qwen06")[0]; l.Perf == nil || l.Perf.Model.ConfigRevision != "0123456789abcdef0123456789abcdef01234567" {
		t.Errorf("refs/main: %+v", l.Perf)
	}

	// A revision the cache does not hold: the warning names the path.
	m.Revision = strings.Repeat("f", 40)
	p, _ = Build(cfg, nil, Options{Env: env(map[string]string{"HOME": home})})
	got := findingsMatching(p, `^estimates unavailable for model "qwen06"`)
	if len(got) != 1 || !strings.Contains(got[0].Detail, filepath.Join(home, ".cache", "huggingface", "hub", "models--example--Custom-2B", "snapshots", m.Revision, "config.json")) ||
		!strings.Contains(got[0].Detail, `config = "path/to/config.json"`) {
		t.Errorf("want a warning naming the cache path and the config attribute: %+v", got)
	}

	// A cached config that does not parse is an error at the model.
	m.Revision = "0123456789abcdef0123456789abcdef01234567"
	if err := os.WriteFile(filepath.Join(snap, "config.json"), []byte(`{"model_type":"mamba"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, diags := Build(cfg, nil, Options{Env: env(map[string]string{"HF_HOME": home})}); !strings.Contains(diags.Error(), `model type "mamba"`) {
		t.Errorf("unparsable cached config: %v", diags)
	}
}

// TestRuntimePrecisionAndParallelism: the runtime's --quantization and
// --kv-cache-dtype set the lane's precision; a quantisation the GPU or the
// engine version cannot run, a tensor-parallel size vLLM refuses and
// parallel sizes beyond the gpu block's count are preflight errors.
func TestRuntimePrecisionAndParallelism(t *testing.T) {
	plan := func(gpu string, count int, version string, args ...string) *Plan {
		cfg := fixture()
		cfg.GPUs["l40s"].Type, cfg.GPUs["l40s"].Count = gpu, count
		r := cfg.Runtimes["vllm"]
		r.RuntimeVersion = version
		r.RuntimeArgs = append(r.RuntimeArgs, args...)
		return build(t, cfg)
	}
	base := plan("L40S", 1, "0.22.1").Lanes[0]
	fp8 := plan("L40S", 1, "0.22.1", "--quantization", "fp8", "--kv-cache-dtype=fp8").Lanes[0]
	if base.Perf.Hardware.Precision != nil || fp8.Perf.Hardware.Precision == nil || fp8.Perf.Hardware.Precision.Compute != "fp8" || fp8.Perf.Hardware.Precision.KVBytes != 1 {
		t.Fatalf("precision: bf16 %+v, fp8 %+v", base.Perf.Hardware.Precision, fp8.Perf.Hardware.Precision)
	}
	if fp8.Perf.Engine.KVBlocks <= base.Perf.Engine.KVBlocks || fp8.Estimate.TPOTMs >= base.Estimate.TPOTMs || fp8.ID == base.ID {
		t.Errorf("fp8 must hold more KV cache, decode faster and be another lane: blocks %d vs %d, TPOT %v vs %v",
			fp8.Perf.Engine.KVBlocks, base.Perf.Engine.KVBlocks, fp8.Estimate.TPOTMs, base.Estimate.TPOTMs)
	}
	for name, tc := range map[string]struct {
		p    *Plan
		want string
	}{
		"fp8 on a T4":              {plan("T4", 1, "0.22.1", "--quantization", "fp8"), `quantization "fp8" needs CUDA compute capability 8.0`},
		"fp8 before vLLM 0.5":      {plan("L40S", 1, "0.4.3", "-q", "fp8"), `quantization "fp8" needs vllm 0.5.0 or newer`},
		"awq on a 16-bit model":    {plan("L40S", 1, "0.22.1", "--quantization=awq"), `needs a checkpoint quantised with it`},
		"kv int4":                  {plan("L40S", 1, "0.22.1", "--kv-cache-dtype", "int4"), `kv_cache_dtype "int4"`},
		"TP 3":                     {plan("L40S", 3, "0.22.1"), "tensor parallel size 3 does not divide the 16 attention heads"},
		"pipeline above the count": {plan("L40S", 2, "0.22.1", "--pipeline-parallel-size", "2", "--tensor-parallel-size", "2"), "tensor parallel size 2 times pipeline parallel size 2 needs 4 GPUs, and the gpu block gives 2"},
		"TP above the count":       {plan("L40S", 1, "0.22.1", "--tensor-parallel-size", "2"), "tensor parallel size 2 needs 2 GPUs, and the gpu block gives 1"},
	} {
		found := false
		for _, f := range tc.p.Preflight {
			found = found || (f.Severity == SeverityError && strings.Contains(f.Detail, tc.want))
		}
		if !found {
			t.Errorf("%s: want an error containing %q, got %+v", name, tc.want, tc.p.Preflight)
		}
	}
	// A tensor-parallel size below the gpu block's count runs one server on
	// part of the GPUs and bills them all: a warning naming both fixes
	// (before: nothing was said, and the lane cost four GPUs' price for a
	// two-GPU estimate).
	part := plan("L40S", 4, "0.22.1", "-tp", "2")
	var warned []string
	for _, f := range part.Preflight {
		if f.Severity == SeverityWarning && strings.Contains(f.Summary, "tensor_parallel_size") {
			warned = append(warned, f.Summary+" / "+f.Detail)
		}
	}
	if len(warned) != len(part.Lanes) || !strings.Contains(warned[0], "uses 2 of the 4 GPUs") || !strings.Contains(warned[0], "count = 2") || part.Lanes[0].Perf.Hardware.Count != 2 {
		t.Errorf("TP 2 on 4 GPUs: warnings %q, perf on %d GPUs", warned, part.Lanes[0].Perf.Hardware.Count)
	}
	for _, p := range []*Plan{plan("L40S", 1, "0.22.1"), plan("L40S", 2, "0.22.1")} {
		for _, f := range p.Preflight {
			if strings.Contains(f.Summary, "tensor_parallel_size") {
				t.Errorf("a lane whose engine uses every GPU: %s", f.Summary)
			}
		}
	}
	// Two GPUs split the weights and the KV heads and add all-reduces: more
	// KV cache, never more than twice as fast.
	two := plan("L40S", 2, "0.22.1").Lanes[0]
	if two.Perf.Hardware.Count != 2 || two.Perf.Engine.KVBlocks <= 2*base.Perf.Engine.KVBlocks || two.Estimate.TPOTMs < base.Estimate.TPOTMs/2 {
		t.Errorf("TP=2: count %d, blocks %d vs %d, TPOT %v vs %v", two.Perf.Hardware.Count, two.Perf.Engine.KVBlocks, base.Perf.Engine.KVBlocks, two.Estimate.TPOTMs, base.Estimate.TPOTMs)
	}
}

// TestPipelineParallelPlans: --pipeline-parallel-size plans (it was a
// preflight error): the lane spans tensor x pipeline GPUs, its memory
// check and KV cache count them all, and one below the gpu block's count
// warns of the idle rest as tensor parallelism does.
func TestPipelineParallelPlans(t *testing.T) {
	plan := func(count int, args ...string) *Plan { return planOnGPUs(t, count, args...) }
	one, tp2, pp2 := plan(1).Lanes[0], plan(2).Lanes[0], plan(2, "--pipeline-parallel-size", "2", "--tensor-parallel-size", "1").Lanes[0]
	for _, l := range []*Lane{pp2} {
		if l.Perf == nil || l.Estimate.TPOTMs <= 0 || l.Perf.Hardware.Stages != 2 || l.Perf.Hardware.Count != 1 || l.Perf.Hardware.GPUs() != 2 {
			t.Fatalf("PP=2: %+v", l.Perf)
		}
	}
	// The same memory as two-way tensor parallelism: about the same KV
	// cache (the activation reserve on each GPU either way), twice one GPU's
	// and more.
	if b := pp2.Perf.Engine.KVBlocks; b <= 2*one.Perf.Engine.KVBlocks || math.Abs(float64(b-tp2.Perf.Engine.KVBlocks)) > 0.02*float64(tp2.Perf.Engine.KVBlocks) {
		t.Errorf("KV blocks: PP=2 %d, TP=2 %d, one GPU %d", b, tp2.Perf.Engine.KVBlocks, one.Perf.Engine.KVBlocks)
	}
	// The budget of a step is the cycle's: two micro-batches of the
	// runtime's budget.
	if pp2.Perf.Engine.MaxBatchedTokens != 2*one.Perf.Engine.MaxBatchedTokens {
		t.Errorf("budget %d, one GPU's %d", pp2.Perf.Engine.MaxBatchedTokens, one.Perf.Engine.MaxBatchedTokens)
	}
	// The executors pass the gpu count as --tensor-parallel-size unless the
	// args set it: -pp 2 alone on two GPUs asks for four, and the error
	// names the size that fits.
	alone := plan(2, "-pp", "2")
	named := false
	for _, f := range alone.Preflight {
		named = named || (f.Severity == SeverityError && strings.Contains(f.Detail, "needs 4 GPUs, and the gpu block gives 2; set count = 4 in the gpu block or --tensor-parallel-size 1 in the runtime's args"))
	}
	if !named {
		t.Errorf("-pp 2 on 2 GPUs without -tp: %+v", alone.Preflight)
	}
	idle := plan(4, "-pp", "2", "-tp", "1")
	warned := false
	for _, f := range idle.Preflight {
		warned = warned || (f.Severity == SeverityWarning && strings.Contains(f.Summary, "the parallel sizes use 2 of the 4 GPUs"))
	}
	if !warned {
		t.Errorf("PP=2 on 4 GPUs: no warning of the idle two: %+v", idle.Preflight)
	}
}

// TestDataParallelCounted: --data-parallel-size is not modelled (the
// estimate is one replica's, and the plan notes it) but its replicas count
// in the deployment's GPUs: -dp 2 -tp 1 on two GPUs leaves none idle, and
// -dp 2 on two GPUs without -tp asks for four.
func TestDataParallelCounted(t *testing.T) {
	plan := func(count int, args ...string) *Plan { return planOnGPUs(t, count, args...) }
	p := plan(2, "--data-parallel-size", "2", "-tp", "1")
	noted := false
	for _, f := range p.Preflight {
		if f.Severity == SeverityError || strings.Contains(f.Summary, "of the 2 GPUs") {
			t.Errorf("dp 2 x tp 1 on 2 GPUs: %s: %s", f.Summary, f.Detail)
		}
		noted = noted || (f.Severity == SeverityNote && strings.Contains(f.Summary, "--data-parallel-size") && strings.Contains(f.Detail, "one replica's"))
	}
	if !noted || p.Lanes[0].Perf == nil || p.Lanes[0].Perf.Hardware.GPUs() != 1 {
		t.Errorf("dp 2: noted %v, lane on %v: %+v", noted, p.Lanes[0].Perf, p.Preflight)
	}
	refused := false
	for _, f := range plan(2, "-dp", "2").Preflight {
		refused = refused || (f.Severity == SeverityError && strings.Contains(f.Detail, "tensor parallel size 2 times data parallel size 2 needs 4 GPUs, and the gpu block gives 2; set count = 4 in the gpu block or --tensor-parallel-size 1"))
	}
	if !refused {
		t.Error("-dp 2 on 2 GPUs without -tp: not refused with the -tp that fits")
	}
}

// planOnGPUs plans the fixture on count GPUs with args added to its
// runtime's.
func planOnGPUs(t *testing.T, count int, args ...string) *Plan {
	t.Helper()
	cfg := fixture()
	cfg.GPUs["l40s"].Count = count
	r := cfg.Runtimes["vllm"]
	r.RuntimeArgs = append(r.RuntimeArgs, args...)
	return build(t, cfg)
}
