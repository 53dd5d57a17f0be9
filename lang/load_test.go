package lang

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// mustLoad loads src as one file and fails on any error.
func mustLoad(t *testing.T, src string, opts Options) *Config {
	t.Helper()
	cfg, diags := LoadSource(t.TempDir(), "main.hcl", []byte(src), opts)
	if diags.HasErrors() {
		t.Fatalf("unexpected errors:\n%s", render(diags, []byte(src), "main.hcl"))
	}
	return cfg
}

// loadErr loads src and returns its error diagnostics rendered as text.
func loadErr(t *testing.T, src string, opts Options) string {
	t.Helper()
	_, diags := LoadSource(t.TempDir(), "main.hcl", []byte(src), opts)
	if !diags.HasErrors() {
		t.Fatalf("want errors, got none for:\n%s", src)
	}
	return render(diags, []byte(src), "main.hcl")
}

const minimal = `
model "m" {
  id = "Qwen/Qwen3-0.6B"
}
gpu "g" {
  type = "L40S"
}
shape "s" {
  input_tokens  = 128
  output_tokens = 16
  concurrency   = 2
  requests      = 4
}
screen "x" {
  models = [model.m]
  shapes = [shape.s]
  gpus   = [gpu.g]
}
`

func TestDefaults(t *testing.T) {
	cfg := mustLoad(t, minimal+`runtime "r" { engine = "vllm" }`, testOptions())
	s := cfg.Shapes["s"]
	if !s.Streaming || s.API != "chat" || s.TemplateHeadroom != 0 || s.Warmup != DefaultWarmup || s.WarmupSeconds != 0 || s.Arrival != "" {
		t.Errorf("shape defaults: %+v", s)
	}
	if g := cfg.GPUs["g"]; g.Count != 1 || g.PrefillMFU != nil {
		t.Errorf("gpu defaults: %+v", g)
	}
	if r := cfg.Runtimes["r"]; r.GPUMemoryUtil != 0.9 {
		t.Errorf("runtime gpu_memory_utilization default = %v, want 0.9", r.GPUMemoryUtil)
	}
	sc := cfg.Screens["x"]
	if sc.Runs != DefaultRuns || sc.Seed != 0 || sc.Executor != "sim" {
		t.Errorf("screen defaults: %+v", sc)
	}
	if e := cfg.Executors["sim"]; e == nil || e.Type != "sim" {
		t.Errorf("built-in sim executor missing: %+v", cfg.Executors)
	}
}

func TestFullScreen(t *testing.T) {
	cfg := mustLoad(t, minimal+`
runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
  args    = ["--max-model-len", tostring(8192)]
}
executor "modal" {
  type    = "modal"
  timeout = "30m"
}
model "big" {
  id = "Qwen/Qwen3-1.7B"
}
gate "clean" {
  condition     = lane.failed == 0
  error_message = "no failures"
  min_runs      = 2
}
shape "open" {
  input_tokens  = 100
  output_tokens = 10
  concurrency   = 4
  requests      = 40
  request_rate  = 2.5
  arrival       = "gamma"
  burstiness    = 0.5
  slo {
    ttft_ms = 500
  }
}
screen "y" {
  models   = [model.m, model.big]
  shapes   = [shape.s, shape.open]
  gpus     = [gpu.g]
  runtime  = runtime.vllm
  executor = executor.modal
  baseline = model.big
  gates    = [gate.clean]
  runs     = 5
  seed     = 17
}
`, testOptions())
	y := cfg.Screens["y"]
	if strings.Join(y.Models, ",") != "m,big" || strings.Join(y.Shapes, ",") != "s,open" ||
		y.Runtime != "vllm" || y.Executor != "modal" || y.Baseline != "big" || y.Runs != 5 || y.Seed != 17 ||
		strings.Join(y.Gates, ",") != "clean" {
		t.Errorf("screen y: %+v", y)
	}
	if got := cfg.Executors["modal"].Attrs["timeout"]; got.AsString() != "30m" {
		t.Errorf("executor attrs: %#v", cfg.Executors["modal"].Attrs)
	}
	if got := strings.Join(cfg.Runtimes["vllm"].RuntimeArgs, " "); got != "--max-model-len 8192" {
		t.Errorf("runtime args = %q", got)
	}
	o := cfg.Shapes["open"]
	if o.RequestRate != 2.5 || o.Arrival != "gamma" || o.Burstiness != 0.5 || o.SLO.TTFTMs != 500 {
		t.Errorf("open shape: %+v", o)
	}
}

func TestVariablePrecedence(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("main.hcl", strings.Replace(minimal, `requests      = 4`, `requests      = var.requests`, 1)+`
variable "requests" {
  type    = number
  default = 4
}
variable "label" {
  type    = string
  default = "d"
}
variable "tags" {
  type    = list(string)
  default = []
}
locals {
  upper = upper(var.label)
}
`)
	load := func(opts Options) *Config {
		t.Helper()
		cfg, diags := Load(dir, opts)
		if diags.HasErrors() {
			t.Fatalf("errors: %v", diags)
		}
		return cfg
	}
	num := func(cfg *Config, name string) int64 {
		i, _ := cfg.Variables[name].Value.AsBigFloat().Int64()
		return i
	}
	if cfg := load(Options{}); num(cfg, "requests") != 4 || cfg.Shapes["s"].Requests != 4 {
		t.Errorf("default not applied")
	}
	env := []string{"INFERCRANE_VAR_requests=8", "INFERCRANE_VAR_label=from-env", "INFERCRANE_VAR_unrelated=1"}
	cfg := load(Options{Environ: env})
	if num(cfg, "requests") != 8 || cfg.Variables["label"].Value.AsString() != "from-env" {
		t.Errorf("environment not applied: %v", cfg.Variables)
	}
	if cfg.Locals["upper"].AsString() != "FROM-ENV" {
		t.Errorf("local from variable = %v", cfg.Locals["upper"])
	}
	write("a.auto.vars.hcl", "requests = 16\n")
	if cfg := load(Options{Environ: env}); num(cfg, "requests") != 16 {
		t.Errorf("auto vars file should beat the environment")
	}
	vf := write("extra.vars.hcl", "requests = 32\ntags = [\"x\", \"y\"]\n")
	cfg = load(Options{Environ: env, VarFiles: []string{vf}})
	if num(cfg, "requests") != 32 || cfg.Variables["tags"].Value.LengthInt() != 2 {
		t.Errorf("-var-file should beat auto vars")
	}
	cfg = load(Options{Environ: env, VarFiles: []string{vf}, Vars: []string{"requests=64", "requests=128", `tags=["z"]`, "label=x=y"}})
	if num(cfg, "requests") != 128 || cfg.Variables["label"].Value.AsString() != "x=y" || cfg.Variables["tags"].Value.LengthInt() != 1 {
		t.Errorf("-var should win, last one first: %v", cfg.Variables)
	}
	if cfg.Shapes["s"].Requests != 128 {
		t.Errorf("shape did not see the variable: %d", cfg.Shapes["s"].Requests)
	}
	if _, ok := cfg.Files[vf]; !ok || len(cfg.VarFiles) != 2 || cfg.VarFiles[1] != vf {
		t.Errorf("var files not recorded: %v", cfg.VarFiles)
	}

	_, diags := Load(dir, Options{Vars: []string{"reqests=3"}})
	if !strings.Contains(diags.Error(), `Did you mean "requests"?`) {
		t.Errorf("undeclared -var: %v", diags)
	}
	_, diags = Load(dir, Options{Vars: []string{"requests=many"}})
	if !diags.HasErrors() || diags[0].Subject == nil || !strings.Contains(diags[0].Subject.Filename, "var.requests") {
		t.Errorf("bad -var value: %v", diags)
	}
	_, diags = Load(dir, Options{Vars: []string{"requests"}})
	if !strings.Contains(diags.Error(), "-var NAME=VALUE") {
		t.Errorf("-var without '=': %v", diags)
	}
}

func TestVariableValidationOnFlag(t *testing.T) {
	src := minimal + `
variable "runs" {
  type    = number
  default = 2
  validation {
    condition     = var.runs >= 1 && var.runs <= 10
    error_message = "runs must be between 1 and 10."
  }
}`
	mustLoad(t, src, testOptions())
	_, diags := LoadSource(t.TempDir(), "main.hcl", []byte(src), Options{Vars: []string{"runs=11"}})
	if !diags.HasErrors() || !strings.Contains(diags[0].Detail, "runs must be between 1 and 10.") {
		t.Fatalf("validation: %v", diags)
	}
	if r := diags[0].Subject; r == nil || r.Filename != "<value for var.runs>" {
		t.Errorf("validation error should point at the -var value, got %v", r)
	}
}

func TestForEach(t *testing.T) {
	cfg := mustLoad(t, `
variable "sizes" {
  default = { "0.6b" = "Qwen/Qwen3-0.6B", "1.7b" = "Qwen/Qwen3-1.7B" }
}
model "qwen" {
  for_each    = var.sizes
  id          = each.value
  max_context = 8192
}
shape "load" {
  for_each      = toset(["1", "4"])
  input_tokens  = 100
  output_tokens = 10
  concurrency   = tonumber(each.key)
  requests      = 8 * tonumber(each.value)
}
gpu "g" {
  type = "H100"
}
screen "all" {
  models   = [model.qwen]
  shapes   = values(shape.load)
  gpus     = [gpu.g]
  baseline = model.qwen["1.7b"]
}
screen "one" {
  models = [model.qwen["0.6b"]]
  shapes = [shape.load["4"]]
  gpus   = [gpu.g]
}
`, testOptions())
	if m := cfg.Models[`qwen["0.6b"]`]; m == nil || m.ID != "Qwen/Qwen3-0.6B" {
		t.Fatalf("instances: %v", cfg.Models)
	}
	if s := cfg.Shapes[`load["4"]`]; s == nil || s.Concurrency != 4 || s.Requests != 32 {
		t.Fatalf("shape instances: %v", cfg.Shapes)
	}
	all := cfg.Screens["all"]
	if got := strings.Join(all.Models, ","); got != `qwen["0.6b"],qwen["1.7b"]` {
		t.Errorf("models = %s", got)
	}
	if got := strings.Join(all.Shapes, ","); got != `load["1"],load["4"]` {
		t.Errorf("shapes = %s", got)
	}
	if all.Baseline != `qwen["1.7b"]` {
		t.Errorf("baseline = %s", all.Baseline)
	}
	if got := strings.Join(cfg.Screens["one"].Models, ","); got != `qwen["0.6b"]` {
		t.Errorf("one.models = %s", got)
	}
}

// profile is a resolved trace with round numbers.
func profile() cty.Value {
	d := TracePercentiles{P50: 1000, P90: 3000, P95: 4000, P99: 8000, Samples: 100}
	o := TracePercentiles{P50: 200, P90: 600, P95: 900, P99: 2000, Samples: 100}
	return TraceProfile{InputTokens: d, OutputTokens: o, Shapes: map[string]TraceShape{
		"interactive": {InputTokens: 1000, OutputTokens: 200, Concurrency: 8, Requests: 32},
	}}.Value()
}

const traceSpec = `
trace "chutes" {
  source  = "s3://bucket/trace.parquet"
  profile = "profiles/chutes.json"
  digest  = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
  sample {
    row_groups     = 3
    rows_per_group = 50000
  }
}
locals {
  doubled = trace.chutes.output_tokens.p95 * 2
}
shape "interactive" {
  input_tokens  = trace.chutes.shapes.interactive.input_tokens
  output_tokens = local.doubled
  concurrency   = 8
  requests      = 32
}
shape "fixed" {
  input_tokens  = 10
  output_tokens = trace.chutes.output_tokens.p50
  concurrency   = 1
  requests      = 1
}
`

func TestTracePending(t *testing.T) {
	cfg := mustLoad(t, traceSpec, testOptions())
	s := cfg.Shapes["interactive"]
	if s.InputTokens != 0 || s.OutputTokens != 0 || len(s.Pending) != 2 {
		t.Fatalf("pending shape: %+v", s)
	}
	want := "input_tokens: trace.chutes is not profiled yet; run `infercrane profile trace` or set profile+digest"
	if s.Pending[0] != want {
		t.Errorf("Pending[0] = %q, want %q", s.Pending[0], want)
	}
	if !strings.HasPrefix(s.Pending[1], "output_tokens: trace.chutes") {
		t.Errorf("Pending[1] = %q (a local derived from the trace should name it)", s.Pending[1])
	}
	if f := cfg.Shapes["fixed"]; f.InputTokens != 10 || len(f.Pending) != 1 {
		t.Errorf("fixed shape: %+v", f)
	}
	if tr := cfg.Traces["chutes"]; tr.Sample == nil || tr.Sample.RowGroups != 3 || tr.Sample.RowsPerGroup != 50000 || tr.Value.IsKnown() {
		t.Errorf("trace: %+v", tr)
	}
}

func TestTraceResolved(t *testing.T) {
	opts := testOptions()
	opts.Traces = map[string]ResolvedTrace{"chutes": {Value: profile(), ProfileDigest: "sha256:abc"}}
	cfg := mustLoad(t, traceSpec, opts)
	if d := cfg.Traces["chutes"].ProfileDigest; d != "sha256:abc" {
		t.Errorf("ProfileDigest = %q, want the resolved trace's", d)
	}
	s := cfg.Shapes["interactive"]
	if s.InputTokens != 1000 || s.OutputTokens != 1800 || len(s.Pending) != 0 {
		t.Errorf("resolved shape: %+v", s)
	}
	if f := cfg.Shapes["fixed"]; f.OutputTokens != 200 {
		t.Errorf("fixed: %+v", f)
	}
	// A value for a trace the spec does not declare is ignored.
	opts.Traces = map[string]ResolvedTrace{"other": {Value: profile()}}
	if s := mustLoad(t, traceSpec, opts).Shapes["interactive"]; len(s.Pending) == 0 {
		t.Errorf("shape resolved from another trace's value: %+v", s)
	}
}

func TestGateCheck(t *testing.T) {
	cfg := mustLoad(t, `
gate "fast" {
  condition     = lane.failed == 0 && lane.ttft_p95_ms <= 200 * 1.5
  error_message = "too slow"
}`, testOptions())
	g := cfg.Gates["fast"]
	lane := func(failed, ttft float64) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"failed": cty.NumberFloatVal(failed), "ttft_p95_ms": cty.NumberFloatVal(ttft)})
	}
	if ok, d := g.Check(lane(0, 250)); !ok || d.HasErrors() {
		t.Errorf("250ms should pass: %v %v", ok, d)
	}
	if ok, _ := g.Check(lane(0, 301)); ok {
		t.Errorf("301ms should fail")
	}
	if ok, _ := g.Check(lane(1, 10)); ok {
		t.Errorf("a failed request should fail the gate")
	}
	_, d := g.Check(cty.ObjectVal(map[string]cty.Value{"failed": cty.Zero}))
	if !d.HasErrors() || d[0].Subject == nil || !strings.Contains(d[0].Detail, "It has: failed.") {
		t.Errorf("a missing metric should be a located diagnostic listing the metrics: %v", d)
	}
}

func TestExecutorSchemas(t *testing.T) {
	opts := testOptions()
	opts.ExecutorSchemas = map[string]ExecutorSchema{
		"sim":      {},
		"endpoint": {Attributes: map[string]AttributeSpec{"url": {Type: cty.String, Required: true}, "max_retries": {Type: cty.Number}}},
	}
	cfg := mustLoad(t, `
executor "ep" {
  type        = "endpoint"
  url         = "http://127.0.0.1:8000/v1"
  max_retries = "3"
}`, opts)
	if v := cfg.Executors["ep"].Attrs["max_retries"]; !v.Type().Equals(cty.Number) {
		t.Errorf("attribute not converted: %#v", v)
	}
	got := loadErr(t, `
executor "ep" {
  type = "endpoint"
  ulr  = "http://x"
}
executor "m" {
  type = "modal"
}`, opts)
	for _, want := range []string{`Did you mean "url"?`, `needs the argument "url"`, `no executor of type "modal"`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

func TestSpecDigest(t *testing.T) {
	a := &Config{Dir: "/x", Files: map[string][]byte{"/x/a.hcl": []byte("a"), "/x/b.hcl": []byte("b")}}
	b := &Config{Dir: "/y", Files: map[string][]byte{"/y/b.hcl": []byte("b"), "/y/a.hcl": []byte("a")}}
	if a.SpecDigest() != b.SpecDigest() {
		t.Errorf("digest depends on the directory or map order")
	}
	c := &Config{Dir: "/x", Files: map[string][]byte{"/x/a.hcl": []byte("ab"), "/x/b.hcl": []byte("")}}
	if a.SpecDigest() == c.SpecDigest() {
		t.Errorf("moving bytes between files must change the digest")
	}
	if !strings.HasPrefix(a.SpecDigest(), "sha256:") || len(a.SpecDigest()) != 71 {
		t.Errorf("digest format: %s", a.SpecDigest())
	}
}

func TestRequiredVersion(t *testing.T) {
	src := `infercrane { required_version = "~> 0.1" }` + "\n" + minimal
	mustLoad(t, src, testOptions())
	opts := testOptions()
	opts.Version = "1.2.0"
	if got := loadErr(t, src, opts); !strings.Contains(got, "this is infercrane v1.2.0") {
		t.Errorf("version mismatch: %s", got)
	}
	if got := loadErr(t, `infercrane { required_version = "soon" }`, testOptions()); !strings.Contains(got, "not a version constraint") {
		t.Errorf("bad constraint: %s", got)
	}
}

func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "models.hcl"), []byte(`model "m" { id = "a/b" }`), 0o644)
	os.WriteFile(filepath.Join(dir, "screen.hcl"), []byte(strings.Replace(minimal, `model "m" {
  id = "Qwen/Qwen3-0.6B"
}`, "", 1)), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a spec"), 0o644)
	os.WriteFile(filepath.Join(dir, "prod.vars.hcl"), []byte("x = 1"), 0o644)
	cfg, diags := Load(dir, testOptions())
	if diags.HasErrors() {
		t.Fatalf("%v", diags)
	}
	if len(cfg.Files) != 2 || cfg.Models["m"].ID != "a/b" {
		t.Errorf("files %v models %v", len(cfg.Files), cfg.Models)
	}
	_, diags = Load(t.TempDir(), testOptions())
	if !strings.Contains(diags.Error(), "No spec files") {
		t.Errorf("empty dir: %v", diags)
	}
	_, diags = Load(filepath.Join(dir, "missing"), testOptions())
	if !strings.Contains(diags.Error(), "Cannot read spec") {
		t.Errorf("missing path: %v", diags)
	}
}

func TestNoScreenWarns(t *testing.T) {
	cfg, diags := LoadSource(t.TempDir(), "main.hcl", []byte(`model "m" { id = "a/b" }`), testOptions())
	if diags.HasErrors() || len(diags) != 1 || diags[0].Summary != "No screen" || cfg.Models["m"] == nil {
		t.Errorf("diags = %v", diags)
	}
}

func TestFunctions(t *testing.T) {
	cfg := mustLoad(t, `
locals {
  a = max(1, 5, 3)
  b = join("-", [for s in split(",", "x,y") : upper(s)])
  c = jsondecode("{\"n\": 2}").n
  d = length(distinct(concat([1, 2], [2, 3])))
  e = try(jsondecode("{}").x, "fallback")
  f = format("%05.1f", 3.14159)
  g = lookup({ a = 1 }, "b", 7)
  h = can(tonumber("x"))
}`, testOptions())
	want := map[string]cty.Value{
		"a": cty.NumberIntVal(5), "b": cty.StringVal("X-Y"), "c": cty.NumberIntVal(2), "d": cty.NumberIntVal(3),
		"e": cty.StringVal("fallback"), "f": cty.StringVal("003.1"), "g": cty.NumberIntVal(7), "h": cty.False,
	}
	for k, w := range want {
		if got := cfg.Locals[k]; !got.Equals(w).True() {
			t.Errorf("local.%s = %#v, want %#v", k, got, w)
		}
	}
}

func TestScreenExpressions(t *testing.T) {
	cfg := mustLoad(t, `
variable "limits" {
  type    = object({ ttft = number })
  default = { ttft = 1 }
}
model "qwen" {
  for_each = toset(["0.6b", "1.7b", "8b"])
  id       = "Qwen/Qwen3-${upper(each.key)}"
}
gpu "g" {
  type = "a100"
}
shape "s" {
  input_tokens  = 10
  output_tokens = 10
  concurrency   = 1
  requests      = 1
  slo {
    ttft_ms = var.limits.ttft
  }
}
screen "x" {
  models = [for k, m in model.qwen : m if k != "8b"]
  shapes = [shape.s]
  gpus   = [gpu.g]
}
`, Options{Vars: []string{"limits={ttft = 500}"}, GPUTypes: testGPUTypes, IsGPUType: func(s string) bool { return s == "a100" }})
	if got := strings.Join(cfg.Screens["x"].Models, ","); got != `qwen["0.6b"],qwen["1.7b"]` {
		t.Errorf("models = %s", got)
	}
	if cfg.Models[`qwen["8b"]`].ID != "Qwen/Qwen3-8B" {
		t.Errorf("interpolated id = %q", cfg.Models[`qwen["8b"]`].ID)
	}
	if cfg.Shapes["s"].SLO.TTFTMs != 500 {
		t.Errorf("object variable from -var: %+v", cfg.Shapes["s"].SLO)
	}
}

func TestLaneMetrics(t *testing.T) {
	src := `
gate "g" {
  condition     = lane.ttft_p95ms < 100 && lane.failures.timeout == 0
  error_message = "slow"
}`
	mustLoad(t, src, testOptions())
	opts := testOptions()
	opts.LaneMetrics = []string{"failed", "failures", "ttft_p95_ms", "ttft_p99_ms"}
	got := loadErr(t, src, opts)
	if !strings.Contains(got, `A lane has no metric "ttft_p95ms". Did you mean "ttft_p95_ms"?`) || strings.Contains(got, "failures") && strings.Count(got, "Error:") != 1 {
		t.Errorf("got:\n%s", got)
	}
}

// TestWideWholeNumbers: a parameter count over 2^31 is valid (8B models),
// while other counts keep their bound (docs/language/bounds.md).
func TestWideWholeNumbers(t *testing.T) {
	src := strings.Replace(minimal, `id = "Qwen/Qwen3-0.6B"`, `id = "org/llama-like"
  params = 8030261248`, 1)
	cfg := mustLoad(t, src, testOptions())
	if got := cfg.Models["m"].Params; got != 8030261248 {
		t.Fatalf("params = %d, want 8030261248", got)
	}
	msg := loadErr(t, strings.Replace(minimal, "requests      = 4", "requests      = 8030261248", 1), testOptions())
	if !strings.Contains(msg, "requests must be at most 10000000, got 8030261248") {
		t.Fatalf("want a too-large error for requests, got:\n%s", msg)
	}
}

// TestWarmupDefaults: one warmup request unless the shape says otherwise;
// warmup_seconds alone warms up by time with no count; warmup = 0 turns it
// off; a zero or negative warmup_seconds is an error at its attribute.
func TestWarmupDefaults(t *testing.T) {
	shape := func(attrs string) string {
		return strings.Replace(minimal, "requests      = 4", "requests      = 4\n"+attrs, 1) + `runtime "r" { engine = "vllm" }`
	}
	for _, c := range []struct {
		attrs   string
		count   int
		seconds float64
	}{
		{"", DefaultWarmup, 0},
		{"warmup = 0", 0, 0},
		{"warmup = 5", 5, 0},
		{"warmup_seconds = 2.5", 0, 2.5},
		{"warmup = 3\nwarmup_seconds = 1", 3, 1},
	} {
		s := mustLoad(t, shape(c.attrs), testOptions()).Shapes["s"]
		if s.Warmup != c.count || s.WarmupSeconds != c.seconds {
			t.Errorf("%q: warmup %d, warmup_seconds %g; want %d, %g", c.attrs, s.Warmup, s.WarmupSeconds, c.count, c.seconds)
		}
	}
	if msg := loadErr(t, shape("warmup_seconds = 0"), testOptions()); !strings.Contains(msg, "warmup_seconds") {
		t.Errorf("warmup_seconds = 0: %q, want an error naming it", msg)
	}
}

// A profile sketched at quantiles (profile --quantiles) gives lengths and
// hit ratios every quantile, the percentiles among them, to draw from; a
// profile of percentiles only gives those four.
func TestLengthsFromProfileQuantiles(t *testing.T) {
	in := TracePercentiles{P50: 1000, P90: 3000, P95: 4000, P99: 8000, Samples: 100,
		Quantiles: []QuantilePoint{{0.01, 20}, {0.25, 400}, {0.5, 1000}, {0.75, 1800}, {0.9, 3000}, {0.95, 4000}, {0.99, 8000}, {0.999, 20000}}}
	hit := TracePercentiles{P50: 0.02, P90: 0.99, P95: 1, P99: 1, Samples: 100,
		Quantiles: []QuantilePoint{{0.25, 0}, {0.75, 0.6}}} // percentiles merged in
	out := TracePercentiles{P50: 200, P90: 600, P95: 900, P99: 2000, Samples: 100}
	opts := testOptions()
	opts.Traces = map[string]ResolvedTrace{"chutes": {Value: TraceProfile{InputTokens: in, OutputTokens: out, CacheHitFraction: hit, Shapes: map[string]TraceShape{}}.Value()}}
	cfg := mustLoad(t, `
trace "chutes" {
  source  = "s3://bucket/trace.parquet"
  profile = "profiles/chutes.json"
  digest  = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
}
shape "traced" {
  concurrency = 1
  requests    = 1
  lengths {
    input  = trace.chutes.input_tokens
    output = trace.chutes.output_tokens
  }
  prefix {
    groups    = 2
    hit_ratio = trace.chutes.cache_hit_fraction
  }
}
`, opts)
	s := cfg.Shapes["traced"]
	if got := s.Lengths.Input.Points; len(got) != 8 || got[1] != (QuantilePoint{0.25, 400}) || got[7] != (QuantilePoint{0.999, 20000}) {
		t.Errorf("input points %v, want the profile's 8 quantiles", got)
	}
	if s.InputTokens != 1000 || s.Lengths.Input.Median50() != 1000 {
		t.Errorf("input_tokens %d, want the median 1000", s.InputTokens)
	}
	if s.Lengths.Output.Points != nil || len(s.Lengths.Output.Percentiles) != 4 {
		t.Errorf("output %+v: a distribution without quantiles keeps its four percentiles", s.Lengths.Output)
	}
	want := []QuantilePoint{{0.25, 0}, {0.5, 0.02}, {0.75, 0.6}, {0.9, 0.99}, {0.95, 1}, {0.99, 1}}
	if got := s.Prefix.HitRatio.Points; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("hit ratio points %v, want %v (quantiles and percentiles merged)", got, want)
	}
}

// Which executor may profile a trace is what its type declares
// (Capabilities.ProfilesTraces), not its name: a new executor type that
// declares it profiles traces without lang knowing it.
func TestTraceExecutorIsWhatTheTypeDeclares(t *testing.T) {
	src := `
executor "x" {
  type = "TYPE"
}
trace "t" {
  source   = "s3://bucket/t.parquet"
  executor = executor.x
  sample {
    all = true
  }
}
`
	opts := testOptions()
	opts.ExecutorSchemas = map[string]ExecutorSchema{
		"sim":     {Capabilities: BuiltinExecutors["sim"]},
		"cloudy":  {Capabilities: Capabilities{ProfilesTraces: true}},
		"servery": {Capabilities: Capabilities{Tokenizes: true}},
	}
	cfg := mustLoad(t, strings.Replace(src, "TYPE", "cloudy", 1), opts)
	if tr := cfg.Traces["t"]; tr.Executor == nil || !tr.Executor.Capabilities.ProfilesTraces || tr.Sample.Shards != DefaultTraceShards {
		t.Errorf("trace on a type that profiles traces: %+v", tr)
	}
	if got := loadErr(t, strings.Replace(src, "TYPE", "servery", 1), opts); !strings.Contains(got, "cannot profile a trace") {
		t.Errorf("trace on a type that does not profile traces: %s", got)
	}
}
