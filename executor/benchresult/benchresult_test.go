package benchresult

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The vllm bench, AIPerf and GuideLLM fixtures in testdata are real tool output,
// kept by `FIDELITY_KEEP=DIR make fidelity` (scripts/fidelity/run.sh) from
// TestFidelityVLLM's runs against vLLM 0.32.0's CPU build serving a tiny
// Qwen3 (served as tiny-qwen3) at concurrency 1, 24 requests of 64 + 16
// tokens (72 prompt tokens with the chat template), untrimmed:
// vllm-bench-0.32.0-cpu.json (`vllm bench serve --save-result
// --save-detailed`; vllm-bench-0.32.0-cpu-rate8.json, the same server
// in an open loop of 8 requests a second, gamma gaps of shape 0.5),
// aiperf-0.13.0-cpu/ (AIPerf 0.13.0's profile_export_aiperf.json and
// profile_export.jsonl) and guidellm-0.8.1-cpu.json (GuideLLM 0.8.1's
// report, `guidellm run --profile kind=concurrent,streams=1 --data
// kind=synthetic_text,...`). No GPU ran them: the tests name one with -gpu
// as a user would. guidellm-0.3.1-sim-c4.json and
// guidellm-0.3.1-sim-poisson8.json are GuideLLM 0.3.1's reports (`guidellm
// benchmark run --rate-type concurrent --rate 4`, and `--rate-type
// poisson --rate 8`, 24 requests of 64 + 16 synthetic tokens each) against
// `infercrane sim serve --ttft 200ms --itl 10ms` (the sim counts about 201
// prompt tokens). screen-two-model.json follows the earlier screen
// document's layout with made-up figures: the screen was a one-off.
// tiny-qwen3/config.json is that model's config.json as
// scripts/integration/setup-vllm.sh builds it (calibrate -model-config).

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

const (
	realVLLMBench = "vllm-bench-0.32.0-cpu.json"
	// realVLLMBenchOpen is an open loop: --request-rate 8 --burstiness 0.5.
	realVLLMBenchOpen = "vllm-bench-0.32.0-cpu-rate8.json"
	realAIPerf        = "aiperf-0.13.0-cpu/profile_export_aiperf.json"
	realRecords       = "aiperf-0.13.0-cpu/profile_export.jsonl"
	realGuideLLM      = "guidellm-0.8.1-cpu.json"

	realGuideLLM03        = "guidellm-0.3.1-sim-c4.json"
	realGuideLLM03Poisson = "guidellm-0.3.1-sim-poisson8.json"
)

var cpuHints = Hints{GPU: "L40S", Engine: "vllm==0.32.0"}

func TestVLLMBenchDetailed(t *testing.T) {
	rs := read(t, realVLLMBench, cpuHints)
	if len(rs) != 1 {
		t.Fatalf("%d results", len(rs))
	}
	r := rs[0]
	if r.Tool != ToolVLLMBench || r.Model != "tiny-qwen3" || r.GPU != "L40S" || r.Engine != "vllm" || r.EngineVersion != "0.32.0" || r.ToolVersion != "" {
		t.Errorf("conditions: %+v", r)
	}
	// --max-concurrency 1 --request-rate inf; the prompt lengths are the
	// server's (72: 64 random tokens and the chat template).
	if r.Concurrency != 1 || r.RequestRate != 0 || r.Requests != 24 || r.InputTokens != 72 || r.OutputTokens != 16 {
		t.Errorf("load: concurrency %d rate %v requests %d lengths %d/%d", r.Concurrency, r.RequestRate, r.Requests, r.InputTokens, r.OutputTokens)
	}
	// --save-detailed's per-request arrays: ttfts in seconds.
	if len(r.Sizes) != 24 || r.Sizes[0] != (Size{72, 16}) || len(r.TTFTsMs) != 24 || !near(r.TTFTsMs[0], 30.491055998936645) {
		t.Errorf("per-request arrays: %d sizes (%v), %d ttfts (%v)", len(r.Sizes), r.Sizes[:min(1, len(r.Sizes))], len(r.TTFTsMs), r.TTFTsMs[:min(1, len(r.TTFTsMs))])
	}
	wantMetrics(t, r, map[string]float64{TTFTP50: 29.72694500022044, TTFTP95: 37.60129135025635, TPOTP50: 17.361587966661318,
		TTFTMean: 29.620119583417665, LatP50: 293.6545264992674, ITLP50: 16.832281999995757, OutTput: 53.508833127744495})
	if _, ok := r.Metrics["itl_p95_ms"]; ok {
		t.Error("itl_p95 is not a figure the model is compared on")
	}
	if !strings.HasPrefix(r.Digest, "sha256:") || r.File != realVLLMBench {
		t.Errorf("provenance %q %q", r.File, r.Digest)
	}
}

// A vllm bench result records neither the GPU nor vLLM's version unless
// --metadata says them: it is refused naming both and the flags.
func TestVLLMBenchWithoutConditionsIsRefused(t *testing.T) {
	for _, name := range []string{realVLLMBench, realVLLMBenchOpen} {
		_, err := Read(filepath.Join("testdata", name), Hints{})
		if err == nil {
			t.Fatalf("%s: accepted a result whose GPU and engine are unknown", name)
		}
		for _, want := range []string{name, "the GPU", "--metadata gpu=", "-gpu NAME", "-engine ENGINE==VERSION", "-engine vllm==0.11.0"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	}
	rs, err := Read(filepath.Join("testdata", realVLLMBenchOpen), Hints{GPU: "A100-80GB", Engine: "vllm==0.10.2"})
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if r.GPU != "A100-80GB" || r.EngineVersion != "0.10.2" || r.RequestRate != 8 || r.Arrival != "gamma" || r.Burstiness != 0.5 || r.Concurrency != 0 || r.Requests != 24 {
		t.Errorf("hinted open loop: %+v", r)
	}
	wantMetrics(t, r, map[string]float64{TTFTP50: 64.89184199926967, TPOTP50: 33.46845563343474, OutTput: 117.14392519833174})
	// --metadata gpu=... vllm=... (top-level strings) wins over a hint.
	rs, err = Parse("meta.json", withMembers(t, realVLLMBench, `"gpu": "NVIDIA H100 80GB HBM3", "vllm": "0.11.0"`), Hints{GPU: "L4", Engine: "vllm==0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].GPU != "H100" || rs[0].EngineVersion != "0.11.0" {
		t.Errorf("a hint overrode the document: %s %s", rs[0].GPU, rs[0].EngineVersion)
	}
}

// withMembers is a fixture with members added at the start of its object.
func withMembers(t *testing.T, name, members string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.Replace(string(data), "{", "{"+members+", ", 1))
}

// Every prompt at once (rate inf, no --max-concurrency) is a closed loop
// of one stream per request.
func TestVLLMBenchBurst(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", realVLLMBench))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(data), `"max_concurrency": 1,`, `"max_concurrency": null,`, 1)
	if doc == string(data) {
		t.Fatal("the fixture has no max_concurrency to clear")
	}
	rs, err := Parse("burst.json", []byte(doc), cpuHints)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Concurrency != 24 || rs[0].RequestRate != 0 {
		t.Errorf("burst: concurrency %d rate %v", rs[0].Concurrency, rs[0].RequestRate)
	}
}

// AIPerf 0.13's aggregate export: the model is in input_config.models and
// the load in input_config.phases (before, both were read only from 0.12's
// endpoint.model_names and loadgen, so a real 0.13 export was refused for
// want of a model and a load). The lengths are the server's (usage): AIPerf
// re-tokenised the output to 17.08 tokens a request where vLLM generated
// 16, so its inter_token_latency (divided by its own count) is left out and
// the output throughput is scaled to the server's count.
func TestAIPerfAggregate(t *testing.T) {
	r := read(t, realAIPerf, cpuHints)[0]
	if r.Tool != ToolAIPerf || r.ToolVersion != "0.13.0" || r.Model != "tiny-qwen3" || r.Concurrency != 1 || r.Requests != 24 || r.Warmup != 1 || r.InputTokens != 72 || r.OutputTokens != 16 {
		t.Errorf("conditions: %+v", r)
	}
	// AIPerf's inter_chunk_latency is our ITL.
	wantMetrics(t, r, map[string]float64{TTFTP50: 32.591848999999996, TTFTP95: 44.486380649999994, ITLP50: 17.534301, LatP50: 304.85225249999996,
		OutTput: 54.76713943021696 * 16 / 17.083333333333332})
	for _, m := range []string{TPOTMean, TPOTP50, TPOTP95, TPOTP99} {
		if v, ok := r.Metrics[m]; ok {
			t.Errorf("%s = %v from AIPerf's re-tokenised count", m, v)
		}
	}
	if notes := strings.Join(r.Notes, " "); !strings.Contains(notes, "re-tokenised the output to 17.08 tokens a request where the server counted 16.00") {
		t.Errorf("notes do not say AIPerf re-tokenised: %v", r.Notes)
	}
	_, err := Read(filepath.Join("testdata", realAIPerf), Hints{GPU: "L40S"})
	if err == nil || !strings.Contains(err.Error(), "-engine vllm==0.11.0") {
		t.Errorf("no engine: %v", err)
	}
}

// AIPerf's record export, recomputed with the server's counts: the warmup
// record is left out, and TPOT is (latency - ttft) / (usage completion
// tokens - 1), not AIPerf's inter_token_latency, which divides by its own
// re-tokenised count (20 tokens where vLLM generated 16 in 9 of the 24
// records): p50 18.06 ms where AIPerf's own figures give 17.25.
func TestAIPerfRecords(t *testing.T) {
	r := read(t, realRecords, Hints{GPU: "L40S", Engine: "vllm==0.32.0", Model: "tiny-qwen3"})[0]
	if r.Requests != 24 || r.Concurrency != 1 || r.InputTokens != 72 || r.OutputTokens != 16 {
		t.Errorf("load: %+v", r)
	}
	wantMetrics(t, r, map[string]float64{TTFTP50: 32.591848999999996, TTFTP95: 44.48638065, TPOTP50: 18.06377083333333, TPOTMean: 18.190888555555556, LatP50: 304.85225249999996})
	if got := r.Metrics[OutTput]; math.Abs(got/51.34934058808228-1) > 1e-9 {
		t.Errorf("output throughput %v, want 384 server-counted tokens over the records' window, 51.349", got)
	}
	if notes := strings.Join(r.Notes, " "); !strings.Contains(notes, "differs from the server's in 9 of 24 records") {
		t.Errorf("notes: %v", r.Notes)
	}
}

// A record export has no model id: refused naming it.
func TestAIPerfRecordsNeedAModel(t *testing.T) {
	_, err := Read(filepath.Join("testdata", realRecords), Hints{GPU: "H100", Engine: "vllm==0.22.1"})
	if err == nil || !strings.Contains(err.Error(), "-model ID") {
		t.Fatalf("a record export without a model: %v", err)
	}
}

// GuideLLM 0.3.1's real reports, run against InferCrane's simulated
// engine (200 ms TTFT, 10 ms a token): 0.3 keeps the strategy under
// args.strategy and the model as worker.backend_model, records no
// version of its own (the hints' is used), and lists every request, from
// which TTFT, TPOT and latency are summarised (the expected figures are
// the records' own, summarised as Percentile does; the TPOT is the sim's
// 10 ms). The importer written against a made-up 0.3 layout refused
// these ("the load (neither a concurrency nor a request rate)").
func TestGuideLLM03RealReports(t *testing.T) {
	h := Hints{GPU: "CPU", Engine: "vllm==0.32.0", ToolVersion: "0.3.1"}
	c := read(t, realGuideLLM03, h)
	p := read(t, realGuideLLM03Poisson, h)
	if len(c) != 1 || len(p) != 1 {
		t.Fatalf("%d and %d results, want one each", len(c), len(p))
	}
	for _, r := range []Result{c[0], p[0]} {
		if r.Tool != ToolGuideLLM || r.ToolVersion != "0.3.1" || r.Model != "sim" || r.Requests != 24 || r.OutputTokens != 16 || len(r.TTFTsMs) != 24 {
			t.Errorf("conditions: %+v", r)
		}
		if tpot := r.Metrics[TPOTP50]; math.Abs(tpot-10) > 0.3 {
			t.Errorf("%s: TPOT p50 %v ms, want the sim's 10", r.Label, tpot)
		}
	}
	if r := c[0]; r.Label != "benchmark 1 (concurrent)" || r.Concurrency != 4 || r.RequestRate != 0 || r.InputTokens != 201 {
		t.Errorf("concurrent: %+v", r)
	}
	wantMetrics(t, c[0], map[string]float64{TTFTMean: 216.9588009516398, TTFTP50: 207.13865756988525, TTFTP95: 270.9665060043335,
		TPOTMean: 10.008202658759222, TPOTP50: 9.997773170471191, LatP50: 357.33532905578613, OutTput: 384 / 2.2342610359191895})
	// GuideLLM's open loop starts with floor(rate) requests at once
	// (initial_burst), which the result's notes say.
	r := p[0]
	if r.Label != "benchmark 1 (poisson)" || r.RequestRate != 8 || r.Arrival != "poisson" || r.Concurrency != 0 {
		t.Errorf("poisson: %+v", r)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool {
		return strings.Contains(n, "initial burst") && strings.Contains(n, "first 8 requests at once")
	}) {
		t.Errorf("the initial burst is not noted: %q", r.Notes)
	}
	wantMetrics(t, r, map[string]float64{TTFTP50: 223.62637519836426, TPOTMean: 9.99906791581048, LatP50: 373.5393285751343, OutTput: 384 / 1.6263558864593506})
	if _, err := Read(filepath.Join("testdata", realGuideLLM03), Hints{GPU: "CPU", Engine: "vllm==0.32.0"}); err != nil {
		t.Errorf("without -tool-version: %v", err)
	}
}

// GuideLLM 0.8's real report: its metrics hold counts and nulls beside
// the distributions, the model is the backend's, and TTFT, TPOT and
// latency come from its per-request records (the expected figures are the
// records' own, summarised as Percentile does).
func TestGuideLLMRealReport(t *testing.T) {
	rs := read(t, realGuideLLM, cpuHints)
	if len(rs) != 1 {
		t.Fatalf("%d results", len(rs))
	}
	r := rs[0]
	if r.Tool != ToolGuideLLM || r.ToolVersion != "0.8.1" || r.Model != "tiny-qwen3" || r.Label != "benchmark 1 (concurrent)" {
		t.Errorf("conditions: %+v", r)
	}
	// The prompt length is the server's count (64 synthetic tokens and
	// the chat template), as for vllm bench and AIPerf.
	if r.Concurrency != 1 || r.RequestRate != 0 || r.Requests != 24 || r.InputTokens != 72 || r.OutputTokens != 16 {
		t.Errorf("load: concurrency %d rate %v requests %d lengths %d/%d", r.Concurrency, r.RequestRate, r.Requests, r.InputTokens, r.OutputTokens)
	}
	if len(r.TTFTsMs) != 24 {
		t.Errorf("%d per-request TTFTs, want 24", len(r.TTFTsMs))
	}
	wantMetrics(t, r, map[string]float64{TTFTMean: 21.557241678237915, TTFTP50: 21.777629852294922, TTFTP95: 26.61900520324707,
		TPOTMean: 10.923242568969727, TPOTP50: 10.304474830627441, LatP50: 176.82111263275146, OutTput: 83.73506032973448})
}

// TPOT weighs every request once: a request of two tokens whose one gap
// took 100 ms moves the mean by its share of the requests, where GuideLLM
// 0.8's own inter_token_latency_ms summary weighs its one gap among 360.
// Without the records the summary is used, and the result says it is
// token-weighted.
func TestGuideLLMTPOTPerRequest(t *testing.T) {
	doc := fixtureDoc(t, realGuideLLM)
	bench := doc["benchmarks"].([]any)[0].(map[string]any)
	reqs := bench["requests"].(map[string]any)
	first := reqs["successful"].([]any)[0].(map[string]any)
	old := first["inter_token_latency_ms"].(float64)
	first["inter_token_latency_ms"], first["output_tokens"] = 100.0, 2.0
	edited, _ := json.Marshal(doc)
	rs, err := Parse("edited.json", edited, cpuHints)
	if err != nil {
		t.Fatal(err)
	}
	if want := 10.923242568969727 + (100-old)/24; !near(rs[0].Metrics[TPOTMean], want) {
		t.Errorf("tpot mean %v, want %v (per request)", rs[0].Metrics[TPOTMean], want)
	}
	reqs["successful"] = []any{}
	edited, _ = json.Marshal(doc)
	rs, err = Parse("summary.json", edited, cpuHints)
	if err != nil {
		t.Fatal(err)
	}
	if got := rs[0].Metrics[TPOTMean]; !near(got, 10.923242568969727) || !strings.Contains(strings.Join(rs[0].Notes, " "), "token-weighted") {
		t.Errorf("without records: tpot mean %v, notes %q", got, rs[0].Notes)
	}
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
	for _, name := range []string{realVLLMBench, realVLLMBenchOpen, realAIPerf, realRecords, realGuideLLM03, realGuideLLM03Poisson, realGuideLLM, "screen-two-model.json"} {
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

// TestFailedRequestsAreCounted: requests a tool sent but did not complete
// (vllm bench's failed, GuideLLM's errored and incomplete request totals,
// at the benchmark in 0.3 and under metrics in 0.8, and what 0.8's
// scheduler created but did not see succeed) are counted apart
// (Result.Failed) and named in a note, the figures staying the completed
// requests'. A clean-clone make fidelity once read a GuideLLM 0.8.1
// report of 23 requests where 24 were asked for, and nothing said why.
func TestFailedRequestsAreCounted(t *testing.T) {
	edit := func(name string, change func(doc map[string]any)) []Result {
		t.Helper()
		doc := fixtureDoc(t, name)
		change(doc)
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := Parse(name, data, cpuHints)
		if err != nil || len(rs) != 1 {
			t.Fatalf("%s: %d results, %v", name, len(rs), err)
		}
		return rs
	}
	benchmark := func(doc map[string]any) map[string]any {
		return doc["benchmarks"].([]any)[0].(map[string]any)
	}
	for _, c := range []struct {
		name   string
		change func(doc map[string]any)
		failed int
		note   string
	}{
		{realVLLMBench, func(doc map[string]any) { doc["failed"] = 2 }, 2, "vllm bench counted 2 failed requests beside the 24 completed ones"},
		{realGuideLLM, func(doc map[string]any) {
			benchmark(doc)["metrics"].(map[string]any)["request_totals"] = map[string]any{"successful": 23, "errored": 0, "incomplete": 1, "total": 24}
		}, 1, "GuideLLM counted 0 errored and 1 incomplete requests beside the 23 completed ones"},
		{realGuideLLM, func(doc map[string]any) {
			sc := benchmark(doc)["scheduler_state"].(map[string]any)
			sc["created_requests"], sc["successful_requests"], sc["cancelled_requests"] = 24, 23, 1
		}, 1, "GuideLLM counted 1 not successful of the 24 requests its scheduler created (0 errored, 1 cancelled) beside the 23 completed ones"},
		{realGuideLLM03, func(doc map[string]any) {
			benchmark(doc)["request_totals"] = map[string]any{"successful": 24, "errored": 2, "incomplete": 1, "total": 27}
		}, 3, "GuideLLM counted 2 errored and 1 incomplete requests beside the 24 completed ones"},
		{realGuideLLM, func(map[string]any) {}, 0, ""},
		{realVLLMBench, func(map[string]any) {}, 0, ""},
	} {
		r := edit(c.name, c.change)[0]
		notes := strings.Join(r.Notes, "\n")
		if r.Failed != c.failed || c.note != "" && !strings.Contains(notes, c.note) || c.note == "" && strings.Contains(notes, "completed requests'") {
			t.Errorf("%s: %d failed, notes:\n%s\nwant %d failed and a note %q", c.name, r.Failed, notes, c.failed, c.note)
		}
	}
}

// fixtureDoc is the JSON fixture testdata/name as a generic document, for
// a test to edit.
func fixtureDoc(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}
