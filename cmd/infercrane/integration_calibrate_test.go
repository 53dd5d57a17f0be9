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
	"github.com/infercrane/infercrane/planner"
)

// calibrateScreens put two screens on the local-vllm-cpu example's
// deployment: "fit" (the shape calibration sees) and "check" (a shape with
// twice the prompt that it does not).
const calibrateScreens = `
shape "fit" {
  input_tokens      = 128
  output_tokens     = 32
  template_headroom = 32
  concurrency       = 2
  requests          = 48
  warmup            = 4
}

shape "check" {
  input_tokens      = 256
  output_tokens     = 32
  template_headroom = 32
  concurrency       = 2
  requests          = 48
  warmup            = 4
}

screen "fit" {
  models   = [model.tiny_qwen3]
  shapes   = [shape.fit]
  gpus     = [gpu.cpu]
  runtime  = runtime.vllm_cpu
  executor = executor.local
  runs     = 5
  seed     = 17
}

screen "check" {
  models   = [model.tiny_qwen3]
  shapes   = [shape.check]
  gpus     = [gpu.cpu]
  runtime  = runtime.vllm_cpu
  executor = executor.local
  runs     = 5
  seed     = 17
}
`

// calibrateSpec is the example's model, runtime and executor blocks (its
// gpu block and everything from its first shape on left out) with
// calibrateScreens.
func calibrateSpec(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/local-vllm-cpu/main.hcl")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	i := strings.Index(src, "\nshape ")
	g := strings.Index(src, "gpu \"cpu\" {")
	if i < 0 || g < 0 {
		t.Fatal("examples/local-vllm-cpu/main.hcl has no shape or gpu block to cut at")
	}
	end := g + strings.Index(src[g:], "}\n") + 2
	return src[:g] + src[end:i] + calibrateScreens
}

// TestIntegrationCalibrateVLLM calibrates the performance model on one
// shape of the tiny model served by real vLLM on CPU (from the state's
// per-request records), then plans with the calibration and compares the
// prediction for the other shape (twice the prompt) with what vLLM
// measured: TTFT p50 and p95, TPOT p50 and output throughput within 15%.
// TTFT is gated since the model desynchronises closed-loop streams as
// vLLM does (planner.Engine); before, it kept them in lockstep and this test
// could only log TTFT (p50 +189%).
func TestIntegrationCalibrateVLLM(t *testing.T) {
	venv, model := integrationEnv(t)
	bin := buildInfercrane(t)
	spec := filepath.Join(t.TempDir(), "spec")
	if err := os.MkdirAll(spec, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(spec, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.hcl", calibrateSpec(t))
	write("gpu.hcl", "gpu \"cpu\" {\n  type = \"CPU\"\n}\n")
	env := []string{
		"PATH=" + filepath.Join(venv, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"INFERCRANE_VAR_model_dir=" + model,
	}
	start := time.Now()
	starved := affinity.Starved()
	out, code := runBinary(t, bin, env, "apply", "-auto-approve", spec)
	stalled := starved()
	t.Logf("apply took %s (tasks waited for a CPU %.0f%% of it):\n%s", time.Since(start).Round(time.Second), 100*stalled, tail(out, 3000))
	if code != 0 {
		t.Fatalf("apply exited %d", code)
	}
	state := filepath.Join(spec, ".infercrane")
	reports := filepath.Join(state, "reports")
	calFile := filepath.Join(spec, "cpu.json")
	out, code = runBinary(t, bin, env, "calibrate", "-state", state, "-out", calFile, filepath.Join(reports, "fit.evidence.json"))
	t.Logf("calibrate:\n%s", out)
	if code != 0 {
		t.Fatalf("calibrate exited %d", code)
	}
	data, _ := os.ReadFile(calFile)
	cal, err := planner.ParseCalibration(data)
	if err != nil {
		t.Fatal(err)
	}
	write("gpu.hcl", fmt.Sprintf("gpu \"cpu\" {\n  type               = \"CPU\"\n  calibration        = \"cpu.json\"\n  calibration_digest = %q\n}\n", cal.Digest))
	out, code = runBinary(t, bin, env, "plan", "-json", spec)
	if code != 0 {
		t.Fatalf("plan exited %d:\n%s", code, out)
	}
	var plan struct {
		Lanes []struct {
			Key         string               `json:"key"`
			Estimate    planner.PerfEstimate `json:"estimate"`
			Calibration json.RawMessage      `json:"calibration"`
		} `json:"lanes"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &plan); err != nil {
		t.Fatalf("plan -json: %v\n%s", err, out)
	}
	var est *planner.PerfEstimate
	for i, l := range plan.Lanes {
		if strings.HasPrefix(l.Key, "check/") {
			if len(l.Calibration) == 0 {
				t.Fatalf("the check lane is not calibrated: %s", out)
			}
			est = &plan.Lanes[i].Estimate
		}
	}
	if est == nil {
		t.Fatalf("no check lane in the plan:\n%s", out)
	}
	raw, err := os.ReadFile(filepath.Join(reports, "check.evidence.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Models []struct {
			Campaigns []struct {
				Aggregate struct {
					TTFTP50Ms             float64 `json:"ttft_p50_ms"`
					TTFTP95Ms             float64 `json:"ttft_p95_ms"`
					TPOTP50Ms             float64 `json:"tpot_p50_ms"`
					OutputTokenThroughput float64 `json:"output_token_throughput"`
				} `json:"aggregate"`
			} `json:"campaigns"`
		} `json:"models"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil || len(ev.Models) == 0 || len(ev.Models[0].Campaigns) == 0 {
		t.Fatalf("check evidence: %v", err)
	}
	a := ev.Models[0].Campaigns[0].Aggregate
	var problems []string
	for _, c := range []struct {
		name           string
		measured, pred float64
		tol            float64
	}{
		// Every figure is held to the 15%. TTFT once was not:
		// the model's TTFTs of the check shape had no spread at all (p95 =
		// p50: the closed loop's phases settle every request the same
		// way), where vLLM's p95 is 1.3-1.5x its p50 (the front end's and
		// the host's timing noise). The request jitter (a fitted spread of
		// each request's way to the engine) reproduces it: before it, with
		// 12 requests a run, p95 came out -12% to -36% and p50 -21% to
		// +1%. 48 requests a run keep one slow request from
		// being the p95; 5 runs a lane, which apply interleaves across
		// the two lanes, keep a run's level (vLLM on this shared machine
		// runs 10-20% faster or slower from one run to the next) and
		// slow drift out of the comparison.
		{"ttft_p50_ms", a.TTFTP50Ms, est.TTFTMs, 0.15},
		{"ttft_p95_ms", a.TTFTP95Ms, est.TTFTP95Ms, 0.15},
		{"tpot_p50_ms", a.TPOTP50Ms, est.TPOTMs, 0.15},
		{"output_token_throughput", a.OutputTokenThroughput, est.OutputTokenThroughput, 0.15},
	} {
		rel := c.pred/c.measured - 1
		t.Logf("check shape %s: measured %.3f, calibrated prediction %.3f (%+.1f%%)", c.name, c.measured, c.pred, 100*rel)
		if math.Abs(rel) > c.tol {
			problems = append(problems, fmt.Sprintf("%s: predicted %.3f, vLLM measured %.3f: %+.1f%% (tolerance %.0f%%)", c.name, c.pred, c.measured, 100*rel, 100*c.tol))
		}
	}
	// Real vLLM and the client share this machine's CPUs with whatever
	// else runs: a lane measured while they waited for a CPU is not the
	// lane calibrated on (TPOT 30% apart between the two shapes' lanes, a
	// minute apart, on a loaded 2-core machine).
	if len(problems) > 0 && stalled > 0.10 {
		t.Skipf("tasks on this machine waited for a CPU %.0f%% of the apply (/proc/pressure/cpu): too busy for a 15%% comparison; rerun on an idle machine (%s)", 100*stalled, strings.Join(problems, "; "))
	}
	for _, p := range problems {
		t.Error(p)
	}
}
