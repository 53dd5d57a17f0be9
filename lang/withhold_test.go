package lang

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// withholdSpec declares sensitive variables of several types.
const withholdSpec = minimal + `
variable "tok" {
  type      = string
  sensitive = true
  default   = "d"
}
variable "pin" {
  type      = number
  sensitive = true
  default   = 1
}
variable "tags" {
  type      = map(string)
  sensitive = true
  default   = {}
}
variable "runs" {
  type    = number
  default = 1
}
`

// TestVariableSourcesAreNeverQuoted: a diagnostic about a variable file
// (-var-file of any name, *.auto.vars.hcl, *.auto.vars.json) or a -var or
// INFERCRANE_VAR_* value gives its location and message but never the
// source line, in text and JSON, even when the file does not parse (so the
// redaction list cannot know the value); a parser detail that quotes the
// file is withheld too, and a conversion error does not quote a part of a
// sensitive value.
func TestVariableSourcesAreNeverQuoted(t *testing.T) {
	const secret = "GOODSECRET_abcdef12"
	cases := []struct {
		name, file, src string
		opts            Options
		summary         string
	}{
		{"missing newline", "bad.vars.hcl", `tok = "` + secret + `" runs = 3` + "\n", Options{}, "Missing newline after argument"},
		{"unterminated string", "bad.vars.hcl", `tok = "` + secret + "\n", Options{}, "Unterminated template string"},
		{"bare word", "bad.vars.hcl", "tok = " + secret + "\n", Options{}, "Variables not allowed"},
		{"any file name", "secrets.txt", `tok = "` + secret + `" runs = 3` + "\n", Options{}, "Missing newline after argument"},
		{"json keyword", "bad.vars.json", `{"tok": ` + secret + "}\n", Options{}, "Invalid JSON keyword"},
		{"auto json", "x.auto.vars.json", `{"tok": ` + secret + "}\n", Options{}, "Invalid JSON keyword"},
		{"auto hcl", "x.auto.vars.hcl", `tok = "` + secret + `" runs = 3` + "\n", Options{}, "Missing newline after argument"},
		{"wrong type", "ok.vars.hcl", `pin = "` + secret + `"` + "\n", Options{}, "Invalid value for variable"},
		{"map key", "ok.vars.hcl", `tags = {` + secret + ` = ["x"]}` + "\n", Options{}, "Invalid value for variable"},
		{"-var", "", "", Options{Vars: []string{"pin=" + secret}}, "Invalid value for variable"},
		{"environment", "", "", Options{Environ: []string{EnvVarPrefix + "pin=" + secret}}, "Invalid value for variable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(withholdSpec), 0o644); err != nil {
				t.Fatal(err)
			}
			opts := c.opts
			if c.file != "" {
				p := filepath.Join(dir, c.file)
				if err := os.WriteFile(p, []byte(c.src), 0o644); err != nil {
					t.Fatal(err)
				}
				if !isAutoVarsFile(c.file) {
					opts.VarFiles = []string{p}
				}
			}
			cfg, diags := Load(dir, opts)
			if !diags.HasErrors() {
				t.Fatal("want an error")
			}
			var text bytes.Buffer
			if err := WriteDiagnostics(&text, diags, cfg.Files); err != nil {
				t.Fatal(err)
			}
			js := string(DiagnosticsJSON(diags, cfg.Files))
			if !strings.Contains(text.String(), "Error: "+c.summary) {
				t.Fatalf("want %q in:\n%s", c.summary, text.String())
			}
			for _, out := range []string{text.String(), js} {
				if strings.Contains(out, secret) || strings.Contains(out, "GOODSECRET") {
					t.Errorf("the value is shown:\n%s", out)
				}
			}
			if !strings.Contains(text.String(), "(source not shown: variable files and values may hold secrets)") {
				t.Errorf("the text does not say the source is withheld:\n%s", text.String())
			}
			var parsed []JSONDiagnostic
			if err := json.Unmarshal([]byte(js), &parsed); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, d := range parsed {
				if d.Summary == c.summary {
					found = true
					if d.Snippet != "" || d.SnippetWithheld != WithheldReason || d.Range == nil || d.Range.Start.Line != 1 {
						t.Errorf("JSON diagnostic %+v: want a location, no snippet and snippet_withheld", d)
					}
				}
			}
			if !found {
				t.Errorf("no %q in %s", c.summary, js)
			}
		})
	}
}

// TestSpecSnippetsStay: diagnostics about the spec itself keep their source
// line, and a parser detail that quotes nothing of a variable file is kept.
func TestSpecSnippetsStay(t *testing.T) {
	dir := t.TempDir()
	spec := withholdSpec + "model \"x\" {\n  idd = 1\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := Load(dir, Options{})
	var text bytes.Buffer
	_ = WriteDiagnostics(&text, diags, cfg.Files)
	if !strings.Contains(text.String(), "idd = 1") || strings.Contains(text.String(), "not shown") {
		t.Errorf("a spec diagnostic keeps its snippet:\n%s", text.String())
	}

	p := filepath.Join(dir, "v.vars.hcl")
	if err := os.WriteFile(p, []byte(`tok = "abc" runs = 3`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags = Load(dir, Options{VarFiles: []string{p}})
	text.Reset()
	_ = WriteDiagnostics(&text, diags, cfg.Files)
	if !strings.Contains(text.String(), "An argument definition must end with a newline.") {
		t.Errorf("a detail that quotes nothing is kept:\n%s", text.String())
	}
}

// FuzzVarFileNeverQuoted: whatever a variable file holds around a planted
// value (HCL or JSON), no rendered diagnostic shows it: no snippet of the
// file, and no detail that repeats it, except the loader's own
// "Value for undeclared variable", which names an attribute.
func FuzzVarFileNeverQuoted(f *testing.F) {
	const planted = "QQSECRETQQ"
	for _, seed := range [][2]string{
		{`tok = "`, `" runs = 3`}, {`tok = "`, ""}, {"tok = ", ""}, {`{"tok": `, "}"}, {`{"tok": "`, `"}`},
		{"tok = upper(", ")"}, {`tok = "${`, `}"`}, {"tok = [", "]"}, {"tok = {a = ", "}"}, {"tok = x", ".y"},
		{"tok = 1\ntok = ", ""}, {"tok = <<EOT\n", "\n"}, {`tok = "a\`, `"`}, {"tok = 0x", ""},
	} {
		f.Add(seed[0], seed[1], false)
		f.Add(seed[0], seed[1], true)
	}
	f.Fuzz(func(t *testing.T, before, after string, asJSON bool) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(withholdSpec), 0o644); err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, "v.vars.hcl")
		if asJSON {
			name = filepath.Join(dir, "v.vars.json")
		}
		if err := os.WriteFile(name, []byte(before+planted+after), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, diags := Load(dir, Options{VarFiles: []string{name}})
		for _, d := range diags {
			if d.Subject == nil || d.Subject.Filename != name || d.Summary == "Value for undeclared variable" {
				continue
			}
			var text bytes.Buffer
			_ = WriteDiagnostics(&text, hcl.Diagnostics{d}, cfg.Files)
			js := string(DiagnosticsJSON(hcl.Diagnostics{d}, cfg.Files))
			if strings.Contains(text.String(), planted) || strings.Contains(js, planted) {
				t.Fatalf("the planted value is shown:\n%s", text.String())
			}
			if !SourceWithheld(d) {
				t.Fatalf("a diagnostic in the variable file is not withheld: %s", d.Summary)
			}
		}
	})
}
