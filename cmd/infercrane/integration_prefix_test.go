//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/affinity"
)

// prefixScreen replaces the local-vllm-cpu example's runtime and screens
// with two runtimes that differ only by prefix caching and one screen that
// compares them on a prefix-reuse shape: 24 requests of 3,584 tokens in 2
// groups sharing 3,456, one stream, five runs a lane.
const prefixScreen = `
runtime "vllm_cache" {
  engine       = "vllm"
  version      = "0.32.0"
  dtype        = "float32"
  max_num_seqs = 8
  args = ["--served-model-name", "tiny-qwen3", "-O0", "--enforce-eager",
    "--enable-prefix-caching", "--enable-prompt-tokens-details"]
}

runtime "vllm_nocache" {
  engine       = "vllm"
  version      = "0.32.0"
  dtype        = "float32"
  max_num_seqs = 8
  args = ["--served-model-name", "tiny-qwen3", "-O0", "--enforce-eager",
    "--no-enable-prefix-caching", "--enable-prompt-tokens-details"]
}

shape "prefix_reuse" {
  input_tokens      = 3584
  output_tokens     = 4
  template_headroom = 32
  concurrency       = 1
  requests          = 24
  prefix {
    groups        = 2
    shared_tokens = 3456
  }
}

screen "prefix_cache" {
  models   = [model.tiny_qwen3]
  shapes   = [shape.prefix_reuse]
  gpus     = [gpu.cpu]
  runtimes = [runtime.vllm_cache, runtime.vllm_nocache]
  executor = executor.local
  runs     = 5
  seed     = 5
}
`

// TestIntegrationPrefixReuse applies one screen with two runtime lanes to
// real vLLM on CPU, prefix caching on (the reference) and off, on a
// prefix-reuse shape: the hit ratio vLLM's own counters give for the
// cached lane is within 10 percentage points of the intended one, its
// usage reports the cached tokens, the uncached lane reuses nothing, and
// the report's runtime comparison shows TTFT lower with caching.
func TestIntegrationPrefixReuse(t *testing.T) {
	venv, model := integrationEnv(t)
	bin := buildInfercrane(t)
	spec := copySpec(t, "../../examples/local-vllm-cpu")
	main := filepath.Join(spec, "main.hcl")
	src, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	// Keep the example's model, gpu and executor; replace its runtime,
	// shapes and screen.
	head, rest, ok := strings.Cut(string(src), "\nruntime \"vllm_cpu\"")
	_, tailSrc, ok2 := strings.Cut(rest, "\nexecutor \"local\"")
	if !ok || !ok2 {
		t.Fatal("the example has no runtime \"vllm_cpu\" followed by executor \"local\" to replace")
	}
	tailSrc, _, _ = strings.Cut(tailSrc, "\nshape ")
	// The tiny model has 4,096 positions; the example plans it at 1,024.
	// Long prompts make the prefill caching skips (attention grows with
	// the square of the prompt) large against the run-to-run noise.
	if !strings.Contains(head, "max_context = 1024") {
		t.Fatal("the example's model has no max_context = 1024 to raise")
	}
	head = strings.Replace(head, "max_context = 1024", "max_context = 4096", 1)
	if err := os.WriteFile(main, []byte(head+"\nexecutor \"local\""+tailSrc+prefixScreen), 0o644); err != nil {
		t.Fatal(err)
	}
	mark := fmt.Sprintf("INFERCRANE_PREFIX_TEST=%d", time.Now().UnixNano())
	env := []string{
		"PATH=" + filepath.Join(venv, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"INFERCRANE_VAR_model_dir=" + model, mark,
	}
	out, code := runBinary(t, bin, env, "plan", spec)
	if code != 0 || !strings.Contains(out, "RUNTIME") || !strings.Contains(out, "vllm_nocache") {
		t.Fatalf("plan exit %d:\n%s", code, out)
	}
	starved := affinity.Starved()
	applySpec(t, bin, env, spec)
	stalled := starved()
	if left := markedProcesses(mark); len(left) > 0 {
		t.Fatalf("processes of this apply left after it:\n%s", strings.Join(left, "\n"))
	}
	raw, err := os.ReadFile(filepath.Join(spec, ".infercrane", "reports", "prefix_cache.evidence.json"))
	if err != nil {
		t.Fatal(err)
	}
	type prefixMix struct {
		Intended       float64  `json:"intended"`
		Achieved       *float64 `json:"achieved"`
		AchievedSource string   `json:"achieved_source"`
		PromptTokens   int64    `json:"prompt_tokens"`
		CachedTokens   int64    `json:"cached_tokens"`
	}
	var ev struct {
		Models []struct {
			Campaigns []struct {
				Runtime    string         `json:"runtime"`
				Aggregate  map[string]any `json:"aggregate"`
				RequestMix *struct {
					PrefixCache *prefixMix `json:"prefix_cache"`
				} `json:"request_mix"`
			} `json:"campaigns"`
		} `json:"models"`
		RuntimeComparisons []struct {
			Candidate string `json:"candidate"`
			Baseline  string `json:"baseline"`
			Metrics   []struct {
				Metric    string  `json:"metric"`
				Candidate float64 `json:"candidate"`
				Baseline  float64 `json:"baseline"`
				Delta     float64 `json:"delta"`
			} `json:"metrics"`
			PrefixCache *struct {
				Intended  float64  `json:"intended"`
				Candidate *float64 `json:"candidate"`
				Baseline  *float64 `json:"baseline"`
			} `json:"prefix_cache"`
		} `json:"runtime_comparisons"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.Models) != 1 || len(ev.Models[0].Campaigns) != 2 || len(ev.RuntimeComparisons) != 1 {
		t.Fatalf("want 1 model with 2 runtime lanes and 1 runtime comparison, got %s", lastBytes(string(raw), 3000))
	}
	mixes := map[string]*prefixMix{}
	for _, c := range ev.Models[0].Campaigns {
		if f, _ := c.Aggregate["failed"].(float64); f != 0 {
			t.Errorf("%s: %v failed requests", c.Runtime, f)
		}
		if c.RequestMix == nil || c.RequestMix.PrefixCache == nil {
			t.Fatalf("%s: no request_mix.prefix_cache", c.Runtime)
		}
		mixes[c.Runtime] = c.RequestMix.PrefixCache
	}
	on, off := mixes["vllm_cache"], mixes["vllm_nocache"]
	if on == nil || off == nil {
		t.Fatalf("campaigns by runtime: %v", mixes)
	}
	rc := ev.RuntimeComparisons[0]
	if rc.Candidate != "vllm_nocache" || rc.Baseline != "vllm_cache" || rc.PrefixCache == nil {
		t.Fatalf("runtime comparison %+v", rc)
	}
	if on.Achieved == nil || on.AchievedSource != "vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total" {
		t.Fatalf("cached lane: achieved %v from %q, want vLLM's counters", on.Achieved, on.AchievedSource)
	}
	offWords := "none reported"
	if off.Achieved != nil {
		offWords = fmt.Sprintf("%.3f (%s)", *off.Achieved, off.AchievedSource)
	}
	ttft := map[string][3]float64{}
	for _, m := range rc.Metrics {
		ttft[m.Metric] = [3]float64{m.Baseline, m.Candidate, m.Delta}
	}
	p50 := ttft["ttft_p50_ms"]
	t.Logf("intended hit ratio %.3f; vLLM counted %.3f with caching, %s without; usage %d of %d prompt tokens cached; TTFT p50 %.1f ms with caching, %.1f ms without (delta %+.1f ms)",
		on.Intended, *on.Achieved, offWords, on.CachedTokens, on.PromptTokens, p50[0], p50[1], p50[2])
	if math.Abs(*on.Achieved-on.Intended) > 0.10 {
		t.Errorf("vLLM's hit ratio %.3f is more than 10 points from the intended %.3f", *on.Achieved, on.Intended)
	}
	if rc.PrefixCache.Baseline == nil || *rc.PrefixCache.Baseline != *on.Achieved || rc.PrefixCache.Intended != on.Intended {
		t.Errorf("runtime comparison's hit ratios %+v disagree with the cached campaign's %+v", rc.PrefixCache, on)
	}
	if on.PromptTokens == 0 {
		t.Errorf("the cached lane's usage reported no cached_tokens although vLLM runs with --enable-prompt-tokens-details")
	} else if usage := float64(on.CachedTokens) / float64(on.PromptTokens); math.Abs(usage-*on.Achieved) > 0.02 {
		t.Errorf("usage says %.3f of prompt tokens were cached, /metrics %.3f", usage, *on.Achieved)
	}
	if off.Achieved != nil && *off.Achieved > 0.05 {
		t.Errorf("with --no-enable-prefix-caching vLLM reports a hit ratio of %.3f", *off.Achieved)
	}
	if off.CachedTokens > 0 {
		t.Errorf("with --no-enable-prefix-caching usage reports %d cached tokens", off.CachedTokens)
	}
	if p50 == ([3]float64{}) {
		t.Fatalf("the runtime comparison has no ttft_p50_ms: %+v", rc.Metrics)
	}
	if p50[2] <= 0 {
		// Caching saves about 150 ms of TTFT here (3,456 of 3,584 prompt
		// tokens: 57.8 ms cached against 213.8 ms uncached on a 2-core
		// machine). With 768-token prompts it saved only 7-13 ms, and a CI
		// machine measured -0.7 ms over 5 runs a lane: the prompts are long
		// so that the quadratic attention the cache skips dominates the
		// noise. With other load the runs' CPU waits can still swamp it;
		// the hit ratios above count regardless.
		if stalled > 0.10 {
			t.Skipf("TTFT p50 with caching %.1f ms is not below %.1f ms without, but tasks on this machine waited for a CPU %.0f%% of the time during the apply (/proc/pressure/cpu): too busy for a timing comparison; rerun on a quiet machine",
				p50[0], p50[1], 100*stalled)
		}
		t.Errorf("TTFT p50 with caching %.1f ms is not below %.1f ms without", p50[0], p50[1])
	}
}
