package planner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/perf"
)

func writeCal(t *testing.T, version string) (string, string) {
	t.Helper()
	return writeCalFor(t, "L40S", version)
}

// writeCalFor writes a calibration file with one vLLM fit for GPU type
// gpu and engine version version, and returns its path and digest.
func writeCalFor(t *testing.T, gpu, version string) (string, string) {
	t.Helper()
	c := &perf.Calibration{SchemaVersion: perf.CalibrationSchema, Fits: []perf.CalibrationFit{{GPUType: gpu, Engine: "vllm", Version: version, ModelRevision: perf.ModelRevision,
		Source: "aggregates", Lanes: 3, Runs: 6, Params: perf.Params{PrefillMFU: 0.6, DecodeEfficiency: 0.5, StepOverheadMs: 2, RequestOverheadMs: 5},
		Fit: perf.FitResult{MAPE: 0.042, Residuals: map[string]perf.Residual{"ttft_p95_ms": {N: 3, RMSRel: 0.05, MaxRel: 0.07}}}}}}
	return writeCalFile(t, c)
}

// writeCalFile stamps c with its digest, writes it to a file of its own
// and returns the file's path and the digest.
func writeCalFile(t *testing.T, c *perf.Calibration) (string, string) {
	t.Helper()
	c.Digest = c.ComputeDigest()
	path := filepath.Join(t.TempDir(), "cal.json")
	b, _ := json.Marshal(c)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, c.Digest
}

// TestCalibrationFile: a gpu block's calibration sets the lanes'
// assumptions and ranges and the plan says so; a spec override still wins;
// a fit for another runtime version is not applied (a note says so); a
// wrong digest or a missing file is a diagnostic on the attribute.
func TestCalibrationFile(t *testing.T) {
	base := build(t, fixture())
	cfg := fixture()
	r := cfg.Runtimes[cfg.Screens["qwen_l40s"].Runtime]
	path, digest := writeCal(t, r.RuntimeVersion)
	cfg.GPUs["l40s"].Calibration = &lang.CalibrationRef{File: path, Digest: digest}
	p := build(t, cfg)
	l := p.Lanes[0]
	if c := l.Calibration; c == nil || c.Runs != 6 || c.MAPE != 0.042 || c.Params.PrefillMFU != 0.6 || l.Perf.Hardware.Assume.DecodeEfficiency != 0.5 {
		t.Fatalf("calibration not applied: %+v %+v", l.Calibration, l.Perf.Hardware.Assume)
	}
	if u := l.Estimate.Uncertainty; u == nil || u.TTFT != 0.1 || u.TPOT != 0.03 {
		t.Errorf("range from the residuals: %+v", u)
	}
	if l.Estimate.TPOTMs <= base.Lanes[0].Estimate.TPOTMs {
		t.Errorf("decode efficiency 0.5 must slow TPOT: %v vs %v", l.Estimate.TPOTMs, base.Lanes[0].Estimate.TPOTMs)
	}
	var txt strings.Builder
	if err := WriteText(&txt, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "calibrated: 6 runs, fit 4.2%") || !strings.Contains(txt.String(), "±10%") {
		t.Errorf("plan text does not say the lane is calibrated:\n%s", txt.String())
	}
	cfg.GPUs["l40s"].DecodeEfficiency = f64(0.9)
	if p := build(t, cfg); p.Lanes[0].Perf.Hardware.Assume.DecodeEfficiency != 0.9 || p.Lanes[0].Perf.Hardware.Assume.PrefillMFU != 0.6 {
		t.Errorf("the spec's decode_efficiency must win over the calibration: %+v", p.Lanes[0].Perf.Hardware.Assume)
	}
	cfg.GPUs["l40s"].DecodeEfficiency = nil
	other, otherDigest := writeCal(t, "0.1.0")
	cfg.GPUs["l40s"].Calibration = &lang.CalibrationRef{File: other, Digest: otherDigest}
	p = build(t, cfg)
	if p.Lanes[0].Calibration != nil || !strings.Contains(strings.Join(p.Lanes[0].Notes, "\n"), "has no fit for L40S with vllm") {
		t.Errorf("a fit for another version must not apply: %+v %v", p.Lanes[0].Calibration, p.Lanes[0].Notes)
	}
	for name, ref := range map[string]*lang.CalibrationRef{
		"Calibration digest mismatch":  {File: path, Digest: "sha256:" + strings.Repeat("0", 64)},
		"Cannot read calibration file": {File: filepath.Join(t.TempDir(), "missing.json")},
	} {
		cfg.GPUs["l40s"].Calibration = ref
		_, diags := Build(cfg, nil, Options{})
		if !diags.HasErrors() || diags[0].Summary != name {
			t.Errorf("%s: %v", name, diags)
		}
	}
}

// A calibration fitted to the simulated engine's evidence is no
// calibration of real GPUs: a lane on another executor is not calibrated
// by it (it said "calibrated, fit 4.2%" and narrowed its ranges to the
// fit's residuals), the plan warns, and the lane keeps the catalog's
// ranges. What is simulated is what an executor type declares
// (lang.Capabilities.Simulated), an external plugin's too: "replay", a
// plugin of this spec that declares it simulates, is refused like "sim".
// A fit for another engine version warns as well. A fit from another
// tool's results (real GPUs) applies.
func TestCalibrationOfSimulatedEvidenceIsRefused(t *testing.T) {
	cfg := fixture()
	cfg.Executors["replay"] = &lang.Executor{Name: "replay", Type: "replay", Capabilities: lang.Capabilities{Simulated: true}}
	r := cfg.Runtimes[cfg.Screens["qwen_l40s"].Runtime]
	for _, tc := range []struct {
		executor   string
		calibrated bool
	}{{"sim", false}, {"local, sim", false}, {"replay", false}, {"external: vllm bench serve", true}, {"modal", true}, {"", true}} {
		c := &perf.Calibration{SchemaVersion: perf.CalibrationSchema, Fits: []perf.CalibrationFit{{GPUType: "L40S", Engine: "vllm", Version: r.RuntimeVersion, ModelRevision: perf.ModelRevision,
			Source: "aggregates", Executor: tc.executor, Lanes: 3, Runs: 6, Params: perf.Params{PrefillMFU: 0.6, DecodeEfficiency: 0.5, StepOverheadMs: 2, RequestOverheadMs: 5},
			Fit: perf.FitResult{MAPE: 0.018, Residuals: map[string]perf.Residual{"ttft_p95_ms": {N: 3, RMSRel: 0.01, MaxRel: 0.02}}}}}}
		path, digest := writeCalFile(t, c)
		cfg.GPUs["l40s"].Calibration = &lang.CalibrationRef{File: path, Digest: digest}
		p := build(t, cfg)
		l := p.Lanes[0]
		if l.Inputs.ExecutorType == "sim" {
			t.Fatal("the fixture's lanes must run on a real executor")
		}
		warned := false
		for _, f := range p.Preflight {
			warned = warned || (f.Severity == SeverityWarning && strings.Contains(f.Detail, "simulated engine"))
		}
		if got := l.Calibration != nil; got != tc.calibrated || warned == tc.calibrated {
			t.Errorf("fit of executor %q: calibrated %v (want %v), warned %v; notes %v", tc.executor, got, tc.calibrated, warned, l.Notes)
		}
		if !tc.calibrated {
			if u := l.Estimate.Uncertainty; u == nil || u.TTFT != perf.CatalogUncertainty().TTFT || u.TPOT != perf.CatalogUncertainty().TPOT {
				t.Errorf("fit of executor %q: ranges %+v, want the catalog's", tc.executor, u)
			}
			var txt strings.Builder
			if err := WriteText(&txt, p); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(txt.String(), "calibrated: 6 runs") || !strings.Contains(txt.String(), "simulated engine") {
				t.Errorf("fit of executor %q: the plan text still claims a calibration or does not say why not:\n%s", tc.executor, txt.String())
			}
		}
	}
	// A fit for another version: not applied, and the plan warns.
	other, otherDigest := writeCal(t, "0.1.0")
	cfg.GPUs["l40s"].Calibration = &lang.CalibrationRef{File: other, Digest: otherDigest}
	p := build(t, cfg)
	warned := false
	for _, f := range p.Preflight {
		warned = warned || (f.Severity == SeverityWarning && strings.Contains(f.Detail, "has no fit for L40S"))
	}
	if !warned || p.Lanes[0].Calibration != nil {
		t.Errorf("a fit for another version: warned %v, calibration %+v", warned, p.Lanes[0].Calibration)
	}
}

// A fit made for another revision of the performance model holds what
// that model left out beside its parameters: before 2026-12-04 the step
// overhead held the matrix multiplies' fixed time, which the model now
// charges apart, so such a fit would count it twice. The lane is not
// calibrated by it, the plan warns and names the command that refits it
// from the fit's own evidence, and a fit of this revision applies.
func TestCalibrationOfAnotherModelRevisionIsRefused(t *testing.T) {
	cfg := fixture()
	r := cfg.Runtimes[cfg.Screens["qwen_l40s"].Runtime]
	for _, tc := range []struct {
		revision   string
		calibrated bool
		says       string
	}{{"", false, "before the performance model's revisions were recorded"}, {"2026-01-01", false, "revision 2026-01-01 (this model is revision " + perf.ModelRevision + ")"}, {perf.ModelRevision, true, ""}} {
		c := &perf.Calibration{SchemaVersion: perf.CalibrationSchema, Fits: []perf.CalibrationFit{{GPUType: "L40S", Engine: "vllm", Version: r.RuntimeVersion, ModelRevision: tc.revision,
			Source: "aggregates", Executor: "modal", Evidence: []perf.EvidenceRef{{File: "reports/l40s.evidence.json", Screen: "s"}}, Lanes: 3, Runs: 6,
			Params: perf.Params{PrefillMFU: 0.6, DecodeEfficiency: 0.5, StepOverheadMs: 2, RequestOverheadMs: 5},
			Fit:    perf.FitResult{MAPE: 0.018, Residuals: map[string]perf.Residual{"ttft_p95_ms": {N: 3, RMSRel: 0.01, MaxRel: 0.02}}}}}}
		path, digest := writeCalFile(t, c)
		cfg.GPUs["l40s"].Calibration = &lang.CalibrationRef{File: path, Digest: digest}
		p := build(t, cfg)
		var warning string
		for _, f := range p.Preflight {
			if f.Severity == SeverityWarning && strings.Contains(f.Detail, "calibration is refused") {
				warning = f.Detail
			}
		}
		if got := p.Lanes[0].Calibration != nil; got != tc.calibrated {
			t.Errorf("revision %q: calibrated %v, want %v; notes %v", tc.revision, got, tc.calibrated, p.Lanes[0].Notes)
		}
		if tc.calibrated {
			if warning != "" {
				t.Errorf("revision %q: %s", tc.revision, warning)
			}
			continue
		}
		if !strings.Contains(warning, tc.says) || !strings.Contains(warning, "infercrane calibrate -out "+path+" reports/l40s.evidence.json") {
			t.Errorf("revision %q: the warning %q does not say %q and how to refit", tc.revision, warning, tc.says)
		}
		if u := p.Lanes[0].Estimate.Uncertainty; u == nil || u.TPOT != perf.CatalogUncertainty().TPOT {
			t.Errorf("revision %q: ranges %+v, want the catalog's", tc.revision, u)
		}
	}
}
