package perf

import (
	"encoding/json"
	"strings"
	"testing"
)

func sampleCalibration() *Calibration {
	c := &Calibration{SchemaVersion: CalibrationSchema, GeneratedAt: "2026-01-01T00:00:00Z", InfercraneVersion: "t",
		Fits: []CalibrationFit{{GPUType: "L40S", Engine: "vllm", Version: "0.22.1", Source: "aggregates", Lanes: 2, Runs: 4,
			Params: Params{PrefillMFU: 0.5, DecodeEfficiency: 0.7, StepOverheadMs: 1.5, RequestOverheadMs: 4}, Fit: FitResult{Residuals: map[string]Residual{
				"ttft_p95_ms": {N: 2, RMSRel: 0.04, MaxRel: 0.06}, "tpot_p50_ms": {N: 2, RMSRel: 0.01, MaxRel: 0.015}}}}}}
	c.Digest = c.ComputeDigest()
	return c
}

func TestCalibrationFileRoundTripAndTamper(t *testing.T) {
	c := sampleCalibration()
	b, _ := json.MarshalIndent(c, "", "  ")
	got, err := ParseCalibration(b)
	if err != nil || got.Digest != c.Digest {
		t.Fatalf("round trip: %v", err)
	}
	if f, ok := got.Find("l40s", "VLLM", "0.22.1"); !ok || f.Params.PrefillMFU != 0.5 {
		t.Errorf("find: %+v %v", f, ok)
	}
	if _, ok := got.Find("L40S", "vllm", "0.23.0"); ok {
		t.Error("another version must not match")
	}
	for name, edit := range map[string]func(string) string{
		"edited parameter": func(s string) string { return strings.Replace(s, `"prefill_mfu": 0.5`, `"prefill_mfu": 0.6`, 1) },
		"unknown field":    func(s string) string { return strings.Replace(s, `"generated_at"`, `"extra": 1, "generated_at"`, 1) },
		"trailing data":    func(s string) string { return s + "{}" },
		"wrong schema":     func(s string) string { return strings.Replace(s, CalibrationSchema, "infercrane.calibration/v0", 1) },
	} {
		if _, err := ParseCalibration([]byte(edit(string(b)))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	u := c.Fits[0].Uncertainty("f")
	if u.TTFT != 0.08 || u.TPOT != 0.03 || u.Throughput != 0.03 {
		t.Errorf("uncertainty %+v: want max(2 x RMS, max, 3%%) per family", u)
	}
	if cu := CatalogUncertainty(); cu.Of("ttft_p95_ms") != 0.5 || cu.Of("output_token_throughput") != 0.25 {
		t.Errorf("catalog uncertainty %+v", cu)
	}
}

// A fit that could not identify a parameter keeps the catalog's range on
// the figures that parameter moves.
func TestUncertaintyOfUnidentifiedParameters(t *testing.T) {
	f := sampleCalibration().Fits[0]
	f.Fit.Identification = map[string]Identification{"prefill_mfu": {Identified: false}, "decode_efficiency": {Identified: true},
		"step_overhead_ms": {Identified: true}, "request_overhead_ms": {Identified: true}}
	u := f.Uncertainty("f")
	if u.TTFT != 0.5 || u.Latency != 0.25 || u.Throughput != 0.25 || u.TPOT != 0.03 {
		t.Errorf("MFU unidentified: %+v; want the catalog's TTFT, latency and throughput ranges, TPOT from the residuals", u)
	}
	if got := f.Unidentified(); len(got) != 1 || got[0] != "prefill_mfu" {
		t.Errorf("unidentified %v", got)
	}
	f.Fit.Identification["step_overhead_ms"] = Identification{}
	if u := f.Uncertainty("f"); u.TPOT != 0.25 {
		t.Errorf("step overhead unidentified: TPOT range %v, want the catalog's 25%%", u.TPOT)
	}
}

// FuzzParseCalibration: any input is either refused with an error or
// read into a calibration whose digest checks and which reads back the
// same after writing it again (identification included).
func FuzzParseCalibration(f *testing.F) {
	c := sampleCalibration()
	c.Fits[0].Fit.Identification = map[string]Identification{"prefill_mfu": {Identified: false, RelStdErr: 1000, Held: true, Reason: "r"}}
	c.Digest = c.ComputeDigest()
	b, _ := json.Marshal(c)
	f.Add(b)
	f.Add([]byte(`{"schema_version":"infercrane.calibration/v1"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseCalibration(data)
		if err != nil {
			return
		}
		if got.ComputeDigest() != got.Digest {
			t.Fatalf("accepted a calibration whose digest does not check")
		}
		again, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseCalibration(again)
		if err != nil || back.Digest != got.Digest {
			t.Fatalf("a calibration read does not read back after writing: %v", err)
		}
	})
}
