package planner

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang"
)

var update = flag.Bool("update", false, "rewrite the golden plans in testdata/golden")

// TestGoldenPlans plans every testdata/golden/NAME/spec with the spec
// language (no trace resolver: unpinned traces stay pending) and compares
// the JSON and text plans with NAME/plan.json and NAME/plan.txt. Run
// `go test ./planner -run Golden -update` after an intended change and
// review the diff.
func TestGoldenPlans(t *testing.T) {
	dirs, err := filepath.Glob("../testdata/golden/*/spec")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden specs: %v", err)
	}
	for _, specDir := range dirs {
		name := filepath.Base(filepath.Dir(specDir))
		t.Run(name, func(t *testing.T) {
			cfg, diags := lang.Load(specDir, lang.Options{})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			p, bdiags := Build(cfg, nil, Options{Version: "golden"})
			if bdiags.HasErrors() {
				t.Fatal(bdiags)
			}
			checkGraph(t, p)
			js, err := Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			if err := WriteText(&text, p); err != nil {
				t.Fatal(err)
			}
			for file, got := range map[string]string{"plan.json": string(js), "plan.txt": text.String()} {
				path := filepath.Join(filepath.Dir(specDir), file)
				if *update {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from the golden file at %s; if the change is intended, run go test ./planner -run Golden -update and review the diff", path, firstDifference(string(want), got))
				}
			}
		})
	}
}

// firstDifference describes the first line where got differs from want.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, wl, gl)
		}
	}
	return "no line (equal)"
}
