package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/affinity"
	"github.com/infercrane/infercrane/executor/calibrate"
	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/planner/perf"
)

// hiddenSpec screens two models on a simulated L40S whose assumptions
// come from a calibration file the calibration under test is never shown:
// the sim executor serves the plan's resolved lane, so the engine runs the
// hidden parameters. Screen "fit" (Qwen3-0.6B) is what calibrate sees; its
// shapes make every parameter identifiable: single streams of short and
// long prompts (TTFT's intercept, the request overhead, and its slope in
// prompt tokens, the MFU), and closed loops whose decode batches read a
// small and a large KV cache (decode efficiency against step overhead).
// Screen "transfer" (Qwen3-1.7B) is what the calibration is checked on.
// The engine runs at a quarter of real speed so the HTTP transport's
// fraction of a millisecond (which lands in the request overhead) and a
// busy machine's delays weigh a quarter as much.
const hiddenSpec = `
model "q06" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "r"
  max_context = 4096
}

model "q17" {
  id          = "Qwen/Qwen3-1.7B"
  revision    = "r"
  max_context = 4096
}

gpu "l40s" {
  type               = "L40S"
  calibration        = "hidden.json"
  calibration_digest = "%s"
}

runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
}

executor "sim" {
  type    = "sim"
  speedup = 0.25
}

shape "short" {
  input_tokens  = 128
  output_tokens = 24
  concurrency   = 1
  requests      = 8
}

shape "long" {
  input_tokens  = 3000
  output_tokens = 16
  concurrency   = 1
  requests      = 6
}

shape "busy" {
  input_tokens  = 512
  output_tokens = 64
  concurrency   = 16
  requests      = 16
}

shape "kvheavy" {
  input_tokens  = 2000
  output_tokens = 64
  concurrency   = 16
  requests      = 16
}

shape "mid" {
  input_tokens  = 1000
  output_tokens = 64
  concurrency   = 8
  requests      = 8
}

shape "single" {
  input_tokens  = 2000
  output_tokens = 32
  concurrency   = 1
  requests      = 4
}

screen "fit" {
  models   = [model.q06]
  shapes   = [shape.short, shape.long, shape.busy, shape.kvheavy]
  gpus     = [gpu.l40s]
  runtime  = runtime.vllm
  executor = executor.sim
  runs     = 1
  seed     = 3
}

screen "transfer" {
  models   = [model.q17]
  shapes   = [shape.mid, shape.single]
  gpus     = [gpu.l40s]
  runtime  = runtime.vllm
  executor = executor.sim
  runs     = 1
  seed     = 3
}
`

// writeCalibration writes a one-fit calibration file with parameters p.
func writeCalibration(t *testing.T, path string, p perf.Params) string {
	t.Helper()
	c := &perf.Calibration{SchemaVersion: perf.CalibrationSchema, GeneratedAt: "2026-01-01T00:00:00Z", InfercraneVersion: "test",
		Fits: []perf.CalibrationFit{{GPUType: "L40S", Engine: "vllm", Version: "0.22.1", Source: "hidden", ModelRevision: perf.ModelRevision, Params: p, Start: p,
			Fit: perf.FitResult{Residuals: map[string]perf.Residual{}}}}}
	c.Digest = c.ComputeDigest()
	if err := calibrate.Write(path, c); err != nil {
		t.Fatal(err)
	}
	return c.Digest
}

// hidden are the parameters the simulated engine runs and calibrate is
// not told.
var hidden = perf.Params{PrefillMFU: 0.55, DecodeEfficiency: 0.62, StepOverheadMs: 2.4, RequestOverheadMs: 12}

// hiddenRun is an apply of hiddenSpec.
type hiddenRun struct {
	dir string
	// starved is the fraction of the apply's time tasks waited for a CPU.
	starved float64
}

// timingSkip skips a test whose problems a machine too busy to keep the
// simulated engine's time explains: the engine reported late steps, or
// tasks waited for a CPU over 10% of the apply (affinity.Starved).
func timingSkip(t *testing.T, run hiddenRun, problems []string) {
	t.Helper()
	if len(problems) == 0 {
		return
	}
	if late := engineLateness(t, run.dir); late != "" {
		t.Skipf("%s (%s)", late, strings.Join(problems, "; "))
	}
	if run.starved > 0.10 {
		t.Skipf("tasks on this machine waited for a CPU %.0f%% of the simulated screen's time (/proc/pressure/cpu): too busy to time it; rerun on an idle machine (%s)", 100*run.starved, strings.Join(problems, "; "))
	}
}

// jitterNoiseMs is the request jitter a fit may read from the timing noise
// of a simulated engine that has none, run in real time.
const jitterNoiseMs = 0.5

// timingTolerance is tol (the claim: 5% recovered, 10% transferred) under
// `make timing` (INFERCRANE_TIMING_STRICT=1, on an idle machine), and at
// least 20% in make test: the guards above skip on an engine that reported
// late steps or CPU pressure over 10%, but a loaded machine's delays can
// stay under both (as they did for the sim's agreement tests, 1a4da64). A
// fit that misses a parameter's role (a prefill read as decode, an
// overhead counted twice) is off by more.
func timingTolerance(tol float64) float64 {
	if os.Getenv("INFERCRANE_TIMING_STRICT") == "1" {
		return tol
	}
	return math.Max(tol, 0.20)
}

// TestCalibrateRecoversHiddenParameters runs a simulated screen with
// parameters calibrate is not told, calibrates from its evidence (from the
// aggregates, and from the per-request records with -state), and checks
// that every parameter is identified and recovered within 5% and that
// predictions for shapes the fit never saw are within 5% of the hidden
// model's.
//
// Subtest transfer checks the issue's "calibrated from one model's lanes,
// the other model's lanes are within 10%": calibrated from Qwen3-0.6B's
// lanes alone, Qwen3-1.7B's lanes on the same simulated GPU are predicted
// within 10% (calibrate -model and -check).
func TestCalibrateRecoversHiddenParameters(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a simulated screen in real time")
	}
	dir := t.TempDir()
	digest := writeCalibration(t, filepath.Join(dir, "hidden.json"), hidden)
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(fmt.Sprintf(hiddenSpec, digest)), 0o644); err != nil {
		t.Fatal(err)
	}
	starved := affinity.Starved()
	if code, out, errOut := runCLI(t, "apply", "-auto-approve", dir); code != 0 {
		t.Fatalf("apply exit %d:\n%s\n%s", code, out, errOut)
	}
	run := hiddenRun{dir: dir, starved: starved()}
	evidence := filepath.Join(run.dir, ".infercrane", "reports", "fit.evidence.json")
	// The lanes share one server with prefix caching on (vLLM 0.22.1's
	// default): no lane may find another's prompts in its cache, or its
	// TTFT is not its shape's (the loadgen salts prompts with the lane).
	if hits := prefixCacheHits(t, evidence); hits != 0 {
		t.Errorf("the server's prefix cache served %.0f prompt tokens across the fit screen's lanes; want 0", hits)
	}
	for _, mode := range []struct{ name, state string }{{"aggregates", ""}, {"records", filepath.Join(run.dir, ".infercrane")}} {
		t.Run(mode.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "fitted.json")
			args := []string{"calibrate", "-out", out, evidence}
			if mode.state != "" {
				args = []string{"calibrate", "-state", mode.state, "-out", out, evidence}
			}
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("calibrate exit %d:\n%s\n%s", code, stdout, stderr)
			}
			t.Log(stdout)
			data, _ := os.ReadFile(out)
			c, err := perf.ParseCalibration(data)
			if err != nil || len(c.Fits) != 1 {
				t.Fatalf("calibration file: %v %+v", err, c)
			}
			f := c.Fits[0]
			if f.Source != mode.name || f.Lanes != 4 || f.Runs != 4 || !strings.Contains(stdout, "calibration_digest = \""+c.Digest+"\"") {
				t.Errorf("fit %s, %d lanes, %d runs; stdout %s", f.Source, f.Lanes, f.Runs, stdout)
			}
			// The hidden engine has no request jitter (its TTFTs spread only
			// by the step loop's phases), but it runs in real time on this
			// machine, whose timing noise a fit may read as a jitter of a few
			// tenths of a millisecond (0.29 ms, ±67%, on a busy machine):
			// the other four parameters must be identified, and the jitter
			// be none or under jitterNoiseMs, identified or not.
			var unidentified []string
			for _, u := range f.Unidentified() {
				if u != "request_jitter_ms" {
					unidentified = append(unidentified, u)
				}
			}
			if len(unidentified) > 0 {
				t.Errorf("the fit screen's shapes must identify every parameter but the jitter; not identified: %v", unidentified)
			}
			var problems []string
			if j := f.Params.RequestJitterMs; j > jitterNoiseMs {
				problems = append(problems, fmt.Sprintf("request_jitter_ms: fitted %.3g for an engine without one (at most %.1f ms of timing noise)", j, jitterNoiseMs))
			}
			// What the client measures on top of the engine's own request
			// overhead is the HTTP transport (client TTFT over the server's
			// own, a fraction of a millisecond, more on a busy machine): the
			// fitted request overhead is the hidden one plus it.
			transport := transportMs(t, evidence)
			t.Logf("request_overhead_ms: fitted %.4g, hidden %.4g plus the measured transport %.3f ms", f.Params.RequestOverheadMs, hidden.RequestOverheadMs, transport)
			for name, pair := range map[string][2]float64{
				"prefill_mfu": {f.Params.PrefillMFU, hidden.PrefillMFU}, "decode_efficiency": {f.Params.DecodeEfficiency, hidden.DecodeEfficiency},
				"step_overhead_ms": {f.Params.StepOverheadMs, hidden.StepOverheadMs}, "request_overhead_ms": {f.Params.RequestOverheadMs, hidden.RequestOverheadMs + transport},
			} {
				rel := pair[0]/pair[1] - 1
				t.Logf("%s: fitted %.4g, hidden %.4g (%+.1f%%)", name, pair[0], pair[1], 100*rel)
				if math.Abs(rel) > timingTolerance(0.05) {
					problems = append(problems, fmt.Sprintf("%s: fitted %.4g, hidden %.4g (%+.1f%%)", name, pair[0], pair[1], 100*rel))
				}
			}
			problems = append(problems, unseenShapes(t, hidden, f.Params)...)
			// The fit must reproduce what it was fitted to.
			if f.Fit.MAPE > timingTolerance(0.05) {
				problems = append(problems, fmt.Sprintf("the fit reproduces the measured figures with %.1f%% MAPE, want at most 5%%", 100*f.Fit.MAPE))
			}
			timingSkip(t, run, problems)
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
	t.Run("transfer", func(t *testing.T) { transferAcrossModels(t, run) })
}

// transferAcrossModels: calibrated from one model's lanes (Qwen3-0.6B, the
// fit screen), the other model's lanes (Qwen3-1.7B, the transfer screen,
// on the same simulated GPU) are predicted within 10% (calibrate -check).
func transferAcrossModels(t *testing.T, run hiddenRun) {
	reports := filepath.Join(run.dir, ".infercrane", "reports")
	out := filepath.Join(t.TempDir(), "q06.json")
	if code, stdout, stderr := runCLI(t, "calibrate", "-model", "qwen/qwen3-0.6b", "-out", out, filepath.Join(reports, "fit.evidence.json"), filepath.Join(reports, "transfer.evidence.json")); code != 0 {
		t.Fatalf("calibrate exit %d:\n%s\n%s", code, stdout, stderr)
	} else if !strings.Contains(stdout, "4 lanes, 4 runs") {
		t.Errorf("-model must leave the other model's lanes out:\n%s", stdout)
	}
	code, stdout, stderr := runCLI(t, "calibrate", "-check", out, filepath.Join(reports, "transfer.evidence.json"))
	if code != 0 {
		t.Fatalf("calibrate -check exit %d:\n%s\n%s", code, stdout, stderr)
	}
	t.Log(stdout)
	if !strings.Contains(stdout, "predicts 2 lanes, 2 runs (aggregates)") {
		t.Errorf("check summary:\n%s", stdout)
	}
	data, _ := os.ReadFile(out)
	cal, err := perf.ParseCalibration(data)
	if err != nil {
		t.Fatal(err)
	}
	res, err := calibrate.CheckCalibration([]string{filepath.Join(reports, "transfer.evidence.json")}, calibrate.Options{}, cal)
	if err != nil || len(res.Fits) != 1 {
		t.Fatalf("check: %v %+v", err, res)
	}
	var problems []string
	n := 0
	for _, l := range res.Fits[0].Fit.Lanes {
		for _, m := range []string{"ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "itl_p50_ms", "latency_p50_ms", "latency_p95_ms", "output_token_throughput"} {
			meas, ok := l.Measured[m]
			if !ok {
				continue
			}
			n++
			if rel := l.Predicted[m]/meas - 1; math.Abs(rel) > timingTolerance(0.10) {
				problems = append(problems, fmt.Sprintf("%s %s: predicted %.4g, measured %.4g (%+.1f%%)", l.Name, m, l.Predicted[m], meas, 100*rel))
			}
		}
	}
	if n < 12 {
		t.Fatalf("only %d figures of the other model compared", n)
	}
	timingSkip(t, run, problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// evidenceRuns is the part of an evidence document these tests read: the
// sim's speedup and each campaign's concurrency and runs (server metrics
// and the client-versus-server TTFT checks).
type evidenceRuns struct {
	Environment struct {
		ServerInfo map[string]string `json:"server_info"`
	} `json:"environment"`
	Models []struct {
		Campaigns []struct {
			Workload struct {
				Concurrency int `json:"concurrency"`
			} `json:"workload"`
			Runs []struct {
				ServerMetrics  map[string]float64 `json:"server_metrics"`
				ClientVsServer struct {
					Checks []struct {
						Metric   string  `json:"metric"`
						Stat     string  `json:"stat"`
						ClientMs float64 `json:"client_ms"`
						ServerMs float64 `json:"server_ms"`
					} `json:"checks"`
				} `json:"client_vs_server"`
			} `json:"runs"`
		} `json:"campaigns"`
	} `json:"models"`
}

// readEvidenceRuns reads an evidence document as evidenceRuns.
func readEvidenceRuns(t *testing.T, path string) *evidenceRuns {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ev evidenceRuns
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	return &ev
}

// transportMs is the mean of what the client's TTFT exceeds the server's
// own by (runs[].client_vs_server, TTFT means) over the single-stream
// lanes of an evidence document, in engine milliseconds (times the sim's
// speedup).
func transportMs(t *testing.T, evidence string) float64 {
	t.Helper()
	ev := readEvidenceRuns(t, evidence)
	speedup, err := strconv.ParseFloat(ev.Environment.ServerInfo["speedup"], 64)
	if err != nil {
		t.Fatalf("server_info speedup: %v", err)
	}
	sum, n := 0.0, 0
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			if c.Workload.Concurrency != 1 {
				continue
			}
			for _, r := range c.Runs {
				for _, ch := range r.ClientVsServer.Checks {
					if ch.Metric == "ttft" && ch.Stat == "mean" {
						sum += ch.ClientMs - ch.ServerMs
						n++
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no single-stream run of the evidence compares its TTFT with the server's")
	}
	return sum / float64(n) * speedup
}

// serverCounter is the largest value of a server counter scraped over an
// evidence document's runs of one model (counters are cumulative over the
// server's life, one server a model), and whether any run had it.
func serverCounter(ev *evidenceRuns, model int, name string) (float64, bool) {
	v, seen := 0.0, false
	for _, c := range ev.Models[model].Campaigns {
		for _, r := range c.Runs {
			if x, ok := r.ServerMetrics[name]; ok {
				v, seen = math.Max(v, x), true
			}
		}
	}
	return v, seen
}

// prefixCacheHits is the tokens the server's prefix cache served over an
// evidence document's runs (vllm:prefix_cache_hits_total).
func prefixCacheHits(t *testing.T, evidence string) float64 {
	t.Helper()
	ev := readEvidenceRuns(t, evidence)
	hits := 0.0
	for m := range ev.Models {
		v, ok := serverCounter(ev, m, "vllm:prefix_cache_hits_total")
		if !ok {
			t.Fatal("the evidence has no vllm:prefix_cache_hits_total: the sim must report its prefix cache")
		}
		hits += v
	}
	return hits
}

// unseenShapes compares predictions with the fitted and the hidden
// parameters on shapes the fit did not see.
func unseenShapes(t *testing.T, hidden, fitted perf.Params) []string {
	t.Helper()
	m, _ := perf.LookupModel("Qwen/Qwen3-0.6B")
	g, _ := perf.LookupGPU("L40S")
	lane := func(p perf.Params) perf.Lane {
		hw := perf.Hardware{GPU: g, Count: 1, BytesPerElem: 2, Assume: p.Apply(perf.DefaultAssumptions(g))}
		l, err := perf.NewLane(m, hw, perf.EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true}, 4096)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	truth, fit := lane(hidden), lane(fitted)
	var problems []string
	worst, worstAt := 0.0, ""
	defer func() { t.Logf("unseen shapes: worst error %+.1f%% (%s)", 100*worst, worstAt) }()
	for _, ld := range []perf.Load{
		{InputTokens: 800, OutputTokens: 200, Concurrency: 8, Requests: 32},
		{InputTokens: 1500, OutputTokens: 100, Concurrency: 4, Requests: 16},
		{InputTokens: 256, OutputTokens: 128, Concurrency: 64, RequestRate: 8, Requests: 400, Seed: 5},
	} {
		want, err1 := truth.Estimate(ld, 1)
		got, err2 := fit.Estimate(ld, 1)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		for _, metric := range []string{"ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "latency_p95_ms", "output_token_throughput"} {
			w, _ := want.Metric(metric)
			g, _ := got.Metric(metric)
			rel := g/w - 1
			if math.Abs(rel) > math.Abs(worst) {
				worst, worstAt = rel, fmt.Sprintf("%d/%d c=%d rate %g %s", ld.InputTokens, ld.OutputTokens, ld.Concurrency, ld.RequestRate, metric)
			}
			// A TTFT is quantised to the step its prefill lands in
			// (docs/calibration.md): parameters a fraction of a percent
			// apart can put a request's prefill one step later (1500/100
			// at four streams: 32.6 ms hidden, 40.3 fitted from a fit
			// within 0.3% on every parameter), so a TTFT within one
			// prefill step of the hidden model's is as close as the
			// model can tell.
			step := 0.0
			if strings.HasPrefix(metric, "ttft") {
				_, p := truth.PrefillChunk(ld.InputTokens)
				step = 1000 * p.Total
			}
			if math.Abs(rel) > timingTolerance(0.05) && math.Abs(g-w) > step {
				problems = append(problems, fmt.Sprintf("unseen %d/%d c=%d rate %g: %s predicted %.4g, hidden model %.4g (%+.1f%%)", ld.InputTokens, ld.OutputTokens, ld.Concurrency, ld.RequestRate, metric, g, w, 100*rel))
			}
		}
	}
	return problems
}

// engineLateness says whether the simulated engine reported that it ended
// its steps late during the screens (a machine too busy to keep time), from
// the infercrane:sim_late_steps_total and _steps_total counters scraped
// after each run.
func engineLateness(t *testing.T, dir string) string {
	t.Helper()
	var late, total float64
	// Every screen's evidence (calibrate's fit and transfer, a capacity
	// test's s): naming fit and transfer here failed the capacity tests
	// on a missing file instead of skipping them on a busy machine.
	files, _ := filepath.Glob(filepath.Join(dir, ".infercrane", "reports", "*.evidence.json"))
	if len(files) == 0 {
		t.Fatalf("no evidence in %s to tell whether the engine kept time", dir)
	}
	for _, file := range files {
		ev := readEvidenceRuns(t, file)
		for m := range ev.Models {
			l, _ := serverCounter(ev, m, "infercrane:sim_late_steps_total")
			n, _ := serverCounter(ev, m, "infercrane:sim_steps_total")
			late, total = late+l, total+n
		}
	}
	if total > 0 && late/total > 0.02 {
		return fmt.Sprintf("the simulated engine ended %.0f%% of its steps over 1 ms late: the machine is too busy for this timing test; rerun on an idle machine", 100*late/total)
	}
	return ""
}

func TestCalibrateUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"calibrate", "x.json"}, exitUsage, "-out FILE is required"},
		{[]string{"calibrate", "-out", "c.json"}, exitUsage, "give at least one EVIDENCE file"},
		{[]string{"calibrate", "-out", filepath.Join(t.TempDir(), "c.json"), filepath.Join(t.TempDir(), "missing.json")}, exitError, "no such file"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
	doc := `{"models": [{"model": "Unknown/Model", "campaigns": [{"profile": "p"}]}]}`
	notEvidence := filepath.Join(t.TempDir(), "plan.json")
	_ = os.WriteFile(notEvidence, []byte(doc), 0o644)
	if code, _, stderr := runCLI(t, "calibrate", "-out", filepath.Join(t.TempDir(), "c.json"), notEvidence); code != exitError || !strings.Contains(stderr, "plan.json is not an evidence document: it has no schema_version") {
		t.Errorf("not evidence: exit %d, %s", code, stderr)
	}
	stamped := `{"schema_version": "` + evidence.SchemaVersion + `", ` + doc[1:]
	d, err := evidence.Digest([]byte(stamped))
	if err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(t.TempDir(), "unknown.evidence.json")
	_ = os.WriteFile(unknown, []byte(stamped[:len(stamped)-1]+`, "digest": "`+d+`"}`), 0o644)
	if code, _, stderr := runCLI(t, "calibrate", "-out", filepath.Join(t.TempDir(), "c.json"), unknown); code != exitError || !strings.Contains(stderr, "not in the model catalog") {
		t.Errorf("unknown model: exit %d, %s", code, stderr)
	}
}

// workloadSpec screens a fixed shape and one whose prompts share prefixes
// in groups (a drawn workload) on the simulated engine.
const workloadSpec = `
model "q" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "r"
  max_context = 4096
}

gpu "l40s" {
  type = "L40S"
}

runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
}

shape "plain" {
  input_tokens  = 512
  output_tokens = 16
  concurrency   = 4
  requests      = 8
}

shape "prefixed" {
  input_tokens      = 2048
  output_tokens     = 16
  template_headroom = 32
  concurrency       = 4
  requests          = 16
  prefix {
    groups        = 4
    shared_tokens = 1024
  }
}

screen "w" {
  models  = [model.q]
  shapes  = [shape.plain, shape.prefixed]
  gpus    = [gpu.l40s]
  runtime = runtime.vllm
  runs    = 1
  seed    = 3
}
`

// calibrate models each lane as the plan's estimator did: checked with
// the catalog's parameters (those the plan used), its predictions are the
// plan's, for a fixed shape and for a drawn workload (records mode, where
// the applied plan gives the sizes the load generator drew and the
// prefixes it found cached).
func TestCalibrateModelsLanesAsThePlanDid(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(workloadSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "apply", "-auto-approve", dir); code != 0 {
		t.Fatalf("apply exit %d:\n%s\n%s", code, out, errOut)
	}
	evidence := filepath.Join(dir, ".infercrane", "reports", "w.evidence.json")
	g, _ := perf.LookupGPU("L40S")
	a := perf.DefaultAssumptions(g)
	fe, _ := perf.FrontEnd("vllm", "0.22.1", "chat") // the catalog's figures for the lanes' runtime
	a.RequestOverheadMs, a.StepOverheadMs = fe.RequestMs, fe.StepOn(g)
	catalog := perf.ParamsOf(a)
	cal := &perf.Calibration{SchemaVersion: perf.CalibrationSchema, Fits: []perf.CalibrationFit{{GPUType: "L40S", Engine: "vllm", Version: "0.22.1", ModelRevision: perf.ModelRevision, Params: catalog}}}
	res, err := calibrate.CheckCalibration([]string{evidence}, calibrate.Options{StateDir: filepath.Join(dir, ".infercrane")}, cal)
	if err != nil || len(res.Fits) != 1 || len(res.Fits[0].Fit.Lanes) != 2 {
		t.Fatalf("check: %v %+v", err, res)
	}
	var ev struct {
		Models []struct {
			Campaigns []struct {
				Profile    string `json:"profile"`
				Prediction struct {
					Metrics []struct {
						Metric    string  `json:"metric"`
						Predicted float64 `json:"predicted"`
					} `json:"metrics"`
				} `json:"prediction"`
			} `json:"campaigns"`
		} `json:"models"`
	}
	data, _ := os.ReadFile(evidence)
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range ev.Models[0].Campaigns {
		var lane *perf.LaneFit
		for i, l := range res.Fits[0].Fit.Lanes {
			if strings.Contains(l.Name, " "+c.Profile+" ") {
				lane = &res.Fits[0].Fit.Lanes[i]
			}
		}
		if lane == nil {
			t.Fatalf("calibrate left lane %s out", c.Profile)
		}
		for _, m := range c.Prediction.Metrics {
			if perf.IsTTFTPart(m.Metric) {
				continue // the server's parts of the TTFT: the report compares them, calibrate fits the aggregate
			}
			got := lane.Predicted[m.Metric]
			n++
			if math.Abs(got/m.Predicted-1) > 0.001 {
				t.Errorf("%s %s: calibrate models %.4g, the plan predicted %.4g", c.Profile, m.Metric, got, m.Predicted)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d figures compared", n)
	}
}

// calibrate fits from the real `vllm bench serve` result make fidelity
// kept (executor/benchresult/testdata: vLLM 0.32's CPU build serving a
// tiny Qwen3, which the catalog does not have: -model-config gives its
// config.json) and checks the fit against the AIPerf exports of the same
// server, reporting the transfer error (issue 27: "calibrate fits from a
// vllm bench serve result and an AIPerf export made by make fidelity, and
// calibrate -check reports the transfer error"). Without -model-config the
// result is left out, naming the flag. The fixtures are fixed files, so
// the figures are exact.
func TestCalibrateFromMakeFidelityOutputs(t *testing.T) {
	dir := filepath.Join("..", "..", "executor", "benchresult", "testdata")
	out := filepath.Join(t.TempDir(), "cpu.json")
	bench := filepath.Join(dir, "vllm-bench-0.32.0-cpu.json")
	config := filepath.Join(dir, "tiny-qwen3", "config.json")

	code, _, stderr := runCLI(t, "calibrate", "-gpu", "CPU", "-engine", "vllm==0.32.0", "-out", out, bench)
	if code == 0 || !strings.Contains(stderr, `model "tiny-qwen3" is not in the model catalog`) || !strings.Contains(stderr, "-model-config FILE") {
		t.Fatalf("a model the catalog lacks, without -model-config: exit %d\n%s", code, stderr)
	}

	code, stdout, stderr := runCLI(t, "calibrate", "-gpu", "CPU", "-engine", "vllm==0.32.0", "-model-config", config, "-out", out, bench)
	if code != 0 {
		t.Fatalf("calibrate from the vllm bench result: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"CPU with vllm 0.32.0: 1 lane, 1 run, from aggregates and results; fit error",
		"measured by vllm bench serve (version not recorded): vllm-bench-0.32.0-cpu.json",
		"tiny-qwen3 vllm-bench-0.32.0-cpu.json  ttft_p50_ms",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("calibrate's output lacks %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = runCLI(t, "calibrate", "-gpu", "CPU", "-engine", "vllm==0.32.0", "-model", "tiny-qwen3", "-model-config", config,
		"-check", out, filepath.Join(dir, "aiperf-0.13.0-cpu", "profile_export.jsonl"), filepath.Join(dir, "aiperf-0.13.0-cpu", "profile_export_aiperf.json"))
	if code != 0 {
		t.Fatalf("calibrate -check on the AIPerf exports: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`(?m)^CPU with vllm 0\.32\.0: \S+ predicts 2 lanes, 2 runs \(aggregates and results\) with \d+\.\d% MAPE \(\d+\.\d% RMS, worst \d+\.\d%\) over 15 figures\.$`).MatchString(stdout) ||
		!strings.Contains(stdout, "tiny-qwen3 profile_export.jsonl        tpot_p50_ms") {
		t.Errorf("calibrate -check does not report the transfer error:\n%s", stdout)
	}
	if !strings.Contains(stderr, "differs from the server's in 9 of 24 records") {
		t.Errorf("calibrate -check does not say AIPerf re-tokenised:\n%s", stderr)
	}

	// GuideLLM 0.8.1's report of the same server (another make fidelity
	// run, on another day: the CPU server decoded faster then).
	code, stdout, stderr = runCLI(t, "calibrate", "-gpu", "CPU", "-engine", "vllm==0.32.0", "-model-config", config,
		"-check", out, filepath.Join(dir, "guidellm-0.8.1-cpu.json"))
	if code != 0 {
		t.Fatalf("calibrate -check on the GuideLLM report: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`(?m)^CPU with vllm 0\.32\.0: \S+ predicts 1 lane, 1 run \(aggregates and results\) with \d+\.\d% MAPE \(\d+\.\d% RMS, worst \d+\.\d%\) over 8 figures\.$`).MatchString(stdout) ||
		!strings.Contains(stdout, "tiny-qwen3 guidellm-0.8.1-cpu.json benchmark 1 (concurrent)  tpot_p50_ms              10.304") {
		t.Errorf("calibrate -check does not report the transfer error to GuideLLM's report:\n%s", stdout)
	}
}

// calibrate says when two of the results it reads sent the same prompts:
// make fidelity's two vllm bench serve runs of the CPU server (24 prompts
// each, the default --seed) would have measured a prefix cache from the
// second on, had they run against one server with prefix caching.
func TestCalibrateNamesResultsThatSentTheSamePrompts(t *testing.T) {
	dir := filepath.Join("..", "..", "executor", "benchresult", "testdata")
	config := filepath.Join(dir, "tiny-qwen3", "config.json")
	out := filepath.Join(t.TempDir(), "cpu.json")
	code, stdout, stderr := runCLI(t, "calibrate", "-gpu", "CPU", "-engine", "vllm==0.32.0", "-model-config", config, "-out", out,
		filepath.Join(dir, "vllm-bench-0.32.0-cpu.json"), filepath.Join(dir, "vllm-bench-0.32.0-cpu-rate8.json"))
	if code != 0 {
		t.Fatalf("calibrate: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"vllm-bench-0.32.0-cpu.json: it and vllm-bench-0.32.0-cpu-rate8.json are vllm bench serve runs of tiny-qwen3 with 24 prompts: under one --seed",
		"vllm-bench-0.32.0-cpu-rate8.json: it and vllm-bench-0.32.0-cpu.json are vllm bench serve runs",
		"give each run its own --seed",
	} {
		if !strings.Contains(stdout+stderr, want) {
			t.Errorf("calibrate does not say %q:\n%s\n%s", want, stdout, stderr)
		}
	}
	code, stdout, stderr = runCLI(t, "calibrate", "-gpu", "CPU", "-engine", "vllm==0.32.0", "-model-config", config, "-out", out,
		filepath.Join(dir, "vllm-bench-0.32.0-cpu.json"))
	if code != 0 || strings.Contains(stdout+stderr, "same prompts") || strings.Contains(stdout+stderr, "--seed") {
		t.Errorf("one result alone: exit %d, and a note of shared prompts:\n%s\n%s", code, stdout, stderr)
	}
}
