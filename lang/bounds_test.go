package lang

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// attrTables are the attribute tables of the language's blocks, by the
// name of their variable.
var attrTables = map[string][]attrSpec{
	"modelSpecs": modelSpecs, "gpuSpecs": gpuSpecs, "runtimeSpecs": runtimeSpecs,
	"gateSpecs": gateSpecs, "screenSpecs": screenSpecs, "searchSpecs": searchSpecs,
	"searchSLOSpecs": searchSLOSpecs, "shapeSpecs": shapeSpecs, "sloSpecs": sloSpecs,
	"traceSpecs": traceSpecs, "sampleSpecs": sampleSpecs, "lengthsSpecs": lengthsSpecs,
	"prefixSpecs": prefixSpecs, "curveSpecs": curveSpecs, "sessionSpecs": sessionSpecs,
}

// TestEveryNumberIsBounded: every numeric attribute of every block has an
// upper bound (issue 25, defect 6), and the test knows every table (a new
// []attrSpec variable in the package fails it until listed above).
func TestEveryNumberIsBounded(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Values) != 1 {
				return true
			}
			if cl, ok := vs.Values[0].(*ast.CompositeLit); ok {
				if at, ok := cl.Type.(*ast.ArrayType); ok {
					if id, ok := at.Elt.(*ast.Ident); ok && id.Name == "attrSpec" {
						if _, known := attrTables[vs.Names[0].Name]; !known {
							t.Errorf("%s: table %s is not in attrTables", name, vs.Names[0].Name)
						}
					}
				}
			}
			return true
		})
	}
	for table, specs := range attrTables {
		for _, sp := range specs {
			numeric := sp.typ == cty.Number || sp.typ == cty.List(cty.Number)
			if numeric && sp.max <= 0 {
				t.Errorf("%s: %s has no upper bound", table, sp.name)
			}
		}
	}
}

// TestBoundsAreDocumented: docs/language/bounds.md lists every bound.
func TestBoundsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/language/bounds.md")
	if err != nil {
		t.Fatal(err)
	}
	for table, specs := range attrTables {
		for _, sp := range specs {
			if sp.max <= 0 || sp.name == "seed" {
				continue
			}
			want := "| `" + sp.name + "` | " + strconv.FormatFloat(sp.max, 'f', -1, 64) + " |"
			if !strings.Contains(string(doc), want) {
				t.Errorf("%s: docs/language/bounds.md has no row %q", table, want)
			}
		}
	}
}

// TestDistributionBoundsAreDocumented: docs/language/bounds.md lists the
// bounds of distributions (TestDistributionsAreBounded checks them).
func TestDistributionBoundsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/language/bounds.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| token lengths | `p50`, `p90`, `p95`, `p99`, `quantiles[].v` | " + strconv.Itoa(MaxTokens) + " |",
		"| token lengths | lognormal `median` | " + strconv.Itoa(MaxTokens) + " |",
		"| token lengths | lognormal `sigma` | " + strconv.Itoa(MaxSigma) + " |",
		"| any | `quantiles` (points) | " + strconv.Itoa(MaxQuantiles) + " |",
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/language/bounds.md has no row %q", want)
		}
	}
}
