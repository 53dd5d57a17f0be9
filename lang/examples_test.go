package lang

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestExamples loads the bundled examples: they must be valid, formatted,
// and (without a trace resolver) the chutes example's trace-derived shapes
// must be pending rather than wrong.
func TestExamples(t *testing.T) {
	cfg, diags := Load("../examples/quickstart", testOptions())
	if diags.HasErrors() || len(diags) != 0 {
		t.Fatalf("quickstart:\n%s", render(diags, nil, ""))
	}
	if s := cfg.Screens["quickstart"]; s == nil || s.Executor != "sim" || len(s.Models) != 1 {
		t.Errorf("quickstart screen: %+v", s)
	}

	cfg, diags = Load("../examples/chutes-qwen-l40s", testOptions())
	if diags.HasErrors() {
		t.Fatalf("chutes:\n%s", render(diags, nil, ""))
	}
	s := cfg.Screens["qwen_l40s"]
	if s == nil || s.Runs != 2 || s.Seed != 17 || s.Baseline != "qwen17" || s.Executor != "modal" || len(s.Shapes) != 2 {
		t.Fatalf("chutes screen: %+v", s)
	}
	for _, name := range s.Shapes {
		sh := cfg.Shapes[name]
		if len(sh.Pending) != 2 || sh.TemplateHeadroom != 512 {
			t.Errorf("shape %s: %+v", name, sh)
		}
	}
	if rt := cfg.Runtimes["vllm"]; rt.RuntimeVersion != "0.22.1" {
		t.Errorf("runtime: %+v", rt)
	}

	files, _ := filepath.Glob("../examples/*/*.hcl")
	for _, f := range files {
		src, _ := os.ReadFile(f)
		out, diags := Format(f, src)
		if diags.HasErrors() || !bytes.Equal(out, src) {
			t.Errorf("%s is not formatted; run infercrane fmt %s", f, filepath.Dir(f))
		}
	}
}
