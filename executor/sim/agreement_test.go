package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/affinity"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/perf"
)

// agreementSpec is a screen over a grid of shapes (closed loops of 1 to 16
// streams, one of 4 whose streams desynchronise, Poisson and constant open
// loops, one capped), gpu overrides of the performance assumptions and
// runtime settings, on the sim executor.
const agreementSpec = `
model "q06" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "r"
  max_context = 4096
}

gpu "l40s" {
  type = "L40S"
}

gpu "slowdecode" {
  type              = "L40S"
  decode_efficiency = 0.2
}

gpu "slowprefill" {
  type        = "L40S"
  prefill_mfu = 0.05
}

runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
  args    = ["--max-num-batched-tokens", "1024"]
}

executor "sim" {
  type    = "sim"
  speedup = %g
}

shape "single" {
  input_tokens  = 512
  output_tokens = 32
  concurrency   = 1
  requests      = 4
}

shape "burst" {
  input_tokens  = 1500
  output_tokens = 24
  concurrency   = 8
  requests      = 16
}

shape "busy" {
  input_tokens  = 256
  output_tokens = 48
  concurrency   = 16
  requests      = 32
}

shape "desync" {
  input_tokens  = 512
  output_tokens = 32
  concurrency   = 4
  requests      = 16
}

shape "poisson" {
  input_tokens  = 384
  output_tokens = 32
  concurrency   = 32
  request_rate  = 40
  requests      = 32
}

shape "capped" {
  input_tokens  = 256
  output_tokens = 32
  concurrency   = 4
  request_rate  = 200
  arrival       = "constant"
  requests      = 24
}

screen "grid" {
  models   = [model.q06]
  shapes   = [%s]
  gpus     = [%s]
  runtime  = runtime.vllm
  executor = executor.sim
  runs     = 1
  seed     = 7
}
`

// planSpec writes and plans the agreement spec.
func planSpec(t *testing.T, speedup float64, shapes, gpus string) *planner.Plan {
	t.Helper()
	return planText(t, fmt.Sprintf(agreementSpec, speedup, shapes, gpus))
}

// planText writes spec as a spec directory and plans it.
func planText(t *testing.T, spec string) *planner.Plan {
	t.Helper()
	return planFiles(t, map[string]string{"main.hcl": spec})
}

// planFiles writes files (name to content) as a spec directory and plans
// it.
func planFiles(t *testing.T, files map[string]string) *planner.Plan {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, diags := lang.Load(dir, lang.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	p, diags := planner.Build(cfg, nil, planner.Options{})
	if diags.HasErrors() || p.HasErrors() {
		t.Fatalf("%v %+v", diags, p.Preflight)
	}
	return p
}

// measured is one metric of a simulated run next to the plan's figure.
type measured struct {
	name            string
	got, want, tolr float64
}

// runLane deploys a lane's deployment on the sim executor, runs run 1 and
// returns the metrics to compare, with simulated time scaled back by the
// speedup and the loopback offset (transportOffset) taken off the sim's
// TTFT and latency, and the engine's own report of lateness (a reason to
// skip when the figures disagree, or "").
func runLane(t *testing.T, x executor.Executor, l *planner.Lane, speedup float64) ([]measured, string) {
	t.Helper()
	ctx := context.Background()
	off := transportOffset(t, l, speedup)
	starved := affinity.Starved()
	s, err := x.Deploy(ctx, executor.DeploymentFor(l, "test", t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = x.Teardown(ctx, s) }()
	res, err := x.Run(ctx, s, executor.RunSpecFor(l, 1))
	if err != nil {
		t.Fatal(err)
	}
	srv := x.(*Executor).servers[s.Handle]
	lateness := ""
	if n, late := srv.Engine.Lateness(time.Millisecond); late > 0.02 {
		lateness = fmt.Sprintf("the simulated engine ended %.0f%% of its %d steps over 1 ms late: the machine is too busy for a timing comparison; rerun on an idle machine", late*100, n)
	}
	if st := starved(); lateness == "" && st > 0.10 {
		lateness = fmt.Sprintf("tasks on this machine waited for a CPU %.0f%% of the run's time (/proc/pressure/cpu): too busy for a timing comparison; rerun on an idle machine", 100*st)
	}
	sm, e := res.Summary, l.Estimate.Estimate
	var scheduled *perf.Estimate
	var extra []measured
	if in := l.Inputs; in.RequestRate <= 0 && in.Concurrency > 1 {
		// The model with the client's turnaround (last token to the
		// stream's next send) as measured: a request sent later into a
		// step it waits for anyway has a shorter TTFT.
		load := l.PerfLoad()
		load.TurnaroundMs = turnaround(res.Records, in.Concurrency) * speedup
		if e, err = l.Perf.Estimate(load, l.Runs); err != nil {
			t.Fatal(err)
		}
		// A closed loop's TTFT falls in groups (the requests whose prompt
		// ends in the first prefill chunk of a wave, the second, ...), so
		// its median can sit on the edge between two of them, where a
		// fraction of a millisecond moves it a whole chunk: the mean is
		// compared too, which does not jump.
		st, err := l.Perf.Run(load)
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, measured{"ttft mean", sm.TTFTMs.Mean*speedup - off, st.TTFT.Mean, 0})
		t.Logf("%s: client turnaround %.3f ms; the plan (turnaround 0) says ttft p50 %.3f p95 %.3f, the model with it %.3f and %.3f",
			l.Key, load.TurnaroundMs, l.Estimate.TTFTMs, l.Estimate.TTFTP95Ms, e.TTFTMs, e.TTFTP95Ms)
	}
	if in := l.Inputs; in.RequestRate > 0 {
		// The model at the instants the engine saw the requests: the load
		// generator's open-loop timers fire late (dispatch delay, 0.1-0.8
		// ms) and the loopback adds 0.05-0.1 ms, and a request that
		// arrives late may miss the step it was scheduled to join, which
		// is the client's error, not the engine's. Arrivals keep real time
		// while the engine's is scaled, so the sends are scaled too.
		load := perf.Load{InputTokens: in.InputTokens, OutputTokens: in.OutputTokens, Concurrency: in.Concurrency,
			RequestRate: in.RequestRate / speedup, Arrival: in.Arrival, Burstiness: in.Burstiness, Requests: in.Requests, Warmup: in.Warmup, Seed: in.Seed}
		at, err := l.Perf.Estimate(load, 1)
		if err != nil {
			t.Fatal(err)
		}
		scheduled = &at
		load.Sends = arrivalOffsets(t, srv.Engine, in.Requests, speedup)
		if e, err = l.Perf.Estimate(load, 1); err != nil {
			t.Fatal(err)
		}
		delay := loadgen.Dist{}
		if sm.DispatchDelayMs != nil {
			delay = *sm.DispatchDelayMs
		}
		t.Logf("%s: the model at the scheduled sends: ttft p50 %.3f p95 %.3f; at the engine's arrivals %.3f and %.3f (dispatch delay p50 %.3f ms, max %.3f ms)",
			l.Key, scheduled.TTFTMs, scheduled.TTFTP95Ms, e.TTFTMs, e.TTFTP95Ms, delay.P50, delay.Max)
	}
	if sm.Succeeded != l.Inputs.Requests {
		t.Fatalf("%s: %d of %d requests succeeded: %v", l.Key, sm.Succeeded, l.Inputs.Requests, sm.Failures)
	}
	// The engine's own histograms of a request's time queued and
	// prefilling (vLLM's request_queue_time and request_prefill_time)
	// against the plan's parts of the TTFT, where a part is long enough
	// for its timers to measure (perf.TTFTParts).
	if v, parts := res.ServerView, e.TTFTParts; v != nil && parts != nil {
		for _, c := range []struct {
			name string
			d    *loadgen.ServerDist
			want float64
		}{{"queued mean", v.QueueMs, parts.QueuedMs}, {"prefill mean", v.PrefillMs, parts.PrefillMs}} {
			if c.d != nil && c.want >= 10 {
				extra = append(extra, measured{c.name, c.d.Mean * speedup, c.want, 0})
			}
		}
	}
	if scheduled != nil {
		// Throughput is also held to the model at the scheduled sends,
		// which the engine's own pace cannot feed back into.
		extra = append(extra, measured{"output throughput at the schedule", sm.OutputTokenThroughput / speedup, scheduled.OutputTokenThroughput, 0})
	}
	return append([]measured{
		{"ttft p50", sm.TTFTMs.P50*speedup - off, e.TTFTMs, 0},
		{"ttft p95", sm.TTFTMs.P95*speedup - off, e.TTFTP95Ms, 0},
		{"tpot p50", sm.TPOTMs.P50 * speedup, e.TPOTMs, 0},
		{"tpot p95", sm.TPOTMs.P95 * speedup, e.TPOTP95Ms, 0},
		{"itl p50", sm.ITLMs.P50 * speedup, e.ITLP50Ms, 0},
		{"latency p50", sm.LatencyMs.P50*speedup - off, e.LatencyMs, 0},
		{"latency p95", sm.LatencyMs.P95*speedup - off, e.LatencyP95Ms, 0},
		{"output throughput", sm.OutputTokenThroughput / speedup, e.OutputTokenThroughput, 0},
	}, extra...), lateness
}

// arrivalOffsets are the last n requests' arrivals at the engine (its
// own stamps, Engine.Arrivals) in seconds of the engine's time from the
// first of them: the instants the engine saw the measured requests, which
// the model then replays. A shift of every send by the same time changes
// nothing in an open loop on an idle engine.
func arrivalOffsets(t *testing.T, e *Engine, n int, speedup float64) []float64 {
	t.Helper()
	arr := e.Arrivals()
	if len(arr) < n {
		t.Fatalf("the engine saw %d requests, fewer than the %d measured", len(arr), n)
	}
	arr = arr[len(arr)-n:]
	out := make([]float64, n)
	for i, a := range arr {
		out[i] = a.Sub(arr[0]).Seconds() * speedup
	}
	return out
}

// turnaround is the closed loop's median time (ms, real) from a
// response's last token to the next send it frees: after the c opening
// sends, the k-th send follows the k-th completion.
func turnaround(recs []loadgen.Record, c int) float64 {
	var sends, lasts []int64
	for _, r := range recs {
		if !r.Warmup {
			sends, lasts = append(sends, r.SentNs), append(lasts, r.LastTokenNs)
		}
	}
	slices.Sort(sends)
	slices.Sort(lasts)
	var gaps []float64
	for k := 0; k+c < len(sends); k++ {
		gaps = append(gaps, float64(sends[k+c]-lasts[k])/1e6)
	}
	if len(gaps) == 0 {
		return 0
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2]
}

// transportOffset is what the loopback HTTP path and the client add to
// every TTFT and latency the load generator measures against the
// simulated engine, which the plan does not model (in the virtual run the
// client sits inside the engine): the request's way in before the engine
// stamps its arrival, the token's way out, the wake-ups on both sides. It
// is measured the way the lane runs (the same executor, load generator,
// concurrency and arrivals) against the engine in constant timing, whose
// true TTFT and ITL are known; the offset is the measured TTFT p50 minus
// the configured one, in the engine's time (ms).
func transportOffset(t *testing.T, l *planner.Lane, speedup float64) float64 {
	t.Helper()
	e := l.Estimate.Estimate
	ttft := time.Duration(e.TTFTMs / speedup * float64(time.Millisecond)).Round(time.Microsecond)
	itl := time.Duration(e.ITLP50Ms / speedup * float64(time.Millisecond)).Round(time.Microsecond)
	x, err := New(Schema().Resolve(map[string]any{"timing": "constant", "ttft": ttft.String(), "itl": itl.String()}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := x.Deploy(ctx, executor.DeploymentFor(l, "baseline", t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = x.Teardown(ctx, s) }()
	res, err := x.Run(ctx, s, executor.RunSpecFor(l, 1))
	if err != nil {
		t.Fatal(err)
	}
	off := (res.Summary.TTFTMs.P50 - float64(ttft)/1e6) * speedup
	t.Logf("%s: loopback offset %.3f ms (constant timing: ttft %s measured p50 %.3f ms, p95 %.3f ms)", l.Key, off, ttft, res.Summary.TTFTMs.P50, res.Summary.TTFTMs.P95)
	return off
}

// absFloorMs is the absolute difference below which two latencies agree:
// the loopback offset taken out is the constant-timing run's median, and a
// run's p95 also meets the transport's own tail (0.3 ms seen on a quiet
// machine in a clean-clone make test), as the fidelity harness's 0.5 ms.
const absFloorMs = 0.5

// Outside `make timing` (INFERCRANE_TIMING_STRICT=1 on an idle machine)
// the two clocks are compared at tolerances a loaded two-core CI machine
// holds: at least looseTolerance relative and looseFloorMs absolute. A
// model gap (a missed prefill, a decode step of the wrong size) still
// fails there; the 3% claims are `make timing`'s (docs/testing.md). CI
// failed once on a TP lane's TTFT p50 measured 1.45 ms (7.5%) under its
// 19.4 ms estimate on both tries, the loopback offset taken off it
// measured 1.4-1.7 ms on that loaded machine: noise, not the model.
const (
	looseTolerance = 0.20
	looseFloorMs   = 3.0
)

// strictTiming reports whether the timing tests compare at their own
// tolerances (make timing) rather than the loose ones of make test.
func strictTiming() bool { return os.Getenv("INFERCRANE_TIMING_STRICT") == "1" }

// checkAgreement compares each metric within tol (relative; widened to
// looseTolerance outside make timing) and returns the disagreements.
func checkAgreement(t *testing.T, key string, ms []measured, tol float64, only ...string) (problems []string) {
	t.Helper()
	floor := absFloorMs
	if !strictTiming() {
		tol, floor = math.Max(tol, looseTolerance), looseFloorMs
	}
	for _, m := range ms {
		if len(only) > 0 && !contains(only, m.name) {
			continue
		}
		rel := math.Abs(m.got-m.want) / m.want
		t.Logf("%s %s: sim %.3f, plan %.3f (%+.1f%%)", key, m.name, m.got, m.want, 100*(m.got-m.want)/m.want)
		// A latency within absFloorMs agrees whatever its relative error:
		// below that the loopback HTTP round trip and the timers, not the
		// model, decide (a 7 ms TTFT measured 0.22 ms long is 3.1%).
		if rel > tol && !(strings.HasSuffix(m.name, "p50") || strings.HasSuffix(m.name, "p95")) || rel > tol && math.Abs(m.got-m.want) > floor {
			problems = append(problems, fmt.Sprintf("%s: %s measured %.3f, the plan says %.3f: %.1f%% off (tolerance %.0f%%)", key, m.name, m.got, m.want, rel*100, tol*100))
		}
	}
	return problems
}

// checkSpreadMedian compares the TTFT p50 of a jittered lane. The jitter
// spreads TTFT over spread ms (the plan's p95 less its p50), and the
// median sits where the requests' delays are steepest: outside `make
// timing` a few milliseconds of a loaded machine's scheduling move it by
// more than looseTolerance of a 15 ms p50 (CI measured 18.6 and 20.2 ms
// against a planned 15.2, p95 and everything else within 3%; a full make
// test on a two-core machine 17.2 and 17.7 ms against 12.6 on both tries,
// a spread of 11.8 ms, the rest within 4% and the package passing alone).
// There it agrees within looseTolerance or half the spread, whichever is
// wider; a sim without the jitter still fails on the p95 (half the
// planned).
func checkSpreadMedian(t *testing.T, key string, ms []measured, spread float64) []string {
	t.Helper()
	if strictTiming() {
		return checkAgreement(t, key, ms, 0.05, "ttft p50")
	}
	for _, m := range ms {
		if m.name != "ttft p50" {
			continue
		}
		diff := math.Abs(m.got - m.want)
		allowed := math.Max(math.Max(looseTolerance*m.want, looseFloorMs), 0.5*spread)
		t.Logf("%s %s: sim %.3f, plan %.3f (%+.3f ms; %.3f ms allowed for a spread of %.1f ms)", key, m.name, m.got, m.want, m.got-m.want, allowed, spread)
		if diff > allowed {
			return []string{fmt.Sprintf("%s: ttft p50 measured %.3f, the plan says %.3f: %.3f ms off (%.3f ms allowed)", key, m.got, m.want, diff, allowed)}
		}
	}
	return nil
}

// report fails on the problems, or skips when the engine itself reported
// that it could not keep time.
func report(t *testing.T, problems []string, lateness string) {
	t.Helper()
	if len(problems) > 0 && lateness != "" {
		t.Skipf("%s (%d disagreements, e.g. %s)", lateness, len(problems), problems[0])
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestSimulatedApplyReproducesThePlan is the "one model, two clocks"
// agreement: over a grid of shapes, concurrencies, open-loop rates and
// gpu overrides, a simulated apply of each lane (the load generator
// against the simulated engine, through the sim executor) measures what
// the plan estimated, within 3%: every figure, TTFT included, once the
// loopback offset the plan does not model (transportOffset, 0.1-0.4 ms)
// is taken off the sim's TTFT and latency.
func TestSimulatedApplyReproducesThePlan(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test; runs without -short")
	}
	if raceEnabled {
		t.Skip("the race detector slows the client and engine too much for a 3% timing comparison")
	}
	const speedup = 0.5
	p := planSpec(t, speedup, "shape.single, shape.burst, shape.busy, shape.poisson, shape.capped", "gpu.l40s")
	// Four streams that desynchronise (one ahead, three together), on a
	// GPU whose steps are long beside the 2 ms request overhead, so that
	// the client's jitter (0.1-1 ms) does not decide which step a request
	// joins: with decode steps of 3 ms it sometimes split the three, in the
	// engine as it would on vLLM, but not in a model of a steady client.
	lanes := append(p.Lanes, planSpec(t, speedup, "shape.desync", "gpu.slowdecode").Lanes...)
	x, err := New(Schema().Resolve(map[string]any{"speedup": float64(speedup)}))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lanes {
		t.Run(l.Shape, func(t *testing.T) {
			agreeOnSecondTry(t, x, l, speedup, func(ms []measured) []string { return checkAgreement(t, l.Key, ms, 0.03) })
		})
	}
}

// agreeOnSecondTry runs lane l on the sim and reports the disagreements
// with the plan that check finds, after one more run when the first
// disagrees: a small lane's p95 is its slowest
// request, which one scheduling hiccup of a loaded machine decides (the
// single lane's TTFT p95 1.1 ms over in a full make test, every other
// figure agreeing), and the opening of closed-loop streams is a race that
// can settle them in another steady pattern (cached sessions at four
// streams: TTFT p50 -23.5% in one full make test, +1.3% in others); a
// model gap disagrees on both runs.
func agreeOnSecondTry(t *testing.T, x executor.Executor, l *planner.Lane, speedup float64, check func([]measured) []string) {
	t.Helper()
	ms, late := runLane(t, x, l, speedup)
	problems := check(ms)
	if len(problems) > 0 {
		t.Logf("%s: disagreed, run again: %s", l.Key, strings.Join(problems, "; "))
		ms, late = runLane(t, x, l, speedup)
		problems = check(ms)
	}
	report(t, problems, late)
}

// TestSimReproducesTheRequestJitter: a calibration's request jitter (a
// spread of each request's way to the engine, drawn from the golden-ratio
// sequence) reaches the simulated engine through the plan, and the two
// clocks agree on the spread it gives TTFT, though the engine numbers
// every request it served (warmups and earlier runs included) where the
// plan numbers a run's from 0: TTFT p50 and p95 within 5%, the rest within
// 3%, on closed loops of 4 and 16 streams and an open loop.
func TestSimReproducesTheRequestJitter(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test; runs without -short")
	}
	if raceEnabled {
		t.Skip("the race detector slows the client and engine too much for a timing comparison")
	}
	const speedup = 0.5
	g, ok := perf.LookupGPU("L40S")
	if !ok {
		t.Fatal("no L40S in the catalog")
	}
	p := perf.ParamsOf(perf.DefaultAssumptions(g))
	p.RequestJitterMs = 3
	c := &perf.Calibration{SchemaVersion: perf.CalibrationSchema, GeneratedAt: "2026-01-01T00:00:00Z", InfercraneVersion: "test",
		Fits: []perf.CalibrationFit{{GPUType: "L40S", Engine: "vllm", Version: "0.22.1", Source: "records", ModelRevision: perf.ModelRevision, Params: p, Start: p,
			Fit: perf.FitResult{Residuals: map[string]perf.Residual{}}}}}
	c.Digest = c.ComputeDigest()
	cal, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	gpu := fmt.Sprintf("gpu \"jittery\" {\n  type               = \"L40S\"\n  calibration        = \"cal.json\"\n  calibration_digest = %q\n}\n", c.Digest)
	plan := planFiles(t, map[string]string{"main.hcl": fmt.Sprintf(agreementSpec, speedup, "shape.desync, shape.busy, shape.poisson", "gpu.jittery"),
		"gpu.hcl": gpu, "cal.json": string(cal)})
	x, err := New(Schema().Resolve(map[string]any{"speedup": float64(speedup)}))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range plan.Lanes {
		if l.Perf == nil || l.Perf.Hardware.Assume.RequestJitterMs != 3 || l.Calibration == nil {
			t.Fatalf("lane %s does not carry the calibration's jitter: %+v", l.Key, l.Perf)
		}
		if e := l.Estimate; !(e.TTFTP95Ms > 1.05*e.TTFTMs) {
			t.Errorf("%s: planned TTFT p50 %.2f ms, p95 %.2f ms: the jitter must spread TTFT", l.Key, e.TTFTMs, e.TTFTP95Ms)
		}
		t.Run(l.Shape, func(t *testing.T) {
			agreeOnSecondTry(t, x, l, speedup, func(ms []measured) []string {
				var rest []string
				for _, m := range ms {
					if !strings.HasPrefix(m.name, "ttft") {
						rest = append(rest, m.name)
					}
				}
				problems := append(checkAgreement(t, l.Key, ms, 0.05, "ttft p95"), checkAgreement(t, l.Key, ms, 0.03, rest...)...)
				return append(problems, checkSpreadMedian(t, l.Key, ms, l.Estimate.TTFTP95Ms-l.Estimate.TTFTMs)...)
			})
		})
	}
}

// TestSimReproducesGPUOverrides (issue 12): a gpu block's overrides of the
// assumptions reach the simulated engine through the plan, so the sim's
// TPOT, TTFT and throughput match the plan's estimate (5% TPOT and
// throughput, 10% TTFT p50) for each override; before the engine read the
// catalog's defaults, decode_efficiency = 0.2 planned 9.43 ms TPOT and
// measured 3.11 ms.
func TestSimReproducesGPUOverrides(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test; runs without -short")
	}
	const speedup = 0.5
	p := planSpec(t, speedup, "shape.busy", "gpu.l40s, gpu.slowdecode, gpu.slowprefill")
	x, err := New(Schema().Resolve(map[string]any{"speedup": float64(speedup)}))
	if err != nil {
		t.Fatal(err)
	}
	tpot := map[string]float64{}
	for _, l := range p.Lanes {
		tpot[l.GPU] = l.Estimate.TPOTMs
		t.Run(l.GPU, func(t *testing.T) {
			ms, late := runLane(t, x, l, speedup)
			problems := checkAgreement(t, l.Key, ms, 0.05, "tpot p50", "output throughput")
			report(t, append(problems, checkAgreement(t, l.Key, ms, 0.10, "ttft p50")...), late)
		})
	}
	if !(tpot["slowdecode"] > 2*tpot["l40s"]) || strings.Contains(fmt.Sprint(tpot), "NaN") {
		t.Errorf("decode_efficiency 0.2 must slow the planned TPOT: %v", tpot)
	}
}
