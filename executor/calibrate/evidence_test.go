package calibrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/report"
	"github.com/infercrane/infercrane/planner/perf"
)

// writeEvidence writes doc as an evidence file stamped as 'infercrane
// report' stamps one (schema version, digest over its canonical form).
func writeEvidence(t *testing.T, dir, name string, doc map[string]any) string {
	t.Helper()
	doc["schema_version"] = evidence.SchemaVersion
	delete(doc, "digest")
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if doc["digest"], err = evidence.Digest(b); err != nil {
		t.Fatal(err)
	}
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// truthLane is the lane calibrate models Qwen3-0.6B on one L40S with vLLM
// 0.22.1's defaults as, for prompts of in tokens and out output tokens.
func truthLane(t *testing.T, p perf.Params, in, out int) perf.Lane {
	t.Helper()
	m, _ := perf.LookupModel("Qwen/Qwen3-0.6B")
	g, _ := perf.LookupGPU("L40S")
	l, err := perf.NewLane(m, perf.Hardware{GPU: g, Count: 1, BytesPerElem: 2, Assume: p.Apply(perf.DefaultAssumptions(g))},
		perf.EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true, PrefixCaching: true, BlockSize: 16}, in+out)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// openLoopCampaign is a campaign of the open loop l (sizes in, out) whose
// aggregate is what lane measures under it, its workload as written.
func openLoopCampaign(t *testing.T, lane perf.Lane, profile string, l perf.Load, workload map[string]any) map[string]any {
	t.Helper()
	e, err := lane.Estimate(l, 1)
	if err != nil {
		t.Fatal(err)
	}
	agg := map[string]any{"requests": l.Requests, "succeeded": l.Requests, "output_token_throughput": e.OutputTokenThroughput}
	for _, name := range perf.FitMetrics {
		agg[name], _ = e.Metric(name)
	}
	return map[string]any{"profile": profile, "lane": "lane-" + profile, "gpu": "l40s", "gpu_type": "L40S",
		"workload": workload, "aggregate": agg, "runs": []any{map[string]any{"run": 1, "succeeded": l.Requests}}}
}

func evidenceDoc(campaigns ...any) map[string]any {
	return map[string]any{
		"screen":      "open",
		"environment": map[string]any{"gpu_request": []string{"L40S x1"}, "runtime": map[string]any{"engine": "vllm", "version": "0.22.1"}, "random_seed": 3},
		"models":      []any{map[string]any{"model": "Qwen/Qwen3-0.6B", "campaigns": campaigns}},
	}
}

// An open loop's load is rebuilt from the evidence alone in full: a gamma
// schedule's burstiness and an arrival curve, as the evidence records them
// (workload.arrival_process), so that the catalog's parameters reproduce
// lanes measured with them exactly; an open loop of evidence that does not
// record its arrival process is left out, saying why, instead of being
// fitted as a plain Poisson or constant schedule.
func TestOpenLoopLoadRebuiltFromEvidence(t *testing.T) {
	g, _ := perf.LookupGPU("L40S")
	params := perf.ParamsOf(perf.DefaultAssumptions(g))
	lane := truthLane(t, params, 3000, 64)
	gamma := perf.Load{InputTokens: 3000, OutputTokens: 64, Concurrency: 64, RequestRate: 25, Arrival: "gamma", Burstiness: 0.05, Requests: 40, Seed: 3}
	curve := perf.Load{InputTokens: 3000, OutputTokens: 64, Concurrency: 64, RequestRate: 40, Arrival: "constant", Requests: 40, Seed: 3,
		Curve: []float64{0, 0, 0, 1}, CurveStepSeconds: 0.5}
	work := func(l perf.Load, process map[string]any) map[string]any {
		w := map[string]any{"input_tokens": 3000, "output_tokens": 64, "concurrency": 64, "requests_per_run": l.Requests,
			"request_rate": l.RequestRate, "arrival": l.Arrival, "api": "chat", "streaming": true}
		if process != nil {
			w["arrival_process"] = process
		}
		return w
	}
	dir := t.TempDir()
	path := writeEvidence(t, dir, "open.evidence.json", evidenceDoc(
		openLoopCampaign(t, lane, "bursty", gamma, work(gamma, map[string]any{"kind": "gamma", "burstiness": 0.05})),
		openLoopCampaign(t, lane, "curve", curve, work(curve, map[string]any{"kind": "constant", "curve": map[string]any{"step_seconds": 0.5, "rates": []float64{0, 0, 0, 1}}})),
		openLoopCampaign(t, lane, "unrecorded", gamma, work(gamma, nil)),
	))
	groups, keys, warnings, _, err := collect([]string{path}, Options{})
	if err != nil || len(keys) != 1 {
		t.Fatalf("collect: %v %v", err, keys)
	}
	obs := groups[keys[0]].obs
	if len(obs) != 2 {
		t.Fatalf("%d observations, want the two lanes that record their arrival process", len(obs))
	}
	for i, want := range []perf.Load{gamma, curve} {
		got := obs[i].Load
		if got.Arrival != want.Arrival || got.Burstiness != want.Burstiness || !reflect.DeepEqual(got.Curve, want.Curve) || got.CurveStepSeconds != want.CurveStepSeconds || got.RequestRate != want.RequestRate {
			t.Errorf("%s: load %+v, want the arrival process %+v", obs[i].Name, got, want)
		}
	}
	res, err := perf.Evaluate(obs, params)
	if err != nil || res.MAPE > 1e-9 {
		t.Errorf("the parameters the lanes ran with must reproduce them: MAPE %v, %v", res.MAPE, err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "Qwen/Qwen3-0.6B/unrecorded: an open-loop lane whose evidence does not record its arrival process") {
		t.Errorf("warnings %q: want the open loop without an arrival process left out, saying why", warnings)
	}
}

// A simulated engine's speedup scales an open loop to engine time: the
// rate divided by it, each step of an arrival curve lasting it times as
// long (the load generator's wall-clock step).
func TestScaleLoadScalesTheArrivalCurve(t *testing.T) {
	l := scaleLoad(perf.Load{RequestRate: 40, Curve: []float64{1, 2}, CurveStepSeconds: 0.5}, 4)
	if l.RequestRate != 10 || l.CurveStepSeconds != 2 {
		t.Errorf("rate %g, step %g s: want 10 and 2", l.RequestRate, l.CurveStepSeconds)
	}
}

// Calibrate checks each evidence file's digest as verify does and refuses
// one whose content was changed after it was written (a figure edited by
// hand), naming the file, instead of fitting its figures and recording
// its stated digest as the calibration's provenance; a JSON file that is
// no evidence is refused, saying what was expected.
func TestCalibrateRefusesTamperedEvidence(t *testing.T) {
	dir := t.TempDir()
	p95 := 40.0
	doc := evidenceDoc(map[string]any{"profile": "chat", "lane": "l1", "gpu": "l40s", "gpu_type": "L40S",
		"workload":  map[string]any{"input_tokens": 512, "output_tokens": 32, "concurrency": 4, "requests_per_run": 16},
		"aggregate": map[string]any{"requests": 16, "succeeded": 16, "output_token_throughput": 100, "ttft_p95_ms": p95}})
	good := writeEvidence(t, dir, "good.evidence.json", doc)
	groups, keys, _, _, err := collect([]string{good}, Options{})
	if err != nil || len(keys) != 1 {
		t.Fatalf("untouched evidence: %v", err)
	}
	data, _ := os.ReadFile(good)
	var stated struct{ Digest string }
	_ = json.Unmarshal(data, &stated)
	if ref := groups[keys[0]].evidence[0]; ref.Digest != stated.Digest {
		t.Errorf("provenance %+v, want the evidence's digest %s", ref, stated.Digest)
	}

	forged := filepath.Join(dir, "forged.evidence.json")
	if err := os.WriteFile(forged, bytes.Replace(data, []byte(`"ttft_p95_ms":40`), []byte(`"ttft_p95_ms":120`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := collect([]string{good, forged}, Options{}); err == nil || !strings.Contains(err.Error(), forged+": digest MISMATCH") || !errors.Is(err, report.ErrEvidenceChanged) {
		t.Errorf("forged evidence: %v, want a digest mismatch naming %s", err, forged)
	}

	other := filepath.Join(dir, "calib.json")
	if err := os.WriteFile(other, []byte(`{"schema_version_x": 1, "fits": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := collect([]string{other}, Options{}); err == nil || !errors.Is(err, report.ErrNotEvidence) || !strings.Contains(err.Error(), other+" is not an evidence document") || !strings.Contains(err.Error(), evidence.SchemaVersion) {
		t.Errorf("a JSON file that is no evidence: %v", err)
	}
}

// Evidence without a single campaign is refused saying so (it said "no
// campaign of the evidence can be calibrated from: " and an empty list).
func TestCalibrateSaysTheEvidenceHasNoCampaigns(t *testing.T) {
	path := writeEvidence(t, t.TempDir(), "empty.evidence.json", evidenceDoc())
	_, _, _, _, err := collect([]string{path}, Options{})
	if err == nil || !strings.Contains(err.Error(), "the evidence ("+path+") has no campaigns to calibrate from") {
		t.Errorf("evidence without campaigns: %v", err)
	}
}
