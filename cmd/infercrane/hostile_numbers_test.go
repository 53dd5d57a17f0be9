package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostileBase is a valid spec whose shape takes its numbers from %s.
const hostileBase = `model "tiny" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 4096
}
gpu "l40s" {
  type = "L40S"
}
runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
}
variable "n" {
  type    = number
  default = 4
}
shape "chat" {
%s
}
screen "e" {
  models   = [model.tiny]
  shapes   = [shape.chat]
  gpus     = [gpu.l40s]
  runtime  = runtime.vllm
  runs     = %s
}
`

// TestAbsurdNumbersFailValidateAtTheirPlace: a number no attribute can take
// (1e100000000 as a literal, through a variable, a function or a string
// template; runs = 100000000) fails validate with an error at its
// file:line:col, promptly: before, 1e100000000 hung validate for minutes
// (math/big writing its decimal text) and runs = 100000000 drove plan to
// 4 GB (issue 25, defect 6). Each case runs with a deadline that catches
// a hang, far above what a loaded machine needs.
func TestAbsurdNumbersFailValidateAtTheirPlace(t *testing.T) {
	shape := "  input_tokens = 64\n  output_tokens = 4\n  concurrency = 1\n  requests = %s\n"
	for _, tc := range []struct{ name, requests, runs, varFlag, at string }{
		{"literal", "1e100000000", "1", "", "1e100000000"},
		{"negative literal", "-1e100000000", "1", "", "-|1e100000000"},
		{"tiny literal", "1e-100000000", "1", "", "1e-100000000"},
		{"runs", "4", "100000000", "", "100000000"},
		{"variable", "var.n", "1", "n=1e100000000", ""},
		{"function", `tonumber("1e100000000")`, "1", "", `tonumber("1e100000000")`},
		{"template", `length("${1e100000000}")`, "1", "", "1e100000000"},
		{"setproduct", `length(setproduct(range(1000), range(1000), range(1000)))`, "1", "", "setproduct"},
		{"just over the bound", "10000001", "1", "", "10000001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := fmt.Sprintf(hostileBase, fmt.Sprintf(shape, tc.requests), tc.runs)
			if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"validate"}
			if tc.varFlag != "" {
				args = append(args, "-var", tc.varFlag)
			}
			type result struct {
				code   int
				stderr string
			}
			done := make(chan result, 1)
			go func() {
				code, _, stderr := runCLI(t, append(args, dir)...)
				done <- result{code, stderr}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(90 * time.Second): // a hang, not a slow machine
				t.Fatalf("validate did not answer within 90 s")
			}
			if r.code != 1 {
				t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
			}
			if tc.at != "" {
				line, col := position(src, tc.at)
				if want := fmt.Sprintf("main.hcl line %d, column %d:", line, col); !strings.Contains(r.stderr, want) {
					t.Errorf("want %q in:\n%s", want, r.stderr)
				}
			} else if !strings.Contains(r.stderr, "var.n") {
				t.Errorf("the error does not name the variable:\n%s", r.stderr)
			}
		})
	}
}

// TestPlanOfTheLargestValidSpecStaysInBudget plans a spec at the bounds
// (docs/language/bounds.md): 100 lanes of 1000 runs (the 100000 runs one
// spec may plan), each run of 10000000 requests (the estimate simulates
// 10000 of them): it must allocate less than 2 GiB in all. Before the
// bounds, runs = 100000000 alone drove plan to 4 GB, and a lane of
// 10000000 requests took minutes to estimate.
func TestPlanOfTheLargestValidSpecStaysInBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("plans 100000 runs")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "model \"tiny\" {\n  id = \"Qwen/Qwen3-0.6B\"\n  revision = \"c1899de289a04d12100db370d81485cdf75e47ca\"\n}\ngpu \"l40s\" {\n  type = \"L40S\"\n}\nruntime \"vllm\" {\n  engine = \"vllm\"\n  version = \"0.22.1\"\n}\nexecutor \"sim\" {\n  type = \"sim\"\n}\n")
	var shapes []string
	for i := range 100 {
		fmt.Fprintf(&b, "shape \"s%d\" {\n  input_tokens = %d\n  output_tokens = 16\n  concurrency = 64\n  requests = 10000000\n}\n", i, 100+i)
		shapes = append(shapes, fmt.Sprintf("shape.s%d", i))
	}
	fmt.Fprintf(&b, "screen \"big\" {\n  models = [model.tiny]\n  shapes = [%s]\n  gpus = [gpu.l40s]\n  runtime = runtime.vllm\n  executor = executor.sim\n  runs = 1000\n}\n", strings.Join(shapes, ", "))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code, stdout, stderr := runCLI(t, "plan", "-out", filepath.Join(dir, "big.plan"), dir)
	runtime.ReadMemStats(&after)
	if code != 0 {
		t.Fatalf("plan exited %d:\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "100000") {
		t.Errorf("the plan does not count 100000 runs:\n%s", stdout[:min(len(stdout), 2000)])
	}
	const budget = 2 << 30
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("plan of 100 lanes x 1000 runs allocated %d MiB in all (budget %d MiB)", alloc>>20, budget>>20)
	if alloc > budget {
		t.Errorf("plan allocated %d MiB, over the %d MiB budget", alloc>>20, budget>>20)
	}
}
