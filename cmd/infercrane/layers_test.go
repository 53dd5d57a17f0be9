package main

import (
	"fmt"
	"go/build"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// modulePath is the module every package of the repository lives in.
const modulePath = "github.com/infercrane/infercrane"

// layerOf is the floor of a package of the module, from the bottom: lang
// (0) <- planner, planner/* (1) <- executor, executor/* (2) <- plugins,
// plugins/* (3) <- cmd/* (4). ok is false for a package outside them.
func layerOf(importPath string) (floor int, name string, ok bool) {
	rel := strings.TrimPrefix(strings.TrimPrefix(importPath, modulePath), "/")
	top, _, _ := strings.Cut(rel, "/")
	for i, f := range []string{"lang", "planner", "executor", "plugins", "cmd"} {
		if top == f {
			return i, f, true
		}
	}
	return 0, "", false
}

// leaves are the libraries any floor may use and what each may import of
// the module (non-test): the performance model needs only the load
// generator's shared arithmetic, the model architectures of planner/arch
// and the runtime's declared settings of lang/engine, so the sandbox load
// generator and the simulated engine link no planner or HCL through them.
var leaves = map[string][]string{
	"lang/engine":          {"lang/setting"},
	"lang/setting":         nil,
	"lang/shape":           {"lang/setting"},
	"planner/arch":         nil,
	"planner/cputime":      nil,
	"planner/load":         nil,
	"planner/perf":         {"lang/engine", "planner/arch", "planner/load"},
	"planner/search":       nil,
	"planner/state":        nil,
	"executor/affinity":    nil,
	"executor/benchresult": {"lang/shape"},
	"executor/clock":       nil,
	"executor/redact":      nil,
	"plugins/executorpb":   nil,
}

// TestLayers checks the design's import rule: "imports only point down:
// lang <- planner <- executor <- plugins <- cmd; no package imports one
// above it". It reads every package's imports (its tests' included: a
// planner test that needs a plugin is the same dependency pointing up)
// with go/build, for each platform whose files differ, and fails naming
// each import that points up.
func TestLayers(t *testing.T) {
	root := repoRoot(t)
	bad, n, err := upwardImports(root)
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("only %d packages were found under %s; the walk is broken", n, root)
	}
	for _, b := range bad {
		t.Errorf("%s; move the code it needs down, or pass it in from cmd/infercrane (wiring.go)", b)
	}
	pkgs, err := readModule(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, leaf := range slices.Sorted(maps.Keys(leaves)) {
		if pkgs[leaf] == nil {
			t.Errorf("leaf %s is not in the tree; update leaves in layers_test.go", leaf)
		}
	}
}

// modulePackage is one package of the module as go/build reads it, for
// every platform whose files differ: the module packages it imports (as
// paths inside the module), without and with its tests'.
type modulePackage struct {
	imports     []string // its non-test files'
	testImports []string // its tests', in-package and external
}

// readModule reads every package of the module's source tree at root,
// keyed by its path inside the module (testdata, vendor and hidden
// folders are skipped, as the go command skips them).
func readModule(root string) (map[string]*modulePackage, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root && goCommandSkips(d.Name()) {
			return filepath.SkipDir
		}
		dirs = append(dirs, path)
		return nil
	})
	if err != nil {
		return nil, err
	}
	inModule := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			if rel, ok := strings.CutPrefix(p, modulePath+"/"); ok {
				out = append(out, rel)
			}
		}
		return out
	}
	pkgs := map[string]*modulePackage{}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		ctx := build.Default
		ctx.GOOS, ctx.CgoEnabled = goos, false
		for _, dir := range dirs {
			pkg, err := ctx.ImportDir(dir, 0)
			if err != nil {
				if _, none := err.(*build.NoGoError); none {
					continue
				}
				return nil, fmt.Errorf("read the package in %s: %w", dir, err)
			}
			rel, _ := filepath.Rel(root, dir)
			short := filepath.ToSlash(rel)
			p := pkgs[short]
			if p == nil {
				p = &modulePackage{}
				pkgs[short] = p
			}
			p.imports = append(p.imports, inModule(pkg.Imports)...)
			p.testImports = append(p.testImports, inModule(append(append([]string{}, pkg.TestImports...), pkg.XTestImports...))...)
		}
	}
	for _, p := range pkgs {
		slices.Sort(p.imports)
		p.imports = slices.Compact(p.imports)
		slices.Sort(p.testImports)
		p.testImports = slices.Compact(p.testImports)
	}
	return pkgs, nil
}

// upwardImports lists, for the module's source tree at root, every import
// that points up a floor and every package outside the floors, and counts
// the packages read.
func upwardImports(root string) (bad []string, packages int, err error) {
	pkgs, err := readModule(root)
	if err != nil {
		return nil, 0, err
	}
	for short, pkg := range pkgs {
		from, fromName, ok := layerOf(modulePath + "/" + short)
		if !ok {
			bad = append(bad, "package "+short+" is outside the floors (lang, planner, executor, plugins, cmd)")
			continue
		}
		packages++
		if allowed, leaf := leaves[short]; leaf {
			for _, imp := range pkg.imports {
				if !slices.Contains(allowed, imp) {
					bad = append(bad, "leaf "+short+" imports "+imp+"; a leaf imports only "+strings.Join(append([]string{"the standard library"}, allowed...), ", "))
				}
			}
		}
		for _, imp := range append(append([]string{}, pkg.imports...), pkg.testImports...) {
			to, toName, ok := layerOf(modulePath + "/" + imp)
			if ok && to > from {
				bad = append(bad, "import points up: "+short+" ("+fromName+") imports "+imp+" ("+toName+")")
			}
		}
	}
	sort.Strings(bad)
	return slices.Compact(bad), packages, nil
}

// TestLayersCatchesAnUpwardImport makes sure the reading can fail: in a
// tree where a planner package's test imports a plugin, a leaf imports a
// package it may not and a package sits outside the floors, all three are
// named, and the lawful imports are not.
func TestLayersCatchesAnUpwardImport(t *testing.T) {
	root := writeTree(t, map[string]string{
		"planner/bad/bad.go":      "package bad\n\nimport _ \"" + modulePath + "/lang\"\n",
		"planner/bad/bad_test.go": "package bad\n\nimport _ \"" + modulePath + "/plugins/endpoint\"\n",
		"plugins/good/good.go":    "package good\n\nimport _ \"" + modulePath + "/executor\"\n",
		"internal/stray/stray.go": "package stray\n",
		"lang/testdata/x/x.go":    "package x\n\nimport _ \"" + modulePath + "/cmd/infercrane\"\n",
		"planner/perf/perf.go":    "package perf\n\nimport _ \"" + modulePath + "/planner/state\"\n",
	})
	bad, n, err := upwardImports(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"import points up: planner/bad (planner) imports plugins/endpoint (plugins)",
		"leaf planner/perf imports planner/state; a leaf imports only the standard library, lang/engine, planner/arch, planner/load",
		"package internal/stray is outside the floors (lang, planner, executor, plugins, cmd)",
	}
	if !slices.Equal(bad, want) || n != 3 {
		t.Fatalf("found %q in %d packages, want %q in 3", bad, n, want)
	}
}

// goCommandSkips says whether the go command leaves out a folder of this
// name below a module's root: testdata, vendor, and names that begin
// with "." or "_".
func goCommandSkips(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// goFiles calls visit with every Go file under root (tests included): its
// path inside root (slash-separated) and on disk, in the folders the go
// command reads (goCommandSkips) and not in one skip names (by its path
// inside root and its name; nil skips none).
func goFiles(root string, skip func(rel, name string) bool, visit func(rel, path string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && path != root && (goCommandSkips(d.Name()) || skip != nil && skip(rel, d.Name())):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go"):
			return nil
		}
		return visit(rel, path)
	})
}

// repoRoot is the repository's root, two floors above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// writeTree writes files (path inside the tree: source) into a new
// temporary folder and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, src := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
