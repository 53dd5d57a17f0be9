package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang"
)

// typeNameHomes are the packages allowed to compare executor type names:
// each built-in executor's own package, and the composition root.
var typeNameHomes = []string{"executor/sim", "plugins/endpoint", "plugins/local", "plugins/modal", "cmd/infercrane"}

// typeNameDebt lists, per file, the comparisons of executor type names that
// remain from before executors declared their capabilities (issue 24), each
// to be replaced by a lang.Capabilities field. TestLayersExecutorTypeNames fails
// when a file compares more than its entry allows (a new comparison) and
// when it compares fewer (shrink the entry: the debt only goes down).
// Billed, SimSpeedup and the evidence class read lang.Capabilities, which
// a plan read from a file gets back from the built-in declarations
// (planner.restoreCapabilities); a calibration file's evidence kinds are
// looked up in the declarations (planner.executorKinds). None remains.
var typeNameDebt = map[string]int{}

// TestLayersExecutorTypeNames holds the rule "executor capabilities are declared
// where the executor registers": outside an executor's own package and
// cmd/infercrane, no code compares a value with an executor type name (the
// names of the registered built-ins) to decide what an executor does; it
// reads lang.Capabilities instead. A comparison is an == or !=, a case of a
// switch, or a slices/strings Contains or HasPrefix, whose other side reads
// an executor type or kind (its text names executor, kinds or .Type).
func TestLayersExecutorTypeNames(t *testing.T) {
	names := map[string]bool{}
	for _, b := range (&cliEnv{Wire: productionWiring()}).builtins() {
		names[b.Name] = true
	}
	found, err := typeNameComparisons(repoRoot(t), names)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 && len(typeNameDebt) > 0 {
		t.Fatal("no comparison found at all; the scan is broken")
	}
	for _, file := range slices.Sorted(maps.Keys(found)) {
		if n, allowed := len(found[file]), typeNameDebt[file]; n > allowed {
			t.Errorf("%s compares executor type names (%d, %d allowed):\n\t%s\ndeclare what the code decides as a lang.Capabilities field on each executor's Schema and read it from the executor (lang.Executor.Capabilities)",
				file, n, allowed, strings.Join(found[file], "\n\t"))
		}
	}
	for _, file := range slices.Sorted(maps.Keys(typeNameDebt)) {
		if n := len(found[file]); n < typeNameDebt[file] {
			t.Errorf("%s compares executor type names %d times, fewer than typeNameDebt's %d: lower its entry (or delete it at 0)", file, n, typeNameDebt[file])
		}
	}
}

// TestLayersExecutorTypeNamesCatchesANewComparison shows the scan finds the
// comparisons it is meant to, and not a local block's kind.
func TestLayersExecutorTypeNamesCatchesANewComparison(t *testing.T) {
	root := writeTree(t, map[string]string{
		"planner/x.go": `package planner
func a(in struct{ ExecutorType string }) bool { return in.ExecutorType == "sim" }
func b(e struct{ Type string }) int {
	switch e.Type {
	case "modal", "other":
		return 1
	}
	return 0
}
func c(kinds []string) bool { return slices.Contains(kinds, "local") }
func d(kind string) bool { return kind == "local" } // the locals block: not an executor
`,
		"executor/sim/y.go": `package sim
func e(t string) bool { return t == "sim" }
`,
	})
	found, err := typeNameComparisons(root, map[string]bool{"sim": true, "modal": true, "local": true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"planner/x.go": {
		`planner/x.go:2: in.ExecutorType == "sim"`,
		`planner/x.go:5: switch e.Type { case "modal" }`,
		`planner/x.go:10: slices.Contains(kinds, "local")`,
	}}
	if !reflect.DeepEqual(found, want) {
		t.Errorf("found %q, want %q", found, want)
	}
}

// TestLayersBuiltinCapabilities holds lang.BuiltinExecutors (what
// the tests below cmd, which cannot link the executors, load specs with)
// equal to what each registered built-in declares.
func TestLayersBuiltinCapabilities(t *testing.T) {
	got := map[string]lang.Capabilities{}
	for _, b := range (&cliEnv{Wire: productionWiring()}).builtins() {
		got[b.Name] = b.Schema().Capabilities
	}
	if !reflect.DeepEqual(got, lang.BuiltinExecutors) {
		t.Errorf("registered capabilities %+v, lang.BuiltinExecutors %+v: make lang's table what the executors declare", got, lang.BuiltinExecutors)
	}
}

// readsExecutorType matches the text of an expression that reads an
// executor's type or kind.
var readsExecutorType = regexp.MustCompile(`(?i)executor|\bkinds\b|\.Type\b`)

// typeNameComparisons scans the non-test Go files under root outside
// typeNameHomes and returns, per file (slash path from root), each
// comparison of an executor type name in names.
func typeNameComparisons(root string, names map[string]bool) (map[string][]string, error) {
	found := map[string][]string{}
	err := walkGoFiles(root, func(rel, name string) bool { return slices.Contains(typeNameHomes, rel) }, func(rel string, fset *token.FileSet, f *ast.File) {
		text := func(e ast.Expr) string { return exprText(fset, e) }
		isName := func(e ast.Expr) (string, bool) {
			lit, ok := e.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(lit.Value)
			return s, err == nil && names[s]
		}
		add := func(pos token.Pos, what string) {
			found[rel] = append(found[rel], fmt.Sprintf("%s:%d: %s", rel, fset.Position(pos).Line, what))
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op != token.EQL && n.Op != token.NEQ {
					return true
				}
				for _, pair := range [][2]ast.Expr{{n.X, n.Y}, {n.Y, n.X}} {
					if _, ok := isName(pair[0]); ok && readsExecutorType.MatchString(text(pair[1])) {
						add(n.Pos(), text(n))
					}
				}
			case *ast.SwitchStmt:
				if n.Tag == nil || !readsExecutorType.MatchString(text(n.Tag)) {
					return true
				}
				for _, c := range n.Body.List {
					for _, e := range c.(*ast.CaseClause).List {
						if s, ok := isName(e); ok {
							add(e.Pos(), fmt.Sprintf("switch %s { case %q }", text(n.Tag), s))
						}
					}
				}
			case *ast.CallExpr:
				fn := text(n.Fun)
				if len(n.Args) != 2 || !slices.Contains([]string{"slices.Contains", "strings.Contains", "strings.HasPrefix"}, fn) {
					return true
				}
				if _, ok := isName(n.Args[1]); ok && readsExecutorType.MatchString(text(n.Args[0])) {
					add(n.Pos(), text(n))
				}
			}
			return true
		})
	})
	return found, err
}

// walkGoFiles parses every non-test Go file below root (goFiles, with
// skip) and hands each to visit.
func walkGoFiles(root string, skip func(rel, name string) bool, visit func(rel string, fset *token.FileSet, f *ast.File)) error {
	fset := token.NewFileSet()
	return goFiles(root, skip, func(rel, path string) error {
		if strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		visit(rel, fset, f)
		return nil
	})
}

// exprText renders an expression's source text.
func exprText(fset *token.FileSet, e ast.Expr) string {
	var b strings.Builder
	_ = printer.Fprint(&b, fset, e)
	return b.String()
}
