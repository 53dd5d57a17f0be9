package benchresult

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fixtures in testdata are written in each tool's own layout (vLLM's
// vllm/benchmarks/serve.py result_json, AIPerf's exporters, GuideLLM's
// report, the earlier screen's Modal script); the figures are made up.

func read(t *testing.T, name string, h Hints) []Result {
	t.Helper()
	rs, err := Read(filepath.Join("testdata", name), h)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func wantMetrics(t *testing.T, r Result, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if got, ok := r.Metrics[k]; !ok || !near(got, v) {
			t.Errorf("%s: %s = %v (present %v), want %v", r.File, k, got, ok, v)
		}
	}
}

func TestVLLMBenchDetailed(t *testing.T) {
	rs := read(t, "vllm-bench-detailed.json", Hints{})
	if len(rs) != 1 {
		t.Fatalf("%d results", len(rs))
	}
	r := rs[0]
	if r.Tool != ToolVLLMBench || r.Model != "Qwen/Qwen3-0.6B" || r.GPU != "H100" || r.Engine != "vllm" || r.EngineVersion != "0.11.0" {
		t.Errorf("conditions: %+v", r)
	}
	if r.Concurrency != 4 || r.RequestRate != 0 || r.Requests != 8 || r.InputTokens != 128 || r.OutputTokens != 64 {
		t.Errorf("load: concurrency %d rate %v requests %d lengths %d/%d", r.Concurrency, r.RequestRate, r.Requests, r.InputTokens, r.OutputTokens)
	}
	if len(r.Sizes) != 8 || len(r.TTFTsMs) != 8 || !near(r.TTFTsMs[0], 20) {
		t.Errorf("per-request arrays: %d sizes, ttfts %v", len(r.Sizes), r.TTFTsMs)
	}
	wantMetrics(t, r, map[string]float64{TTFTP50: 23.5, TTFTP95: 26.65, TPOTP50: 7.1, TTFTMean: 23.5, LatP50: 470.8, ITLP50: 7.1, OutTput: 512 / 1.2})
	if _, ok := r.Metrics["itl_p95_ms"]; ok {
		t.Error("itl_p95 is not a figure the model is compared on")
	}
	if !strings.HasPrefix(r.Digest, "sha256:") || r.File != "vllm-bench-detailed.json" {
		t.Errorf("provenance %q %q", r.File, r.Digest)
	}
}

// A vllm bench result records neither the GPU nor vLLM's version unless
// --metadata says them: it is refused naming both and the flags.
func TestVLLMBenchWithoutConditionsIsRefused(t *testing.T) {
	_, err := Read(filepath.Join("testdata", "vllm-bench-rate.json"), Hints{})
	if err == nil {
		t.Fatal("accepted a result whose GPU and engine are unknown")
	}
	for _, want := range []string{"vllm-bench-rate.json", "the GPU", "--metadata gpu=", "-gpu NAME", "-engine ENGINE==VERSION", "-engine vllm==0.11.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	rs, err := Read(filepath.Join("testdata", "vllm-bench-rate.json"), Hints{GPU: "A100-80GB", Engine: "vllm==0.10.2"})
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if r.GPU != "A100-80GB" || r.EngineVersion != "0.10.2" || r.RequestRate != 2 || r.Arrival != "gamma" || r.Burstiness != 0.5 || r.Concurrency != 0 {
		t.Errorf("hinted open loop: %+v", r)
	}
	// Record wins over a hint.
	rs = read(t, "vllm-bench-detailed.json", Hints{GPU: "L4", Engine: "vllm==0.1.0"})
	if rs[0].GPU != "H100" || rs[0].EngineVersion != "0.11.0" {
		t.Errorf("a hint overrode the document: %s %s", rs[0].GPU, rs[0].EngineVersion)
	}
}

// Every prompt at once (rate inf, no --max-concurrency) is a closed loop
// of one stream per request.
func TestVLLMBenchBurst(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "vllm-bench-detailed.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(data), `"max_concurrency": 4`, `"max_concurrency": null`, 1)
	rs, err := Parse("burst.json", []byte(doc), Hints{})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Concurrency != 8 || rs[0].RequestRate != 0 {
		t.Errorf("burst: concurrency %d rate %v", rs[0].Concurrency, rs[0].RequestRate)
	}
}

func TestAIPerfAggregate(t *testing.T) {
	r := read(t, "profile_export_aiperf.json", Hints{Engine: "vllm==0.22.1"})[0]
	if r.Tool != ToolAIPerf || r.Model != "Qwen/Qwen3-1.7B" || r.GPU != "L40S" || r.Concurrency != 4 || r.Requests != 32 || r.Warmup != 4 || r.InputTokens != 128 || r.OutputTokens != 64 {
		t.Errorf("conditions: %+v", r)
	}
	// AIPerf's inter_token_latency is our TPOT, inter_chunk_latency our ITL.
	wantMetrics(t, r, map[string]float64{TTFTP50: 29, TTFTP95: 35, TPOTP50: 7.4, TPOTP95: 7.9, ITLP50: 7.3, LatP95: 520, OutTput: 505.6})
	if !strings.Contains(strings.Join(r.Notes, " "), "re-tokenisation") {
		t.Errorf("notes do not say AIPerf re-tokenises: %v", r.Notes)
	}
	_, err := Read(filepath.Join("testdata", "profile_export_aiperf.json"), Hints{})
	if err == nil || !strings.Contains(err.Error(), "-engine vllm==0.11.0") {
		t.Errorf("no engine: %v", err)
	}
}

func TestAIPerfRecords(t *testing.T) {
	r := read(t, "profile_export.jsonl", Hints{GPU: "H100", Engine: "vllm==0.22.1", Model: "Qwen/Qwen3-0.6B"})[0]
	// The failed record is left out; two requests were in flight at once.
	if r.Requests != 6 || r.Concurrency != 2 || r.InputTokens != 128 || r.OutputTokens != 64 {
		t.Errorf("load: %+v", r)
	}
	// TTFTs 20..25: linear-interpolation p50 22.5, p95 24.75.
	wantMetrics(t, r, map[string]float64{TTFTP50: 22.5, TTFTP95: 24.75, TPOTP50: 7.3, LatP50: 480})
	// 6 x 64 tokens over 1.48 s (first send to last end).
	wantMetrics(t, r, map[string]float64{OutTput: 384 / 1.48})
	if r.Model != "Qwen/Qwen3-0.6B" {
		t.Errorf("model %q", r.Model)
	}
}

// A record export has no model id: refused naming it.
func TestAIPerfRecordsNeedAModel(t *testing.T) {
	_, err := Read(filepath.Join("testdata", "profile_export.jsonl"), Hints{GPU: "H100", Engine: "vllm==0.22.1"})
	if err == nil || !strings.Contains(err.Error(), "-model ID") {
		t.Fatalf("a record export without a model: %v", err)
	}
}

func TestGuideLLM(t *testing.T) {
	rs := read(t, "guidellm-report.json", Hints{GPU: "H100", Engine: "vllm==0.10.0"})
	if len(rs) != 2 {
		t.Fatalf("%d results", len(rs))
	}
	c, p := rs[0], rs[1]
	if c.Concurrency != 8 || c.RequestRate != 0 || p.RequestRate != 4 || p.Arrival != "poisson" || c.ToolVersion != "0.3.0" || c.Model != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Errorf("loads: %+v / %+v", c, p)
	}
	// inter_token_latency_ms is our TPOT (not time_per_output_token_ms);
	// request_latency is seconds; throughput is tokens over duration.
	wantMetrics(t, c, map[string]float64{TTFTP50: 80, TPOTP50: 11.9, TPOTP95: 12.5, LatP50: 1600, OutTput: 512})
	wantMetrics(t, p, map[string]float64{TTFTP50: 60})
}

func TestScreenDocument(t *testing.T) {
	rs := read(t, "screen-two-model.json", Hints{})
	if len(rs) != 2 {
		t.Fatalf("%d results", len(rs))
	}
	r := rs[1]
	if r.GPU != "L40S" || r.Engine != "vllm" || r.EngineVersion != "0.22.1" || r.ToolVersion != "0.12.0" || !strings.Contains(r.Tool, "aiperf") {
		t.Errorf("conditions: %+v", r)
	}
	if r.InputTokens != 4096 || r.OutputTokens != 256 || r.Concurrency != 4 || r.Requests != 32 || r.Warmup != 4 || r.Runs != 2 || len(r.RunMetrics) != 2 {
		t.Errorf("workload: %+v", r)
	}
	if r.RunMetrics[1][TTFTP50] != 8 {
		t.Errorf("run 2's ttft p50 = %v", r.RunMetrics[1][TTFTP50])
	}
}

func TestKindAndUnknown(t *testing.T) {
	if k := Kind([]byte(`{"schema_version":"infercrane.screen-evidence/v1"}`)); k != "infercrane evidence" {
		t.Errorf("evidence kind %q", k)
	}
	_, err := Parse("x.json", []byte(`{"hello": 1}`), Hints{})
	if err == nil || !strings.Contains(err.Error(), "none of the result formats") {
		t.Errorf("unknown: %v", err)
	}
}

func TestGPUName(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA H100 80GB HBM3": "H100", "NVIDIA A100-SXM4-40GB": "A100-40GB", "NVIDIA A100-SXM4-80GB": "A100-80GB",
		"a100-40gb": "A100-40GB", "L40S": "L40S", "NVIDIA L4": "L4", "NVIDIA A10G": "A10", "Tesla T4": "T4", "H100!": "H100",
		"NVIDIA H200": "H200", "RTX 4090": "",
	} {
		if got := GPUName(in); got != want {
			t.Errorf("GPUName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseEngine(t *testing.T) {
	for in, want := range map[string][2]string{"vllm==0.11.0": {"vllm", "0.11.0"}, "vLLM 0.6.0": {"vllm", "0.6.0"}, "sglang@v0.5.1": {"sglang", "0.5.1"}} {
		e, v, err := ParseEngine(in)
		if err != nil || e != want[0] || v != want[1] {
			t.Errorf("ParseEngine(%q) = %q %q %v", in, e, v, err)
		}
	}
	if _, _, err := ParseEngine("vllm"); err == nil {
		t.Error("an engine without a version parsed")
	}
}

// FuzzParse: no document makes Parse panic, and an accepted one states
// every condition.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"vllm-bench-detailed.json", "vllm-bench-rate.json", "profile_export_aiperf.json", "profile_export.jsonl", "guidellm-report.json", "screen-two-model.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := Parse("fuzz.json", data, Hints{GPU: "H100", Engine: "vllm==0.11.0", Model: "m"})
		if err != nil {
			return
		}
		for _, r := range rs {
			if r.GPU == "" || r.EngineVersion == "" || r.InputTokens < 1 || r.OutputTokens < 1 || r.Requests < 1 || (r.Concurrency < 1 && r.RequestRate <= 0) || len(r.Metrics) == 0 {
				t.Fatalf("accepted without its conditions: %+v", r)
			}
			for k, v := range r.Metrics {
				if !(v > 0) || math.IsInf(v, 0) {
					t.Fatalf("%s = %v", k, v)
				}
			}
		}
	})
}
