package calibrate

import (
	"encoding/json"
	"github.com/infercrane/infercrane/lang/shape"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/benchresult"
	"github.com/infercrane/infercrane/executor/cachehit"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/perf"
)

// vllmBenchDoc is what `vllm bench serve --save-result --metadata
// gpu=L40S vllm=0.22.1` writes (vllm/benchmarks/serve.py's result_json
// keys) for a run the model predicts with lane at concurrency c.
func vllmBenchDoc(t *testing.T, lane perf.Lane, in, out, c, n int, meta bool) map[string]any {
	t.Helper()
	l := (&planner.Lane{Inputs: planner.LaneInputs{Settings: shape.Settings{InputTokens: in, OutputTokens: out, Concurrency: c, Requests: n}}}).PerfLoad()
	st, err := lane.Run(l)
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"date": "20260101-000000", "endpoint_type": "openai-chat", "backend": "openai-chat", "label": nil,
		"model_id": "Qwen/Qwen3-0.6B", "tokenizer_id": "Qwen/Qwen3-0.6B", "num_prompts": n,
		"request_rate": "inf", "burstiness": 1.0, "max_concurrency": c,
		"duration": st.WindowSeconds, "completed": n, "failed": 0,
		"total_input_tokens": in * n, "total_output_tokens": out * n,
		"request_throughput": st.RequestThroughput, "output_throughput": st.OutputTokenThroughput,
		"mean_ttft_ms": st.TTFT.Mean, "median_ttft_ms": st.TTFT.P50, "p95_ttft_ms": st.TTFT.P95, "p99_ttft_ms": st.TTFT.P99,
		"mean_tpot_ms": st.TPOT.Mean, "median_tpot_ms": st.TPOT.P50, "p95_tpot_ms": st.TPOT.P95, "p99_tpot_ms": st.TPOT.P99,
		"mean_itl_ms": st.ITL.Mean, "median_itl_ms": st.ITL.P50, "p99_itl_ms": st.ITL.P99,
		"mean_e2el_ms": st.Latency.Mean, "median_e2el_ms": st.Latency.P50, "p95_e2el_ms": st.Latency.P95, "p99_e2el_ms": st.Latency.P99,
	}
	if meta {
		doc["gpu"], doc["vllm"] = "L40S", "0.22.1"
	}
	return doc
}

func writeJSON(t *testing.T, dir, name string, doc any) string {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// calibrate fits from `vllm bench serve` results: the fit recovers the
// parameters the results were made with, and the calibration file says
// which tool (and version) measured them and that they came from outside
// InferCrane.
func TestCalibrateFromVLLMBench(t *testing.T) {
	truth := perf.Params{PrefillMFU: 0.25, DecodeEfficiency: 0.6, StepOverheadMs: 2.5, RequestOverheadMs: 9}
	fe, _ := perf.FrontEnd("vllm", "0.22.1", "completions")
	truthLane := func(t *testing.T, p perf.Params, in, out int) perf.Lane {
		l := truthLane(t, p, in, out)
		l.Hardware.Assume.FrontEndTokenUs = fe.TokenUs // the version's front end, as calibrate models it
		return l
	}
	dir := t.TempDir()
	var paths []string
	for i, s := range []struct{ in, out, c int }{{2048, 32, 1}, {128, 256, 1}, {512, 128, 16}, {1024, 64, 4}} {
		lane := truthLane(t, truth, s.in, s.out)
		paths = append(paths, writeJSON(t, dir, "r"+string(rune('a'+i))+".json", vllmBenchDoc(t, lane, s.in, s.out, s.c, 4*s.c, true)))
	}
	res, err := Run(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Calibration.Fits) != 1 {
		t.Fatalf("%d fits", len(res.Calibration.Fits))
	}
	f := res.Calibration.Fits[0]
	if f.GPUType != "L40S" || f.Engine != "vllm" || f.Version != "0.22.1" || f.Executor != "external: "+benchresult.ToolVLLMBench || f.Source != "aggregates and results" {
		t.Errorf("fit conditions: %s %s %s executor %q source %q", f.GPUType, f.Engine, f.Version, f.Executor, f.Source)
	}
	if len(f.Evidence) != 4 || f.Evidence[0].Tool != benchresult.ToolVLLMBench || f.Evidence[0].ToolVersion != "not recorded" || !strings.HasPrefix(f.Evidence[0].Digest, "sha256:") {
		t.Errorf("provenance: %+v", f.Evidence)
	}
	if f.Fit.MAPE > 0.03 {
		t.Errorf("fit MAPE %.3f on figures the model made", f.Fit.MAPE)
	}
	if rel := math.Abs(f.Params.DecodeEfficiency/truth.DecodeEfficiency - 1); rel > 0.1 {
		t.Errorf("decode efficiency %.3f, made with %.3f", f.Params.DecodeEfficiency, truth.DecodeEfficiency)
	}
	// -check reports the transfer error on another result.
	other := writeJSON(t, dir, "other.json", vllmBenchDoc(t, truthLane(t, truth, 256, 64), 256, 64, 8, 32, true))
	chk, err := CheckCalibration([]string{other}, Options{}, res.Calibration)
	if err != nil {
		t.Fatal(err)
	}
	if len(chk.Fits) != 1 || chk.Fits[0].Fit.MAPE > 0.05 || len(chk.Warnings) != 0 {
		t.Errorf("check: %+v, warnings %v", chk.Fits, chk.Warnings)
	}
	// The fit records the model's revision; checking a fit of another
	// revision says so, as the planner refuses it.
	if f.ModelRevision != perf.ModelRevision {
		t.Errorf("the fit records model revision %q, want %q", f.ModelRevision, perf.ModelRevision)
	}
	res.Calibration.Fits[0].ModelRevision = ""
	chk, err = CheckCalibration([]string{other}, Options{}, res.Calibration)
	if err != nil || len(chk.Warnings) != 1 || !strings.Contains(chk.Warnings[0], "before the performance model's revisions were recorded") || !strings.Contains(chk.Warnings[0], "refit") {
		t.Errorf("checking a fit of another revision: %v %v", err, chk.Warnings)
	}
}

// A result that does not say its GPU and engine is refused naming the
// flags; with them it is used.
func TestCalibrateRefusesAResultWithoutConditions(t *testing.T) {
	dir := t.TempDir()
	lane := truthLane(t, perf.ParamsOf(perf.DefaultAssumptions(mustGPU(t, "L40S"))), 512, 64)
	p := writeJSON(t, dir, "bare.json", vllmBenchDoc(t, lane, 512, 64, 4, 16, false))
	_, err := Run([]string{p}, Options{})
	if err == nil || !strings.Contains(err.Error(), "bare.json") || !strings.Contains(err.Error(), "-gpu NAME") || !strings.Contains(err.Error(), "-engine vllm==0.11.0") {
		t.Fatalf("a result without its conditions: %v", err)
	}
	if _, err := Run([]string{p}, Options{Hints: benchresult.Hints{GPU: "L40S", Engine: "vllm==0.22.1"}}); err != nil && !strings.Contains(err.Error(), "cannot determine") {
		t.Fatalf("with -gpu and -engine: %v", err)
	}
}

func mustGPU(t *testing.T, name string) perf.GPU {
	t.Helper()
	g, ok := perf.LookupGPU(name)
	if !ok {
		t.Fatal(name)
	}
	return g
}

// The earlier screen document (modal-public-trace-two-model-screen/v1) is
// read; a run whose TTFT p50 is far below a lone prefill's compute (its
// identical prompts served from vLLM's prefix cache) is flagged and left
// out of the fit unless -keep-cached.
func TestCalibrateScreenDocumentLeavesOutCachedRuns(t *testing.T) {
	src := filepath.Join("..", "benchresult", "testdata", "screen-two-model.json")
	rs, err := benchresult.Read(src, benchresult.Hints{})
	if err != nil {
		t.Fatal(err)
	}
	long := rs[1] // public-long-prefill: 4,096-token prompts on an L40S
	obs, g, warn, notes := foreignObservations(long, Options{})
	if warn != "" {
		t.Fatal(warn)
	}
	// Run 1 (TTFT p50 300 ms) is cold; run 2 (8 ms) cannot have
	// prefilled 4,096 tokens.
	floor := cachehit.LonePrefillMs(obs[0].Lane, 4096)
	if !(8 < CachedTTFTFraction*floor && 300 > floor) {
		t.Fatalf("the fixture no longer straddles the floor: lone prefill %.1f ms", floor)
	}
	if len(obs) != 1 || !strings.HasSuffix(obs[0].Name, "run 1") || g.executor != "external: "+long.Tool {
		t.Fatalf("observations: %d (%v)", len(obs), obs)
	}
	joined := strings.Join(notes, "\n")
	if !strings.Contains(joined, "run 2 left out of the fit") || !strings.Contains(joined, "-keep-cached") || !strings.Contains(joined, "prefix cache") {
		t.Errorf("notes: %s", joined)
	}
	obs, _, _, notes = foreignObservations(long, Options{KeepCached: true})
	if len(obs) != 2 || !strings.Contains(strings.Join(notes, "\n"), "kept (-keep-cached)") {
		t.Errorf("-keep-cached: %d observations, notes %v", len(obs), notes)
	}
	// The interactive campaign's 256-token prompts prefill in a few ms:
	// no run is flagged.
	obs, _, _, notes = foreignObservations(rs[0], Options{})
	if len(obs) != 2 || strings.Contains(strings.Join(notes, "\n"), "left out") {
		t.Errorf("interactive: %d observations, notes %v", len(obs), notes)
	}
}

// InferCrane evidence whose run's TTFT p50 is far below a lone prefill's
// compute, with no prefix-cache hit declared by the server, is flagged; an
// aggregate that mixes such a run in is left out of the fit unless
// -keep-cached.
func TestCalibrateFlagsUndeclaredCacheHitsInEvidence(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	run := func(n int, ttft float64) map[string]any {
		return map[string]any{"run": n, "requests": 4, "succeeded": 4, "ttft_p50_ms": ttft, "ttft_p95_ms": ttft * 1.1, "tpot_p50_ms": 3.0, "latency_p50_ms": ttft + 50}
	}
	agg := map[string]any{"requests": 8, "succeeded": 8, "output_token_throughput": 300.0, "ttft_p50_ms": *f(154), "ttft_p95_ms": *f(170), "tpot_p50_ms": 3.0, "latency_p50_ms": 204.0}
	doc := evidenceDoc(map[string]any{"profile": "long", "lane": "l1", "gpu": "l40s", "gpu_type": "L40S",
		"workload":  map[string]any{"input_tokens": 4096, "output_tokens": 16, "concurrency": 1, "requests_per_run": 4},
		"aggregate": agg, "runs": []any{run(1, 300), run(2, 8)}})
	path := writeEvidence(t, t.TempDir(), "cached.evidence.json", doc)
	_, _, warnings, _, err := collect([]string{path}, Options{})
	if err == nil || !strings.Contains(err.Error(), "run 2: TTFT p50 8.0 ms is under 50% of a lone 4096-token prefill") || !strings.Contains(err.Error(), "-keep-cached") {
		t.Fatalf("a campaign with an undeclared cache hit: %v %v", err, warnings)
	}
	groups, keys, warnings, _, err := collect([]string{path}, Options{KeepCached: true})
	if err != nil || len(keys) != 1 || len(groups[keys[0]].obs) != 1 || len(warnings) != 1 || !strings.Contains(warnings[0], "kept (-keep-cached)") {
		t.Fatalf("-keep-cached: %v %v %v", err, keys, warnings)
	}
}

// A result of another tool for a model whose checkpoint is quantised is
// planned at the checkpoint's precision, as the plan plans it: GPUStack's
// vllm bench serve result of DeepSeek-R1-0528 (its FP8 checkpoint, 671B
// parameters) on 8 x H200 fits there at FP8, where 16-bit weights would
// not (calibrate had planned every foreign result at 16 bits, and refused
// this one as not fitting).
func TestForeignResultTakesTheCheckpointsPrecision(t *testing.T) {
	r := benchresult.Result{File: "r1.json", Tool: benchresult.ToolVLLMBench, Model: "deepseek-ai/DeepSeek-R1-0528",
		GPU: "H200", GPUCount: 8, Engine: "vllm", EngineVersion: "0.11.0",
		InputTokens: 1997, OutputTokens: 100, Concurrency: 500, Requests: 500, Runs: 1,
		Metrics: map[string]float64{benchresult.OutTput: 843.71, benchresult.TTFTP50: 27559.21, benchresult.TPOTP50: 276.56}}
	obs, _, warn, _ := foreignObservations(r, Options{})
	if warn != "" || len(obs) != 1 {
		t.Fatalf("warn %q, %d observations", warn, len(obs))
	}
	if p := obs[0].Lane.Hardware.Precision; p == nil || p.Quantization != "fp8" {
		t.Errorf("precision %+v, want the checkpoint's fp8", p)
	}
}
