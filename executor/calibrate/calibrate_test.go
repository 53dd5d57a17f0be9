package calibrate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner/perf"
)

// A run's records give the model the sizes the server saw, in send order:
// the server's prompt count (the requested one when it gave none), the
// output, the cached prefix it reported (never the whole prompt), warm-up
// requests apart, failed requests without output left out.
func TestRecordSizes(t *testing.T) {
	cached := func(n int) *int { return &n }
	recs := []loadgen.Record{
		{Index: 2, InputTokens: 100, PromptTokens: 101, OutputTokens: 8, CachedTokens: cached(64)},
		{Index: 0, Warmup: true, InputTokens: 100, PromptTokens: 100, OutputTokens: 8},
		{Index: 1, InputTokens: 100, OutputTokens: 7},
		{Index: 3, InputTokens: 100, PromptTokens: 100, ErrorClass: "http_5xx"},
		{Index: 4, InputTokens: 50, PromptTokens: 50, OutputTokens: 8, CachedTokens: cached(50)},
	}
	meas, warm := recordSizes(recs)
	if want := []perf.RequestSize{{Input: 100, Output: 7}, {Input: 101, Output: 8, Cached: 64}, {Input: 50, Output: 8, Cached: 49}}; !reflect.DeepEqual(meas, want) {
		t.Errorf("measured sizes %v, want %v", meas, want)
	}
	if want := []perf.RequestSize{{Input: 100, Output: 8}}; !reflect.DeepEqual(warm, want) {
		t.Errorf("warm-up sizes %v, want %v", warm, want)
	}
}

// Evidence whose fixed-shape lane found part of its prompts in the
// server's prefix cache (another lane's prompts, before the load generator
// salted them per lane) is modelled with those cached tokens, and
// calibrate says so: the model then reproduces what was measured instead
// of blaming a fast prefill on the MFU.
func TestCachedPromptsOfEvidenceAreModelled(t *testing.T) {
	m, _ := perf.LookupModel("Qwen/Qwen3-0.6B")
	g, _ := perf.LookupGPU("L40S")
	hidden := perf.Params{PrefillMFU: 0.55, DecodeEfficiency: 0.62, StepOverheadMs: 2.4, RequestOverheadMs: 12}
	truth, err := perf.NewLane(m, perf.Hardware{GPU: g, Count: 1, BytesPerElem: 2, Assume: hidden.Apply(perf.DefaultAssumptions(g))},
		perf.EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true, PrefixCaching: true, BlockSize: 16}, 3016)
	if err != nil {
		t.Fatal(err)
	}
	load := perf.Load{InputTokens: 3000, OutputTokens: 16, Concurrency: 1, Requests: 4, Warmup: 1, CachedTokens: 2000}
	e, err := truth.Estimate(load, 1)
	if err != nil {
		t.Fatal(err)
	}
	agg := map[string]any{"requests": 4, "succeeded": 4, "output_token_throughput": e.OutputTokenThroughput}
	for _, name := range perf.FitMetrics {
		agg[name], _ = e.Metric(name)
	}
	run := map[string]any{"run": 1, "succeeded": 4, "server_view": map[string]any{"prefix_cache": map[string]any{"queried_tokens": 12000, "hit_tokens": 8000}}}
	ev := map[string]any{
		"screen":      "old",
		"environment": map[string]any{"gpu_request": []string{"L40S x1"}, "runtime": map[string]any{"engine": "vllm", "version": "0.22.1"}, "random_seed": 3},
		"models": []any{map[string]any{"model": "Qwen/Qwen3-0.6B", "campaigns": []any{map[string]any{
			"profile": "long", "lane": "l1", "gpu": "l40s", "gpu_type": "L40S",
			"workload":  map[string]any{"input_tokens": 3000, "output_tokens": 16, "concurrency": 1, "requests_per_run": 4, "warmup": 1},
			"aggregate": agg, "runs": []any{run}}}}},
	}
	path := writeEvidence(t, t.TempDir(), "old.evidence.json", ev)
	groups, keys, warnings, _, err := collect([]string{path}, Options{})
	if err != nil || len(keys) != 1 {
		t.Fatalf("collect: %v %v", err, keys)
	}
	obs := groups[keys[0]].obs
	if len(obs) != 1 || obs[0].Load.CachedTokens != 2000 {
		t.Fatalf("observations %+v: want 2,000 cached tokens per request (8,000 hit tokens over 4 requests)", obs)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "the server's prefix cache served 8000 of the 12000 prompt tokens") {
		t.Errorf("warnings %q", warnings)
	}
	res, err := perf.Evaluate(obs, hidden)
	if err != nil || res.MAPE > 1e-9 {
		t.Errorf("with the hidden parameters the model must reproduce the evidence: MAPE %v, %v", res.MAPE, err)
	}
}
