package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArchitecturesExample: examples/architectures (a dense 8B, a
// 30B-A3B MoE and a 70B at TP 4 and 8, BF16 and FP8, on H100 and L40S)
// plans its 24 lanes without a finding that blocks it, explains every
// deployment's memory fit and what its estimate rests on, and applies on
// the simulated engine with every request served and every gate passing
// (at a speedup that keeps the test short; the figures are not compared
// here, TestSimReproducesArchitectureLanes does that).
func TestArchitecturesExample(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "architectures")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../examples/architectures/main.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "plan", "-no-color", dir)
	if code != 0 {
		t.Fatalf("plan exited %d: %s%s", code, out, errOut)
	}
	if !strings.HasPrefix(out, "Plan: 24 lanes to run") || strings.Contains(out, "preflight error") {
		t.Fatalf("plan:\n%s", out)
	}
	_, fit, ok := strings.Cut(out, "\nDeployments (the memory fit and what each estimate rests on):\n")
	if !ok {
		t.Fatalf("no deployments section:\n%s", out)
	}
	for _, want := range []string{
		"llama70b on 8 x L40S, runtime fp8: meta-llama/Llama-3.3-70B-Instruct",
		"moe30b on 4 x H100, runtime bf16: Qwen/Qwen3-30B-A3B (qwen3_moe: 48 layers, hidden 2048, 32 heads (4 KV) of 128, 8 of 128 experts in 48 layers",
		"30.53B parameters (3.35B active a token) at bf16",
		"at fp8 weights, fp8 KV cache",
		"compute roof 1979 TFLOPS a GPU (FP8)",
		"8-way tensor parallel over PCIe 4.0 x16",
		"4-way tensor parallel over NVLink 4",
	} {
		if !strings.Contains(fit, want) {
			t.Errorf("the deployments section lacks %q:\n%s", want, fit)
		}
	}
	// The eight mixture-of-experts deployments say how their experts are
	// costed; the dense ones do not.
	if n := strings.Count(fit, "routed experts (fused MoE kernel) take their multiplies plus their reads"); n != 8 {
		t.Errorf("%d deployments say how their routed experts are costed, want the 8 of moe30b", n)
	}
	// Its FP8 ones multiply their experts at the BF16 peak, not the FP8
	// roof the rest of the model takes (perf.Hardware.FusedMoEPeakTFLOPS).
	if n := strings.Count(fit, "plus their reads, multiplying at the BF16 peak ("); n != 4 ||
		!strings.Contains(fit, "multiplying at the BF16 peak (989 TFLOPS, x ") || !strings.Contains(fit, "multiplying at the BF16 peak (362 TFLOPS, x ") {
		t.Errorf("%d deployments say their FP8 experts multiply at the BF16 peak, want the 4 FP8 ones of moe30b (989 TFLOPS on an H100, 362 on an L40S):\n%s", n, fit)
	}
	if n := strings.Count(fit, "  compute roof "); n != 24 {
		t.Errorf("%d deployments explained, want 24", n)
	}
	code, out, errOut = runCLI(t, "apply", "-auto-approve", "-no-color", "-var", "speedup=400", dir)
	if code != 0 {
		t.Fatalf("apply exited %d: %s%s", code, out, errOut)
	}
	if !strings.Contains(out, "Screen architectures: 24 gate(s) pass, 0 fail, 0 inconclusive.") || strings.Count(out, "0/64 requests failed") != 24 {
		t.Errorf("apply:\n%s", out)
	}
}
