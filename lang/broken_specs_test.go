package lang

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// testGPUTypes stands in for the planner's catalog (lang may not import it).
var testGPUTypes = []string{"T4", "L4", "A10", "L40S", "A100-40GB", "A100-80GB", "H100", "H200", "B200"}

func testOptions() Options {
	return Options{Version: "0.1.0", GPUTypes: testGPUTypes}
}

// specMarker is an expected diagnostic: "# ERROR: text" or "# WARNING: text" at
// the end of the line the diagnostic must start on.
type specMarker struct {
	line     int
	severity hcl.DiagnosticSeverity
	text     string
}

var markerRE = regexp.MustCompile(`#\s*(ERROR|WARNING):\s*(.+?)\s*$`)

func readMarkers(t *testing.T, src []byte) []specMarker {
	t.Helper()
	var out []specMarker
	sc := bufio.NewScanner(bytes.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		m := markerRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		sev := hcl.DiagError
		if m[1] == "WARNING" {
			sev = hcl.DiagWarning
		}
		out = append(out, specMarker{n, sev, m[2]})
	}
	return out
}

// TestBrokenSpecs loads every testdata/specs/*.hcl file and checks that each
// marked line gets a diagnostic of that severity containing the specMarker's
// text (in its summary or detail), and that no unmarked line gets one.
func TestBrokenSpecs(t *testing.T) {
	files, err := filepath.Glob("testdata/specs/*.hcl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no broken specs found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			markers := readMarkers(t, src)
			if len(markers) == 0 {
				t.Fatalf("%s has no # ERROR: markers", f)
			}
			_, diags := Load(f, testOptions())
			used := make([]bool, len(diags))
			for _, m := range markers {
				found := false
				for i, d := range diags {
					if d.Subject == nil || d.Subject.Start.Line != m.line || d.Severity != m.severity {
						continue
					}
					if strings.Contains(d.Summary+": "+d.Detail, m.text) || strings.Contains(d.Summary, m.text) {
						found, used[i] = true, true
					}
				}
				if !found {
					t.Errorf("%s:%d: want a diagnostic containing %q; got:\n%s", f, m.line, m.text, render(diags, src, f))
				}
			}
			for i, d := range diags {
				if used[i] {
					continue
				}
				line := 0
				if d.Subject != nil {
					line = d.Subject.Start.Line
				}
				if !markedLine(markers, line, d.Severity) {
					t.Errorf("%s:%d: unexpected diagnostic %s: %s", f, line, d.Summary, d.Detail)
				}
			}
		})
	}
}

// markedLine reports whether some specMarker expects a diagnostic on line (a
// line may carry several diagnostics, e.g. an unknown attribute and its
// suggestion, but only one specMarker).
func markedLine(markers []specMarker, line int, sev hcl.DiagnosticSeverity) bool {
	for _, m := range markers {
		if m.line == line && m.severity == sev {
			return true
		}
	}
	return false
}

func render(diags hcl.Diagnostics, src []byte, name string) string {
	var b strings.Builder
	WriteDiagnostics(&b, diags, map[string][]byte{name: src})
	return b.String()
}
