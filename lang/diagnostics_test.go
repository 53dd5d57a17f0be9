package lang

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

func TestWriteDiagnostics(t *testing.T) {
	src := "model \"m\" {\n\tid = 42x\n}\n"
	files := map[string][]byte{"a.hcl": []byte(src)}
	d := hcl.Diagnostics{
		{Severity: hcl.DiagError, Summary: "Bad id", Detail: "Fix it.",
			Subject: &hcl.Range{Filename: "a.hcl", Start: hcl.Pos{Line: 2, Column: 7, Byte: 18}, End: hcl.Pos{Line: 2, Column: 10, Byte: 21}}},
		{Severity: hcl.DiagWarning, Summary: "No location"},
	}
	var b strings.Builder
	WriteDiagnostics(&b, d, files)
	want := "Error: Bad id\n\n  on a.hcl line 2, column 7:\n  2: \tid = 42x\n     \t     ^^^\n\nFix it.\n\nWarning: No location\n"
	if b.String() != want {
		t.Errorf("got:\n%q\nwant:\n%q", b.String(), want)
	}
}

func TestDiagnosticsJSON(t *testing.T) {
	src := []byte(minimal + "\nshape \"t\" {\n  input_tokens = 1\n  output_tokens = 1\n  concurrency = 4\n  requests = 2\n}\n")
	cfg, diags := LoadSource(".", "main.hcl", src, testOptions())
	var out []map[string]any
	if err := json.Unmarshal(DiagnosticsJSON(diags, cfg.Files), &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 {
		t.Fatalf("want one diagnostic, got %v", out)
	}
	d := out[0]
	r := d["range"].(map[string]any)
	start := r["start"].(map[string]any)
	if d["severity"] != "error" || r["filename"] != "main.hcl" || start["line"].(float64) != 24 ||
		!strings.Contains(d["snippet"].(string), "requests = 2") || !strings.Contains(d["summary"].(string), "concurrency") {
		t.Errorf("diagnostic: %v", d)
	}
	if got := string(DiagnosticsJSON(nil, nil)); got != "[]" {
		t.Errorf("no diagnostics = %q, want []", got)
	}
}

func TestFormatIdempotent(t *testing.T) {
	src := []byte("model \"m\"{\nid=\"a\"\n    max_context   =   8192\n}\n\n\n")
	out, diags := Format("x.hcl", src)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := "model \"m\" {\n  id          = \"a\"\n  max_context = 8192\n}\n"
	if string(out) != want {
		t.Errorf("got %q want %q", out, want)
	}
	again, _ := Format("x.hcl", out)
	if string(again) != string(out) {
		t.Errorf("not idempotent: %q", again)
	}
	if _, diags := Format("x.hcl", []byte("model {")); !diags.HasErrors() {
		t.Errorf("syntax error not reported")
	}
}
