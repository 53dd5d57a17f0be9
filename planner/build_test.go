package planner

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang"
	"github.com/zclconf/go-cty/cty"
)

// build plans cfg from scratch and fails the test on diagnostics.
func build(t testing.TB, cfg *lang.Config) *Plan {
	t.Helper()
	p, diags := Build(cfg, nil, Options{Version: "test"})
	if diags.HasErrors() {
		t.Fatalf("Build: %v", diags)
	}
	return p
}

// findings returns the findings of p whose summary matches re.
func findingsMatching(p *Plan, re string) []Finding {
	var out []Finding
	rx := regexp.MustCompile(re)
	for _, f := range p.Preflight {
		if rx.MatchString(f.Summary) {
			out = append(out, f)
		}
	}
	return out
}

func TestBuildFixture(t *testing.T) {
	p := build(t, fixture())
	if len(p.Lanes) != 4 {
		t.Fatalf("lanes = %d, want 4", len(p.Lanes))
	}
	wantKeys := []string{
		"qwen_l40s/qwen06/decode_heavy/l40s", "qwen_l40s/qwen06/interactive/l40s",
		"qwen_l40s/qwen17/decode_heavy/l40s", "qwen_l40s/qwen17/interactive/l40s",
	}
	deps := map[string]int{}
	for i, l := range p.Lanes {
		if l.Key != wantKeys[i] {
			t.Errorf("lane %d key = %q, want %q", i, l.Key, wantKeys[i])
		}
		if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(l.ID) || l.ID != LaneID(l.Inputs) {
			t.Errorf("lane %s: ID %q is not the 12-hex hash of its inputs", l.Key, l.ID)
		}
		if l.Action != ActionRun || l.Reason != "new lane" || l.RunsToDo() != 2 {
			t.Errorf("lane %s: action %s (%s), %d runs to do", l.Key, l.Action, l.Reason, l.RunsToDo())
		}
		if !l.Estimate.Available || l.Estimate.TTFTMs <= 0 || l.Estimate.CostUSD <= 0 || l.Estimate.StartupSeconds <= 0 {
			t.Errorf("lane %s: estimate %+v", l.Key, l.Estimate)
		}
		deps[l.Deployment]++
	}
	// One server per model: the two shapes of a model share it.
	if len(deps) != 2 {
		t.Errorf("deployments = %v, want 2 with 2 lanes each", deps)
	}
	if p.Totals.LanesToRun != 4 || p.Totals.Runs != 8 || p.Totals.Requests != 256 {
		t.Errorf("totals = %+v", p.Totals)
	}
	if len(p.Screens) != 1 || p.Screens[0].Totals != p.Totals {
		t.Errorf("screen totals %+v differ from plan totals %+v", p.Screens[0].Totals, p.Totals)
	}
	line := SummaryLine(p)
	if !regexp.MustCompile(`^Plan: 4 lanes to run \(8 runs, 256 requests\), 0 unchanged\. Estimated \d+\.\d\d GPU-hours, \$\d+\.\d\d\.$`).MatchString(line) {
		t.Errorf("summary line %q", line)
	}
	if p.HasErrors() {
		t.Errorf("unexpected errors: %+v", p.Preflight)
	}
	if got := findingsMatching(p, "not decision grade"); len(got) != 1 || got[0].Severity != SeverityWarning || got[0].Screen != "qwen_l40s" {
		t.Errorf("runs < 5 warning: %+v", got)
	}
	if len(p.Assumptions) != 1 || p.Assumptions[0].GPUType != "L40S" || p.Assumptions[0].PrefillMFU != 0.32 {
		t.Errorf("assumptions = %+v", p.Assumptions)
	}
}

func TestNoSecretsInPlan(t *testing.T) {
	p := build(t, fixture())
	b, err := Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := WriteText(&text, p); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{string(b), text.String(), DOT(p), Mermaid(p)} {
		for _, secret := range []string{"sk-secret-value", "tok-should-not-leak"} {
			if strings.Contains(out, secret) {
				t.Fatalf("output contains the secret %q", secret)
			}
		}
	}
	if p.Variables["api_key"] != Redacted || p.Lanes[0].Inputs.ExecutorConfig["api_token"] != Redacted {
		t.Errorf("secrets not redacted: %v %v", p.Variables, p.Lanes[0].Inputs.ExecutorConfig)
	}
	if p.Lanes[0].Inputs.ExecutorConfig["timeout"] != "30m" {
		t.Errorf("ordinary executor attributes must stay: %v", p.Lanes[0].Inputs.ExecutorConfig)
	}
}

func TestContextOverflowIsAnError(t *testing.T) {
	cfg := fixture()
	cfg.Shapes["decode_heavy"].OutputTokens = 7100 // 1129 + 7100 > 8192 (the headroom of 512 is not counted: modal calibrates)
	p := build(t, cfg)
	got := findingsMatching(p, "^context overflow")
	if len(got) != 2 {
		t.Fatalf("want one overflow per decode_heavy lane, got %+v", got)
	}
	f := got[0]
	if f.Severity != SeverityError || f.Lane == "" || p.Lane(f.Lane) == nil {
		t.Errorf("finding %+v must be an error naming a lane", f)
	}
	if f.Summary != "context overflow: input 1129 + output 7100 = 8229 > 8192" {
		t.Errorf("summary %q", f.Summary)
	}
	if !strings.Contains(f.Detail, "lower output_tokens") || !strings.Contains(f.Detail, "at most 7063") || !strings.Contains(f.Detail, "decode_heavy") || !strings.Contains(f.Detail, "chat template included") {
		t.Errorf("detail %q does not give the fix", f.Detail)
	}
	if !p.HasErrors() {
		t.Error("HasErrors = false with a context overflow")
	}
}

// TestTemplateHeadroomOnlyWhenUncalibrated: input_tokens counts the prompt
// as the calibrated load generator sends it (chat template included), so a
// lane on a server with /tokenize fits when input + output <= window; the
// template_headroom is reserved only where prompts may be approximated (an
// endpoint, a custom local command).
func TestTemplateHeadroomOnlyWhenUncalibrated(t *testing.T) {
	cfg := fixture()
	s := cfg.Shapes["interactive"]
	// The shape profile validate suggests for an 8192 window: 7893 + 299 = 8192.
	s.TemplateHeadroom, s.InputTokens, s.OutputTokens = 512, 7893, 299
	for _, typ := range []string{"modal", "sim", "local"} {
		cfg.Executors["modal"].Type, cfg.Executors["modal"].Capabilities = typ, lang.BuiltinExecutors[typ]
		if p := build(t, cfg); p.HasErrors() {
			t.Errorf("%s: a calibrated lane that fits exactly is an error: %+v", typ, p.Preflight)
		}
	}
	cfg.Executors["modal"].Type, cfg.Executors["modal"].Capabilities = "local", lang.BuiltinExecutors["local"]
	cfg.Executors["modal"].Attrs = map[string]cty.Value{"command": cty.ListVal([]cty.Value{cty.StringVal("my-server")})}
	if p := build(t, cfg); len(findingsMatching(p, "^context overflow: input 7893 \\+ template headroom 512 \\+ output 299 = 8704 > 8192$")) != 2 {
		t.Errorf("a custom local command may not calibrate: the headroom counts: %+v", p.Preflight)
	}
	cfg.Executors["modal"].Type, cfg.Executors["modal"].Attrs = "endpoint", map[string]cty.Value{"base_url": cty.StringVal("http://x")}
	cfg.Executors["modal"].Capabilities = lang.BuiltinExecutors["endpoint"]
	p := build(t, cfg)
	got := findingsMatching(p, "^context overflow: input 7893 \\+ template headroom 512 \\+ output 299 = 8704 > 8192$")
	if len(got) != 2 || !strings.Contains(got[0].Detail, "may have no /tokenize") {
		t.Fatalf("an endpoint's headroom counts: %+v", p.Preflight)
	}
	s.TemplateHeadroom = 0 // an endpoint lane without headroom: a warning, not an error
	p = build(t, cfg)
	if p.HasErrors() || len(findingsMatching(p, "^no template headroom for a chat workload that may not be calibrated")) != 2 {
		t.Errorf("want a warning for uncalibrated chat lanes without headroom: %+v", p.Preflight)
	}
	s.API = "completions" // no chat template: nothing to warn about
	if p := build(t, cfg); len(findingsMatching(p, "^no template headroom")) != 0 || p.HasErrors() {
		t.Errorf("completions lane: %+v", p.Preflight)
	}
}

func TestMaxModelLenBoundsContext(t *testing.T) {
	cfg := fixture()
	cfg.Runtimes["vllm"].RuntimeArgs = []string{"--max-model-len=4096"}
	cfg.Shapes["decode_heavy"].OutputTokens = 3000 // 1129 + 3000 = 4129: fits 8192, not 4096
	p := build(t, cfg)
	got := findingsMatching(p, `context overflow: .* = 4129 > 4096$`)
	if len(got) != 2 || !strings.Contains(got[0].Detail, "--max-model-len") {
		t.Errorf("--max-model-len 4096 must bound the context: %+v", p.Preflight)
	}
}

func TestMemoryChecks(t *testing.T) {
	cfg := fixture()
	cfg.Models["qwen17"].ID = "Qwen/Qwen3-8B" // 16.4 GB of bf16 weights
	cfg.GPUs["l40s"].Type = "T4"              // 16 GB
	p := build(t, cfg)
	if got := findingsMatching(p, "^weights do not fit"); len(got) != 2 || got[0].Severity != SeverityError ||
		!strings.Contains(got[0].Detail, "larger GPU type or more GPUs") {
		t.Errorf("weights check: %+v", got)
	}
	cfg = fixture()
	cfg.Shapes["decode_heavy"].Concurrency = 600 // 600 x 3177 tokens x 112 KiB = 219 GB of KV cache
	cfg.Shapes["decode_heavy"].Requests = 600
	p = build(t, cfg)
	// More concurrent requests than the KV cache holds is what vLLM
	// queues (vllm bench serve's default burst): a warning, and the lane
	// is estimated with the queueing (it was an error, and the lane had no
	// estimate).
	got := findingsMatching(p, `^KV cache holds \d+ of 600 concurrent requests: 600 x`)
	if len(got) != 2 || got[0].Severity != SeverityWarning || !regexp.MustCompile(`concurrency in shape "decode_heavy" to at most \d+`).MatchString(got[0].Detail) || p.HasErrors() {
		t.Errorf("KV check: %+v", got)
	}
	for _, l := range p.Lanes {
		if l.Shape != "decode_heavy" {
			continue
		}
		e := l.Estimate
		if !e.Available || e.OutputTokenThroughput <= 0 || !(e.TTFTP95Ms > 10*e.TTFTMs || e.Preemptions > 0) {
			t.Errorf("lane %s: the estimate of a burst beyond the KV cache shows no queueing: %+v", l.Key, e)
		}
	}
	cfg.GPUs["l40s"].Count = 8 // eight times the memory fits it
	if p = build(t, cfg); len(findingsMatching(p, "KV cache")) != 0 {
		t.Errorf("KV check with 8 GPUs: %+v", p.Preflight)
	}
}

func TestPinningWarnings(t *testing.T) {
	cfg := fixture()
	cfg.Models["qwen06"].Revision = ""
	cfg.Runtimes["vllm"].RuntimeVersion = ""
	cfg.Shapes["interactive"].Requests = 4 // < concurrency 8
	cfg.Screens["qwen_l40s"].Runs = 5
	p := build(t, cfg)
	for _, re := range []string{`^model "qwen06" has no pinned revision$`, `^runtime "vllm" has no pinned version$`, `^requests 4 < concurrency 8`} {
		if got := findingsMatching(p, re); len(got) == 0 || got[0].Severity != SeverityWarning {
			t.Errorf("no warning %s in %+v", re, p.Preflight)
		}
	}
	if len(findingsMatching(p, "decision grade")) != 0 {
		t.Error("5 runs are decision grade")
	}
	if p.HasErrors() {
		t.Errorf("warnings only, got errors: %+v", p.Preflight)
	}
}

// TestColdMoEKernelNote: a mixture of experts on a real vLLM server with
// fewer warmup requests than its concurrency gets a note that the fresh
// server compiles its fused MoE kernels during the measured prefills; a
// warmup burst at the concurrency, a dense model or the simulated engine
// get none.
func TestColdMoEKernelNote(t *testing.T) {
	const re = `^a fresh vLLM server compiles its fused MoE kernels during the first prefills of shape "interactive"$`
	cfg := fixture()
	cfg.Models["qwen06"].ID = "Qwen/Qwen1.5-MoE-A2.7B"
	p := build(t, cfg)
	got := findingsMatching(p, re)
	if len(got) != 1 || got[0].Severity != SeverityNote || !strings.Contains(got[0].Detail, `Set warmup = 8 (the concurrency) in shape "interactive"`) {
		t.Fatalf("want one note for the shape of a cold MoE server: %+v", p.Preflight)
	}
	for _, l := range p.Lanes {
		if named := strings.Contains(got[0].Detail, l.Key); named != (l.Model == "qwen06" && l.Shape == "interactive") {
			t.Errorf("lane %s (model %s, shape %s) named %v in %q", l.Key, l.Model, l.Shape, named, got[0].Detail)
		}
	}
	cfg.Shapes["interactive"].Warmup = 8
	if p = build(t, cfg); len(findingsMatching(p, re)) != 0 {
		t.Errorf("warmup 8 at concurrency 8 still noted: %+v", p.Preflight)
	}
	cfg.Shapes["interactive"].Warmup = 1
	cfg.Executors["replay"] = &lang.Executor{Name: "replay", Type: "replay", Capabilities: lang.Capabilities{Simulated: true}}
	cfg.Screens["qwen_l40s"].Executor = "replay"
	if p = build(t, cfg); len(findingsMatching(p, "fused MoE")) != 0 {
		t.Errorf("the simulated engine noted: %+v", p.Preflight)
	}
	cfg = fixture()
	if p = build(t, cfg); len(findingsMatching(p, "fused MoE")) != 0 {
		t.Errorf("dense models noted: %+v", p.Preflight)
	}
}

// TestUnmodelledRuntimeArgsNote: a runtime whose args change vLLM's
// performance in ways the model leaves out (--enable-expert-parallel)
// gets one note naming them and its lanes (and, for expert parallelism,
// what it was measured to change), and the args the model covers
// (--async-scheduling) are not named; a runtime without such args, or
// the simulated engine, gets none. On vLLM 0.11 the plan's runtime line
// says that async scheduling runs the per-sequence work beside the GPU's.
func TestUnmodelledRuntimeArgsNote(t *testing.T) {
	const re = `^runtime "vllm" sets --enable-expert-parallel, which the estimates leave out$`
	cfg := fixture()
	rt := cfg.Runtimes["vllm"]
	rt.RuntimeVersion = "0.11.0"
	rt.RuntimeArgs = append(rt.RuntimeArgs, "--async-scheduling", "--enable-expert-parallel")
	p := build(t, cfg)
	got := findingsMatching(p, re)
	if len(got) != 1 || got[0].Severity != SeverityNote || !strings.Contains(got[0].Detail, "3-7% fewer output tokens/s") {
		t.Fatalf("want one note naming the flag and what it was measured to change: %+v", p.Preflight)
	}
	for _, l := range p.Lanes {
		if !strings.Contains(got[0].Detail, l.Key) {
			t.Errorf("lane %s not named in %q", l.Key, got[0].Detail)
		}
	}
	var text strings.Builder
	if err := WriteText(&text, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "plus 65 µs per sequence in the step (async scheduling: 40% of it beside the GPU's work)") {
		t.Errorf("the runtime line does not say the per-sequence work runs beside the GPU's:\n%s", text.String())
	}
	rt.RuntimeVersion = "0.22.1"
	if p = build(t, cfg); len(findingsMatching(p, re)) != 1 {
		t.Errorf("vLLM 0.22.1: %+v", p.Preflight)
	}
	cfg.Executors["replay"] = &lang.Executor{Name: "replay", Type: "replay", Capabilities: lang.Capabilities{Simulated: true}}
	cfg.Screens["qwen_l40s"].Executor = "replay"
	if p = build(t, cfg); len(findingsMatching(p, "leave out")) != 0 {
		t.Errorf("the simulated engine noted: %+v", p.Preflight)
	}
	if p = build(t, fixture()); len(findingsMatching(p, "leave out")) != 0 {
		t.Errorf("a runtime without such args noted: %+v", p.Preflight)
	}
}

// TestWeakRegimeWarning: an uncalibrated lane on a real engine whose
// deployment lies in a weak regime of the model (a mixture of experts on
// an A100) gets a warning naming the regime and the misses published
// there, and a note of its own; a dense model there (but the one under 1B
// parameters, a regime of its own), the same lane calibrated, or on the
// simulated engine, gets none.
func TestWeakRegimeWarning(t *testing.T) {
	const re = `^2 lanes estimated in a weak regime of the model: mixtures of experts on A100s$`
	cfg := fixture()
	cfg.Models["qwen06"].ID = "Qwen/Qwen1.5-MoE-A2.7B"
	cfg.GPUs["l40s"].Type = "A100-80GB"
	p := build(t, cfg)
	got := findingsMatching(p, re)
	if len(got) != 1 || got[0].Severity != SeverityWarning || !strings.Contains(got[0].Detail, "output tokens/s -38% to +51%") {
		t.Fatalf("want one warning for the MoE lanes on A100s: %+v", p.Preflight)
	}
	for _, l := range p.Lanes {
		noted := strings.Contains(strings.Join(l.Notes, "\n"), "weak regime of the model (mixtures of experts on A100s)")
		if noted != (l.Model == "qwen06") || strings.Contains(got[0].Detail, l.Key) != (l.Model == "qwen06") {
			t.Errorf("lane %s (model %s): noted %v, in the warning %v", l.Key, l.Model, noted, strings.Contains(got[0].Detail, l.Key))
		}
	}
	path, digest := writeCalFor(t, "A100-80GB", cfg.Runtimes["vllm"].RuntimeVersion)
	cfg.GPUs["l40s"].Calibration = &lang.CalibrationRef{File: path, Digest: digest}
	if p = build(t, cfg); len(findingsMatching(p, "weak regime")) != 0 || p.Lanes[0].Calibration == nil {
		t.Errorf("calibrated lanes warned (or were not calibrated): %+v", p.Preflight)
	}
	cfg.GPUs["l40s"].Calibration = nil
	cfg.Executors["replay"] = &lang.Executor{Name: "replay", Type: "replay", Capabilities: lang.Capabilities{Simulated: true}}
	cfg.Screens["qwen_l40s"].Executor = "replay"
	if p = build(t, cfg); len(findingsMatching(p, "weak regime")) != 0 {
		t.Errorf("the simulated engine warned: %+v", p.Preflight)
	}
	cfg = fixture()
	cfg.GPUs["l40s"].Type = "A100-80GB"
	p = build(t, cfg)
	if got := findingsMatching(p, "weak regime"); len(got) != 1 || !strings.HasSuffix(got[0].Summary, ": models under 1B parameters") ||
		!strings.Contains(got[0].Detail, "/qwen06/") || strings.Contains(got[0].Detail, "/qwen17/") {
		t.Errorf("dense models on A100s: want Qwen3-0.6B's lanes alone warned, as a model under 1B parameters: %+v", p.Preflight)
	}
}

func TestUnknownModelNeedsArchitecture(t *testing.T) {
	cfg := fixture()
	m := cfg.Models["qwen06"]
	m.ID = "example/Custom-3B"
	p := build(t, cfg)
	if got := findingsMatching(p, `^estimates unavailable for model "qwen06"`); len(got) != 1 || !strings.Contains(got[0].Detail, "params") {
		t.Fatalf("want one warning naming the attributes to set: %+v", p.Preflight)
	}
	for _, l := range p.Lanes {
		if l.Model == "qwen06" && (l.Estimate.Available || len(l.Notes) == 0) {
			t.Errorf("lane %s: estimate %+v notes %v", l.Key, l.Estimate, l.Notes)
		}
	}
	if p.Totals.WithoutEstimate != 2 || !strings.Contains(SummaryLine(p), "2 of 4 lanes to run have no estimate yet") {
		t.Errorf("summary must say two lanes have no estimate: %q", SummaryLine(p))
	}
	m.Params, m.Layers, m.Hidden, m.Heads, m.KVHeads = 3_000_000_000, 32, 3072, 24, 8
	p = build(t, cfg)
	if len(findingsMatching(p, "estimates unavailable")) != 0 || p.Lanes[0].Estimate.Available != true {
		t.Errorf("architecture attributes must enable estimates: %+v", p.Preflight)
	}
}

func TestPendingTraceLanes(t *testing.T) {
	cfg := fixture()
	for _, s := range cfg.Shapes {
		s.InputTokens, s.OutputTokens = 0, 0
		s.Pending = []string{
			"output_tokens: trace.chutes is not profiled yet; run `infercrane profile trace` or set profile+digest",
			"input_tokens: trace.chutes is not profiled yet; run `infercrane profile trace` or set profile+digest",
		}
	}
	p := build(t, cfg)
	if p.HasErrors() {
		t.Fatalf("pending lanes must not fail: %+v", p.Preflight)
	}
	if got := findingsMatching(p, `^4 lanes wait for trace "chutes" to be profiled$`); len(got) != 1 || got[0].Severity != SeverityNote {
		t.Errorf("no note for pending lanes: %+v", p.Preflight)
	}
	for _, l := range p.Lanes {
		if l.Action != ActionRun || l.Estimate.Available || len(l.Notes) != 1 || !strings.Contains(l.Notes[0], "trace chutes") {
			t.Errorf("lane %s: %+v", l.Key, l)
		}
		if want := []string{"input_tokens: trace.chutes", "output_tokens: trace.chutes"}; strings.Join(l.Inputs.Pending, "|") != strings.Join(want, "|") {
			t.Errorf("pending inputs %q, want %q", l.Inputs.Pending, want)
		}
	}
	if p.Graph.Nodes[0].ID != "profile.chutes" {
		t.Errorf("first node %+v, want profile.chutes", p.Graph.Nodes[0])
	}
}

func TestGPUOverrides(t *testing.T) {
	base := build(t, fixture())
	cfg := fixture()
	g := cfg.GPUs["l40s"]
	g.PricePerSecond = f64(2 * 0.000542)
	p := build(t, cfg)
	if r := p.Totals.CostUSD / base.Totals.CostUSD; r < 1.999 || r > 2.001 || p.Totals.GPUSeconds != base.Totals.GPUSeconds {
		t.Errorf("double price gives cost ratio %.4f", r)
	}
	g.PrefillMFU = f64(0.64)
	p = build(t, cfg)
	if p.Lanes[0].Estimate.TTFTMs >= base.Lanes[0].Estimate.TTFTMs {
		t.Errorf("higher MFU must lower TTFT: %v vs %v", p.Lanes[0].Estimate.TTFTMs, base.Lanes[0].Estimate.TTFTMs)
	}
	if a := p.Assumptions[0]; strings.Join(a.Overridden, ",") != "prefill_mfu,price_per_second" || a.PrefillMFU != 0.64 {
		t.Errorf("assumptions %+v", a)
	}
}

func TestSimExecutorBillsNothing(t *testing.T) {
	cfg := fixture()
	cfg.Screens["qwen_l40s"].Executor = ""
	p := build(t, cfg)
	for _, l := range p.Lanes {
		if l.Executor != "sim" || l.Inputs.ExecutorType != "sim" || l.Estimate.CostUSD != 0 || l.Estimate.WallSeconds <= 0 {
			t.Errorf("lane %s on sim: %+v", l.Key, l.Estimate)
		}
	}
}

func TestUndeclaredReferenceIsADiagnostic(t *testing.T) {
	cfg := fixture()
	cfg.Screens["qwen_l40s"].Models = append(cfg.Screens["qwen_l40s"].Models, "ghost")
	p, diags := Build(cfg, nil, Options{})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), `undeclared model`) || !strings.Contains(diags.Error(), `"ghost"`) {
		t.Fatalf("diags = %v", diags)
	}
	if p == nil || len(p.Lanes) != 4 {
		t.Errorf("the declared lanes are still planned")
	}
}

func TestDeterministicJSON(t *testing.T) {
	a, err := Marshal(build(t, fixture()))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Marshal(build(t, fixture()))
	if string(a) != string(b) {
		t.Fatal("two plans of the same spec differ")
	}
	p, err := Unmarshal(a)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := Marshal(p)
	if string(c) != string(a) {
		t.Error("Marshal(Unmarshal(x)) != x")
	}
	tampered := strings.Replace(string(a), `"runs": 2`, `"runs": 3`, 1)
	if _, err := Unmarshal([]byte(tampered)); err == nil || !strings.Contains(err.Error(), "edited") {
		t.Errorf("a tampered plan must be refused, got %v", err)
	}
}

func TestIdenticalLanesInTwoScreensGetDistinctIDs(t *testing.T) {
	cfg := fixture()
	twin := *cfg.Screens["qwen_l40s"]
	twin.Name = "twin"
	cfg.Screens["twin"] = &twin
	p := build(t, cfg)
	seen := map[string]string{}
	for _, l := range p.Lanes {
		if other, dup := seen[l.ID]; dup {
			t.Fatalf("lanes %s and %s share ID %s", other, l.Key, l.ID)
		}
		seen[l.ID] = l.Key
	}
	checkGraph(t, p)
	// The IDs depend only on the set of colliding lanes: planning again,
	// with the screens' lists reversed, gives the same IDs.
	twin.Models = []string{"qwen17", "qwen06"}
	if again := build(t, cfg); fmt.Sprint(laneIDs(again)) != fmt.Sprint(laneIDs(p)) {
		t.Error("colliding lane IDs are not stable")
	}
}

// A model and a runtime used both on the sim executor and on a billed one
// are warned about whichever screen's lanes sort first.
func TestPinningWarningsWhenASimScreenSortsFirst(t *testing.T) {
	cfg := fixture()
	cfg.Models["qwen06"].Revision = ""
	cfg.Runtimes["vllm"].RuntimeVersion = ""
	sim := *cfg.Screens["qwen_l40s"]
	sim.Name, sim.Executor = "a_sim", ""
	cfg.Screens["a_sim"] = &sim
	p := build(t, cfg)
	for _, re := range []string{`^model "qwen06" has no pinned revision$`, `^runtime "vllm" has no pinned version$`} {
		if got := findingsMatching(p, re); len(got) != 1 {
			t.Errorf("want one warning %s, got %+v", re, p.Preflight)
		}
	}
}

// TestRuntimeSettingsReachTheModel: the runtime block's args and the
// engine version's defaults are resolved into each lane's performance
// model, change its estimate, and an arg the engine would refuse is a
// preflight error naming it.
func TestRuntimeSettingsReachTheModel(t *testing.T) {
	base := build(t, fixture())
	l := base.Lanes[0]
	if l.Perf == nil || l.Perf.Runtime == nil || l.Perf.Engine.MaxBatchedTokens != 2048 || !l.Perf.Engine.ChunkedPrefill || l.Perf.Engine.KVBlocks == 0 {
		t.Fatalf("vLLM 0.22.1 on an L40S: %+v", l.Perf)
	}
	cfg := fixture()
	r := cfg.Runtimes[cfg.Screens["qwen_l40s"].Runtime]
	r.RuntimeArgs = append(r.RuntimeArgs, "--max-num-batched-tokens", "512")
	p := build(t, cfg)
	if p.Lanes[0].Perf.Engine.MaxBatchedTokens != 512 || p.Lanes[0].Perf.Runtime.Sources["max_num_batched_tokens"] != "args" || p.Lanes[0].Estimate.TTFTP95Ms == l.Estimate.TTFTP95Ms {
		t.Errorf("a 512-token budget chunks prompts over more steps: engine %+v, TTFT p95 %v vs %v", p.Lanes[0].Perf.Engine, p.Lanes[0].Estimate.TTFTP95Ms, l.Estimate.TTFTP95Ms)
	}
	r.RuntimeArgs = append(r.RuntimeArgs, "--max-num-seqs", "many")
	p = build(t, cfg)
	found := false
	for _, f := range p.Preflight {
		if f.Severity == SeverityError && strings.Contains(f.Detail, `--max-num-seqs: "many" is not a positive whole number`) {
			found = true
		}
	}
	if !found || p.Lanes[0].Estimate.Available {
		t.Errorf("a bad runtime arg must be a preflight error: %+v", p.Preflight)
	}
}

// TestPlanReadBackKeepsCapabilities: a plan read from its JSON decides by
// the capabilities its executors declare, as the plan it was made from
// did, though the JSON does not carry them: a sim lane stays unbilled
// (notional cost) and simulated (its speedup read), a local lane billed.
func TestPlanReadBackKeepsCapabilities(t *testing.T) {
	for _, typ := range []string{"sim", "local"} {
		p := build(t, fixture())
		for _, l := range p.Lanes {
			l.Inputs.ExecutorType, l.Inputs.Capabilities = typ, lang.BuiltinExecutors[typ]
		}
		p.PlanDigest = ""
		d, err := Digest(p)
		if err != nil {
			t.Fatal(err)
		}
		p.PlanDigest = d
		b, err := Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range back.Lanes {
			if got, want := l.Inputs.Capabilities, p.Lanes[i].Inputs.Capabilities; got != want {
				t.Errorf("%s on %s: read back with capabilities %+v, made with %+v", l.Key, typ, got, want)
			}
			if got, want := Billed(l.Inputs), typ != "sim"; got != want {
				t.Errorf("%s on %s: billed %v after reading the plan back, want %v", l.Key, typ, got, want)
			}
		}
	}
}

// A plan built without its digest marshals and saves to the same bytes as
// one built with it: both compute their own.
func TestNoDigestPlanMarshalsAndSavesTheSame(t *testing.T) {
	cfg := genConfig(3, 2, 2)
	with, _ := Build(cfg, nil, Options{})
	without, _ := Build(cfg, nil, Options{NoDigest: true})
	if with.PlanDigest == "" || without.PlanDigest != "" {
		t.Fatalf("digests %q and %q: want one set and one empty", with.PlanDigest, without.PlanDigest)
	}
	saved := func(p *Plan) ([]byte, error) { return (&SavedPlan{Plan: p}).Encode() }
	for i, out := range []func(*Plan) ([]byte, error){Marshal, saved} {
		a, errA := out(with)
		b, errB := out(without)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s of the plan without its digest differs", []string{"Marshal", "the saved plan"}[i])
		}
	}
}

// oneGPUFixture is the fixture with its model "qwen17" made id at
// max_context maxContext (0: none) on its gpu "l40s" made one gpuType,
// served by vLLM 0.11.0 with its defaults.
func oneGPUFixture(id string, maxContext int, gpuType string) *lang.Config {
	cfg := fixture()
	cfg.Models["qwen17"].ID = id
	cfg.Models["qwen17"].MaxContext = maxContext
	cfg.GPUs["l40s"].Type = gpuType
	cfg.Runtimes["vllm"].RuntimeVersion = "0.11.0"
	cfg.Runtimes["vllm"].RuntimeArgs = nil
	return cfg
}

// TestMaxModelLenWithinTheReserveWarns: Qwen3-32B on one H100 at vLLM
// 0.11's default context (40,960) holds one full-length request only if
// vLLM's activation peak and CUDA context are under the catalog's 1.5 GB
// reserve, as GPUStack's runs showed they were: a warning, not the
// refusal it was, and the lanes are estimated.
func TestMaxModelLenWithinTheReserveWarns(t *testing.T) {
	cfg := oneGPUFixture("Qwen/Qwen3-32B", 40960, "H100") // vLLM's default: the model's max_position_embeddings
	p := build(t, cfg)
	got := findingsMatching(p, "^the engine may refuse to start")
	if len(got) != 2 || got[0].Severity != SeverityWarning || !strings.Contains(got[0].Detail, "fewer than max model len 40960") || p.HasErrors() {
		t.Errorf("findings %+v (errors: %v)", got, p.HasErrors())
	}
	for _, l := range p.Lanes {
		if l.Model == "qwen17" && !l.Estimate.Available {
			t.Errorf("lane %s has no estimate", l.Key)
		}
	}
	cfg.Models["qwen17"].MaxContext = 24576 // within the cache after the sampler's start-up profile (4.2 GB at 1,024 sequences)
	if p = build(t, cfg); len(findingsMatching(p, "may refuse to start")) != 0 {
		t.Error("a max model len that fits is warned about")
	}
}

// TestModelPositionsAreTheDefaultMaxModelLen: without max_context or
// --max-model-len vLLM serves a model at its maximum positions and
// refuses to start when its KV cache cannot hold one request of that
// length; the plan refuses the lane as vLLM would (it planned it before)
// and says where the length came from and what to set.
func TestModelPositionsAreTheDefaultMaxModelLen(t *testing.T) {
	cfg := oneGPUFixture("meta-llama/Llama-3.1-8B-Instruct", 0, "A10")
	p := build(t, cfg)
	got := findingsMatching(p, "^the engine would refuse this deployment's settings")
	if len(got) == 0 || got[0].Severity != SeverityError ||
		!regexp.MustCompile(`Max model len 131072 is the maximum positions of meta-llama/Llama-3.1-8B-Instruct: set max_context = \d+ or less on model "qwen17"`).MatchString(got[0].Detail) {
		t.Fatalf("findings %+v", got)
	}
	cfg.Models["qwen17"].MaxContext = 8192
	if p = build(t, cfg); len(findingsMatching(p, "^the engine would refuse")) != 0 {
		t.Errorf("a max_context that fits is refused: %+v", findingsMatching(p, "^the engine would refuse"))
	}
	// The simulated engine serves the lane, with a warning of what a real
	// server would refuse.
	cfg.Models["qwen17"].MaxContext = 0
	cfg.Executors["modal"].Type, cfg.Executors["modal"].Attrs = "sim", nil
	cfg.Executors["modal"].Capabilities = lang.BuiltinExecutors["sim"]
	p = build(t, cfg)
	warned := findingsMatching(p, "^a real vLLM server would refuse this deployment at its default max model len")
	if len(findingsMatching(p, "^the engine would refuse")) != 0 || len(warned) == 0 || warned[0].Severity != SeverityWarning ||
		!strings.Contains(warned[0].Detail, "Set max_context = ") {
		t.Errorf("a simulated lane: findings %+v", p.Preflight)
	}
	for _, l := range p.Lanes {
		if l.Model == "qwen17" && !l.Estimate.Available {
			t.Errorf("simulated lane %s has no estimate", l.Key)
		}
	}
	// An endpoint's server is running already, with a length the spec
	// does not state: nothing to check it against.
	cfg.Executors["modal"].Type, cfg.Executors["modal"].Attrs = "endpoint", map[string]cty.Value{"base_url": cty.StringVal("http://x")}
	cfg.Executors["modal"].Capabilities = lang.BuiltinExecutors["endpoint"]
	if p = build(t, cfg); len(findingsMatching(p, "^the engine would refuse")) != 0 {
		t.Errorf("a running endpoint's server is refused for a length it may not have: %+v", findingsMatching(p, "^the engine would refuse"))
	}
}

// TestSamplerReserveInTheMemoryCheck: gpt-oss-120b on one H100 at
// --gpu-memory-utilization 0.85 (72.3 GB) fits its 69.1 GB of weights
// beside the catalog's 1.5 GB reserve but not beside vLLM's start-up
// profile of its sampler at 1,024 sequences (5.4 GB over 201,088
// vocabulary entries): an error that says so and names --max-num-seqs;
// at 256 sequences (0.5 + 1.2 GB) it fits.
func TestSamplerReserveInTheMemoryCheck(t *testing.T) {
	cfg := oneGPUFixture("openai/gpt-oss-120b", 8192, "H100")
	cfg.Runtimes["vllm"].RuntimeArgs = []string{"--gpu-memory-utilization", "0.85"}
	p := build(t, cfg)
	got := findingsMatching(p, "^weights do not fit")
	if len(got) == 0 || got[0].Severity != SeverityError || !strings.Contains(got[0].Summary, "5.4 GB reserve") ||
		!strings.Contains(got[0].Detail, "1024 sequences x 201088 vocabulary entries: a lower --max-num-seqs") {
		t.Fatalf("findings %+v", got)
	}
	cfg.Runtimes["vllm"].RuntimeArgs = []string{"--gpu-memory-utilization", "0.85", "--max-num-seqs", "256"}
	if p = build(t, cfg); len(findingsMatching(p, "^weights do not fit")) != 0 {
		t.Errorf("at 256 sequences the weights fit: %+v", findingsMatching(p, "^weights do not fit"))
	}
}

// TestExecutorSettingsSharedUnlessRedacted: the lanes of an executor block
// whose inputs redact nothing share one map of its settings (the plan
// text compares them at once); a block with a secret attribute gives each
// lane its own, the secret redacted and its real value in the lane's
// secrets.
func TestExecutorSettingsSharedUnlessRedacted(t *testing.T) {
	cfg := fixture()
	cfg.Executors["modal"].Settings = map[string]any{"timeout": "30m", "api_token": "tok-should-not-leak"}
	cfg.Executors["plain"] = &lang.Executor{Name: "plain", Type: "modal", Capabilities: lang.BuiltinExecutors["modal"],
		Attrs: map[string]cty.Value{"timeout": cty.StringVal("1h")}, Settings: map[string]any{"timeout": "1h", "gpu": "L40S"}}
	plain := *cfg.Screens["qwen_l40s"]
	plain.Name, plain.Executor = "plain", "plain"
	cfg.Screens["plain"] = &plain
	p := build(t, cfg)
	var shared map[string]any
	for _, l := range p.Lanes {
		s := l.ExecutorSettings
		switch l.Executor {
		case "plain":
			if shared == nil {
				shared = s
			}
			if fmt.Sprint(s) != "map[gpu:L40S timeout:1h]" || reflect.ValueOf(s).UnsafePointer() != reflect.ValueOf(shared).UnsafePointer() {
				t.Errorf("%s: settings %v, want the one shared map of the block's", l.Key, s)
			}
			if l.Inputs.Secrets != nil && len(l.Inputs.Secrets.ExecutorSettings) > 0 {
				t.Errorf("%s: secrets %v, want none", l.Key, l.Inputs.Secrets.ExecutorSettings)
			}
		case "modal":
			if s["api_token"] != Redacted || s["timeout"] != "30m" || l.Inputs.Secrets == nil || l.Inputs.Secrets.ExecutorSettings["api_token"] != "tok-should-not-leak" {
				t.Errorf("%s: settings %v, secrets %+v: want the token redacted and kept in the secrets", l.Key, s, l.Inputs.Secrets)
			}
		}
	}
	if shared == nil {
		t.Fatal("no lane on the plain executor")
	}
}

// TestEnforceEagerIsModelled: --enforce-eager is no longer an arg the
// estimates leave out. On a CUDA GPU every step launches its kernels one
// by one, so the same lanes plan a longer TPOT, the runtime's line says
// what each step costs, and -verbose's step lines show the launches that
// outlast the GPU's work; no note calls the flag unmodelled.
func TestEnforceEagerIsModelled(t *testing.T) {
	graphed := build(t, fixture())
	cfg := fixture()
	rt := cfg.Runtimes["vllm"]
	rt.RuntimeArgs = append(rt.RuntimeArgs, "--enforce-eager")
	eager := build(t, cfg)
	if got := findingsMatching(eager, "leave out"); len(got) != 0 {
		t.Errorf("--enforce-eager noted as unmodelled: %+v", got)
	}
	tpot := map[string]float64{}
	for _, l := range graphed.Lanes {
		tpot[l.Model+"/"+l.Shape] = l.Estimate.TPOTMs
	}
	for _, l := range eager.Lanes {
		if was := tpot[l.Model+"/"+l.Shape]; !(l.Estimate.TPOTMs > was && was > 0) {
			t.Errorf("lane %s: TPOT %.2f ms with --enforce-eager, %.2f ms without; want longer", l.Key, l.Estimate.TPOTMs, was)
		}
	}
	var text strings.Builder
	if err := WriteTextOpts(&text, eager, TextOptions{Verbose: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--enforce-eager: on a CUDA GPU every step lasts at least 300 µs a layer of kernel launches", "kernel launches without a CUDA graph beyond the GPU's work"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the plan does not say %q:\n%s", want, text.String())
		}
	}
}
