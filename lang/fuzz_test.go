package lang

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// seedSpecs adds the examples and the broken specs as fuzz seeds.
func seedSpecs(f *testing.F) {
	paths, _ := filepath.Glob("testdata/specs/*.hcl")
	more, _ := filepath.Glob("../examples/*/*.hcl")
	if len(paths) == 0 || len(more) == 0 {
		f.Fatal("no seed specs under testdata/specs or ../examples")
	}
	for _, p := range append(paths, more...) {
		if src, err := os.ReadFile(p); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte(minimal))
	f.Add([]byte(traceSpec))
	f.Add([]byte("gate \"g\" {\n  condition     = lane.ttft_p95_ms <= \"2s\" || lane.failed == \"0\"\n  error_message = \"x\"\n}\n"))
}

// FuzzLoad parses and evaluates arbitrary specs: it must never panic, and
// every error must be a diagnostic with a source range in the spec.
func FuzzLoad(f *testing.F) {
	seedSpecs(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		opts := testOptions()
		opts.Vars = []string{"runs=2"}
		cfg, diags := LoadSource(t.TempDir(), "main.hcl", src, opts)
		if cfg == nil {
			t.Fatal("nil Config")
		}
		for _, d := range diags {
			if d.Subject == nil && !isVarDiag(d) {
				t.Fatalf("diagnostic without range: %s: %s", d.Summary, d.Detail)
			}
			if d.Subject != nil && d.Subject.Filename != "main.hcl" && d.Subject.Filename != "<value for var.runs>" {
				t.Fatalf("diagnostic in unexpected file %q: %s", d.Subject.Filename, d.Summary)
			}
			if d.Summary == "" {
				t.Fatalf("diagnostic without summary: %#v", d)
			}
		}
		var b bytes.Buffer
		WriteDiagnostics(&b, diags, cfg.Files)
		DiagnosticsJSON(diags, cfg.Files)
		if !diags.HasErrors() {
			for _, s := range cfg.Screens {
				if len(s.Models) == 0 || len(s.Shapes) == 0 || len(s.GPUs) == 0 || s.Runs <= 0 {
					t.Fatalf("valid screen without lanes: %+v", s)
				}
			}
			for _, s := range cfg.Shapes {
				if s.Requests < s.Concurrency || s.Concurrency <= 0 {
					t.Fatalf("valid shape with bad counts: %+v", s)
				}
			}
		}
	})
}

// isVarDiag reports diagnostics about -var flags, which have no file.
func isVarDiag(d *hcl.Diagnostic) bool {
	return d.Summary == "Value for undeclared variable" || d.Summary == "Invalid -var option"
}

// FuzzFormat checks that formatting is idempotent and keeps the meaning:
// formatted source parses whenever the original did.
func FuzzFormat(f *testing.F) {
	seedSpecs(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		out, diags := Format("x.hcl", src)
		if diags.HasErrors() {
			return
		}
		again, diags := Format("x.hcl", out)
		if diags.HasErrors() {
			t.Fatalf("formatted source does not parse: %v\n%s", diags, out)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n%q\n%q", out, again)
		}
	})
}
