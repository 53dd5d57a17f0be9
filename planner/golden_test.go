package planner

import (
	"errors"
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
	dirs, err := filepath.Glob("testdata/golden/*/spec")
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

// TestFormat1PlanStillReads: a plan an infercrane before format 2 wrote
// (testdata/format1-screen-l40s.plan.json, the golden plan of
// testdata/golden/screen-l40s as it was) still parses with its digest,
// and planning the same spec today gives the same lanes with the same IDs
// and deployments: resolving executor settings changed no lane's identity,
// so an existing state does not rerun anything. apply refuses the old plan
// (its lanes carry no settings), and a diff of the two shows no change.
func TestFormat1PlanStillReads(t *testing.T) {
	b, err := os.ReadFile("testdata/format1-screen-l40s.plan.json")
	if err != nil {
		t.Fatal(err)
	}
	old, err := Unmarshal(b)
	if err != nil {
		t.Fatalf("a format 1 plan no longer reads: %v", err)
	}
	if err := Applicable(old); !errors.Is(err, ErrPlanFormat) {
		t.Errorf("apply would take a format 1 plan: %v", err)
	}
	cfg, diags := lang.Load("testdata/golden/screen-l40s/spec", lang.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cur, _ := Build(cfg, nil, Options{Version: "golden"})
	if err := Applicable(cur); err != nil {
		t.Fatal(err)
	}
	if len(old.Lanes) != len(cur.Lanes) {
		t.Fatalf("%d lanes then, %d now", len(old.Lanes), len(cur.Lanes))
	}
	for i, l := range cur.Lanes {
		o := old.Lanes[i]
		if o.ID != l.ID || o.Key != l.Key || o.Deployment != l.Deployment {
			t.Errorf("lane %s: id %s -> %s, deployment %s -> %s; the plan format must not change lane identities (a change of lane inputs made on purpose leaves this format 1 file stale: say so and drop it)", l.Key, o.ID, l.ID, o.Deployment, l.Deployment)
		}
	}
	if d := Diff(old, cur); len(d.Changed)+len(d.Added)+len(d.Removed) != 0 {
		t.Errorf("diff of the format 1 plan and today's: %+v", d)
	}
}
