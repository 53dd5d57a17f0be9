package planner

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang"
)

// TestPublishedHarnessIsThePlanner: planPublished plans a published point
// as `infercrane plan` plans the same spec. The harness resolves what
// the planner resolves (runtime defaults, the checkpoint's precision, the
// front end) on its own, and it drifted once: it planned every point at
// 16-bit weights, so DeepSeek-R1-0528's FP8 checkpoint did not fit where
// the planner fitted it. Each point whose load a shape block can state
// (fixed lengths; not the per-request sizes of the ShareGPT samples, nor
// a prefix another run left in the cache) is written as a spec, built,
// and its lane's throughput and preemptions compared with the harness's
// (the plan rounds its figures: within 0.01%).
func TestPublishedHarnessIsThePlanner(t *testing.T) {
	checked := 0
	for _, pt := range readPublished(t) {
		if len(pt.Sizes) > 0 || pt.Arrival != "" || pt.CachedTokens > 0 {
			continue // a shape states neither per-request sizes nor a prefix another run cached
		}
		want, err := planPublished(pt)
		if err != nil {
			t.Fatalf("%s: %v", pt.ID, err)
		}
		p := planSpec(t, publishedSpec(pt))
		if len(p.Lanes) != 1 || !p.Lanes[0].Estimate.Available {
			t.Fatalf("%s: the planner gave no estimate", pt.ID)
		}
		got := p.Lanes[0].Estimate
		if rel(got.OutputTokenThroughput, want["output_token_throughput"]) > 1e-4 || got.Preemptions != want["preemptions"] {
			t.Errorf("%s: the planner says %.6g tok/s and %g preemptions, the harness %.6g and %g",
				pt.ID, got.OutputTokenThroughput, got.Preemptions, want["output_token_throughput"], want["preemptions"])
		}
		checked++
	}
	if checked < 56 {
		t.Errorf("%d points compared, want the 56 without per-request sizes or cached prefixes", checked)
	}
}

func rel(a, b float64) float64 { return math.Abs(a-b) / math.Max(math.Abs(b), 1e-12) }

// publishedSpec is the spec of one published point: its model, GPUs,
// engine version and server args, and its load.
func publishedSpec(pt publishedPoint) string {
	args := make([]string, len(pt.ServerArgs))
	for i, a := range pt.ServerArgs {
		args[i] = strconv.Quote(a)
	}
	load := fmt.Sprintf("  concurrency = %d\n", pt.Concurrency)
	if pt.RequestRate > 0 {
		load = fmt.Sprintf("  request_rate = %g\n", pt.RequestRate)
	}
	api := "chat"
	if pt.Endpoint == "completions" {
		api = "completions"
	}
	return fmt.Sprintf(`model "m" {
  id = %q
}
gpu "g" {
  type  = %q
  count = %d
}
runtime "r" {
  engine  = %q
  version = %q
  args    = [%s]
}
executor "sim" {
  type = "sim"
}
shape "s" {
  input_tokens  = %d
  output_tokens = %d
%s  requests      = %d
  api           = %q
}
screen "p" {
  models   = [model.m]
  shapes   = [shape.s]
  gpus     = [gpu.g]
  runtimes = [runtime.r]
  executor = executor.sim
  runs     = 1
  seed     = 1
}
`, pt.Model, pt.GPU, max(pt.GPUs, 1), pt.Engine, pt.Version, strings.Join(args, ", "),
		pt.InputTokens, pt.OutputTokens, load, pt.Requests, api)
}

// planSpec builds the spec src from a directory of its own.
func planSpec(t *testing.T, src string) *Plan {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := lang.Load(dir, lang.Options{})
	if diags.HasErrors() {
		t.Fatalf("load: %v\n%s", diags, src)
	}
	return build(t, cfg)
}

// TestGptOssChatGoesThroughHarmony: a gpt-oss lane on vLLM's chat API
// takes the completions front end (perf.FrontEndAPI: vLLM renders its
// chat with openai_harmony, not a chat template), says so in the plan's
// assumptions, and in a burst answers far sooner than the 0.8-0.11 chat
// front end would let it; a Qwen3 lane's chat keeps the chat front end.
func TestGptOssChatGoesThroughHarmony(t *testing.T) {
	burst := publishedPoint{Model: "openai/gpt-oss-20b", GPU: "H100", GPUs: 1, Engine: "vllm", Version: "0.11.0",
		Endpoint: "chat", InputTokens: 128, OutputTokens: 4, Concurrency: 1000, Requests: 1000}
	oss := planSpec(t, publishedSpec(burst))
	burst.Model = "Qwen/Qwen3-8B"
	qwen := planSpec(t, publishedSpec(burst))
	if got := oss.Lanes[0].Inputs.FrontEndAPI; got != "completions" {
		t.Errorf("gpt-oss chat lane's front end %q, want completions", got)
	}
	if got := qwen.Lanes[0].Inputs.FrontEndAPI; got != "" {
		t.Errorf("Qwen3 chat lane's front end %q, want the chat API's own", got)
	}
	var text strings.Builder
	if err := WriteText(&text, oss); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "chat API through the completions front end") {
		t.Errorf("the plan does not say which front end the gpt-oss lane takes:\n%s", text.String())
	}
	// 1,000 chat requests at once: the chat front end prepares them all
	// (about 15 s) before the first token; the completions one lets each
	// go on alone.
	if a, b := oss.Lanes[0].Estimate.TTFTMs, qwen.Lanes[0].Estimate.TTFTMs; !(a < b/2) {
		t.Errorf("TTFT p50 of the burst: gpt-oss %.0f ms, Qwen3-8B %.0f ms; want gpt-oss's under half", a, b)
	}
}
