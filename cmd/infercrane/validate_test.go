package main

import (
	"os"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang"
)

// TestExamplesLoad loads the bundled examples the way validate, plan and
// apply do (with the registered executor schemas and trace resolver): the
// chutes example's pinned profile must match its digest and feed its shapes.
func TestExamplesLoad(t *testing.T) {
	env := &cliEnv{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: func(string) string { return "" }, Environ: func() []string { return nil }}
	for _, dir := range []string{"../../examples/quickstart", "../../examples/chutes-qwen-l40s", "../../examples/architectures"} {
		cfg, diags := loadConfig(env, dir, nil)
		if len(diags) > 0 {
			var b strings.Builder
			lang.WriteDiagnostics(&b, diags, cfg.Files)
			t.Fatalf("%s:\n%s", dir, b.String())
		}
		for name, s := range cfg.Shapes {
			if len(s.Pending) > 0 || s.InputTokens <= 0 || s.OutputTokens <= 0 {
				t.Errorf("%s: shape %s is not resolved: %+v", dir, name, s)
			}
		}
		if n := pendingNotes(cfg); len(n) != 0 {
			t.Errorf("%s: notes %v", dir, n)
		}
	}
}

func TestSummaryAndNotes(t *testing.T) {
	src := `
trace "t" {
  source = "t.parquet"
}
model "m" {
  id = "a/b"
}
gpu "g" {
  type = "L4"
}
shape "s" {
  input_tokens  = trace.t.input_tokens.p50
  output_tokens = 5
  concurrency   = 1
  requests      = 1
}
screen "x" {
  models = [model.m]
  shapes = [shape.s]
  gpus   = [gpu.g]
}`
	cfg, diags := lang.LoadSource(t.TempDir(), "main.hcl", []byte(src), lang.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got := summarize(cfg); got != "Valid: 1 screen, 1 model, 1 shape, 1 gpu." {
		t.Errorf("summary = %q", got)
	}
	notes := pendingNotes(cfg)
	want := "shape.s input_tokens: trace.t is not profiled yet; run `infercrane profile trace` or set profile+digest."
	if len(notes) != 1 || notes[0] != want {
		t.Errorf("notes = %q, want [%q]", notes, want)
	}
}
