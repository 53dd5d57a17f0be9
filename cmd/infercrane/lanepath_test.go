package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// maxLaneStages is the most packages one lane's path from HCL to evidence
// may cross (issue 12).
const maxLaneStages = 6

// simLanePath is the path of a simulated lane, in order: the spec
// language, the planner (with its performance model), the runner with its
// embedded sim executor, the simulated engine that executor serves in
// process, the load generator and the evidence.
var simLanePath = []string{"lang", "planner", "executor", "executor/sim", "executor/loadgen", "executor/report"}

// pluginLanePath is the path of a lane on the executor in package
// plugin: "plugins" itself (the host of external plugins) or one of
// plugins/<type> (endpoint, local, modal).
func pluginLanePath(plugin string) []string {
	return []string{"lang", "planner", "executor", plugin, "executor/loadgen", "executor/report"}
}

// laneLeaves are the library packages the stages call: each imports no
// package of the module but other leaves, so it adds no stage to a path.
var laneLeaves = []string{"planner/arch", "planner/load", "planner/search", "planner/state", "executor/affinity", "executor/clock", "executor/redact", "executor/benchresult", "plugins/executorpb"}

// offLane are the packages no lane runs, and what they are for instead.
var offLane = map[string]string{
	"planner/workload":         "trace profiling (infercrane profile)",
	"planner/workload/synth":   "synthetic traces for trace profiling",
	"executor/calibrate":       "fitting a calibration from evidence (infercrane calibrate)",
	"plugins/modal/localcloud": "the test stand-in for Modal's cloud",
	"planner/state/bucket":     "the state backend in S3 (cmd wires it into the state store)",
}

// linkedNotRun are packages a lane's stages link but the lane does not
// run: each only through the one stage named, for the reason given.
var linkedNotRun = map[string]struct{ by, why string }{
	"executor/sim":     {"executor", "the sim executor embedded in executor serves this engine; a plugin lane does not run it"},
	"planner/workload": {"plugins/modal", "the modal executor also profiles traces in Modal sandboxes (infercrane profile); a lane does not run it"},
}

// isCommand reports whether a package is a program (a composition root,
// which may import anything below it).
func isCommand(short string) bool {
	return strings.HasPrefix(short, "cmd/") || strings.HasPrefix(short, "plugins/cmd/")
}

// lanePaths returns each kind of lane's path: the sim lane's, then one per
// plugin executor of the tree (plugins and each plugins/<type> that is not
// a leaf or off the lane path), keyed by the executor's package.
func lanePaths(pkgs map[string]*modulePackage) (names []string, paths map[string][]string) {
	paths = map[string][]string{"executor (sim)": simLanePath}
	names = []string{"executor (sim)"}
	var plugins []string
	for short := range pkgs {
		if short != "plugins" && (!strings.HasPrefix(short, "plugins/") || strings.Count(short, "/") != 1) {
			continue
		}
		if slices.Contains(laneLeaves, short) || offLane[short] != "" || isCommand(short) {
			continue
		}
		plugins = append(plugins, short)
	}
	sort.Strings(plugins)
	for _, p := range plugins {
		paths[p] = pluginLanePath(p)
		names = append(names, p)
	}
	return names, paths
}

// lanePathProblems checks, for the module's source tree at root, that
// every package is a stage of a lane's path, a leaf, off the lane path or
// a command; that leaves import only leaves; that the stages of each
// lane's path link no package beyond the path, the leaves and the named
// exceptions of linkedNotRun; and that no path is longer than
// maxLaneStages. It returns each lane's path, for the log.
func lanePathProblems(root string) (problems []string, described []string, err error) {
	pkgs, err := readModule(root)
	if err != nil {
		return nil, nil, err
	}
	names, paths := lanePaths(pkgs)
	stage := map[string]bool{}
	for _, path := range paths {
		for _, p := range path {
			stage[p] = true
		}
	}
	for _, listed := range append(slices.Sorted(maps.Keys(stage)), laneLeaves...) {
		if pkgs[listed] == nil {
			problems = append(problems, "package "+listed+" is listed as a stage or a leaf but is not in the tree; update the lists in lanepath_test.go")
		}
	}
	for short := range pkgs {
		if !stage[short] && !slices.Contains(laneLeaves, short) && offLane[short] == "" && !isCommand(short) {
			problems = append(problems, "package "+short+" is on no lane's path, not a leaf and not listed off the lane path: if a lane runs it, it is one stage more (fold it into the stage it serves); if it imports only leaves, list it in laneLeaves; else say in offLane what runs it")
		}
	}
	for _, leaf := range laneLeaves {
		if pkgs[leaf] == nil {
			continue
		}
		for _, imp := range pkgs[leaf].imports {
			if !slices.Contains(laneLeaves, imp) {
				problems = append(problems, "leaf "+leaf+" imports "+imp+", which is not a leaf: it makes the leaf a stage")
			}
		}
	}
	for _, name := range names {
		path := paths[name]
		described = append(described, name+" lane: "+strings.Join(path, " -> "))
		if len(path) > maxLaneStages {
			problems = append(problems, fmt.Sprintf("the %s lane crosses %d stages, more than %d", name, len(path), maxLaneStages))
		}
		// The packages the path's stages link (non-test imports), and who imports each.
		importers := map[string][]string{}
		seen := map[string]bool{}
		queue := append([]string{}, path...)
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			if seen[p] || pkgs[p] == nil {
				continue
			}
			seen[p] = true
			for _, imp := range pkgs[p].imports {
				importers[imp] = append(importers[imp], p)
				queue = append(queue, imp)
			}
		}
		var extra []string
		for p := range seen {
			if slices.Contains(path, p) || slices.Contains(laneLeaves, p) {
				continue
			}
			if ex, ok := linkedNotRun[p]; ok && slices.Equal(importers[p], []string{ex.by}) {
				continue
			}
			extra = append(extra, p)
		}
		sort.Strings(extra)
		for _, p := range extra {
			by := slices.Clone(importers[p])
			sort.Strings(by)
			problems = append(problems, fmt.Sprintf("the %s lane's stages link %s (imported by %s), one stage more than its %d; fold it into the stage it serves or make it a leaf", name, p, strings.Join(slices.Compact(by), ", "), len(path)))
		}
	}
	sort.Strings(problems)
	return problems, described, nil
}

// TestLanePath checks issue 12's rule on the repository: one lane's path
// from HCL to evidence crosses at most six packages (the README's "One
// lane, from HCL to evidence" lists them), the other packages a lane uses
// are leaves, and a package that would lengthen a path fails here.
func TestLanePath(t *testing.T) {
	problems, described, err := lanePathProblems(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(described) < 4 {
		t.Fatalf("only %d kinds of lane were found: %q; the plugin executors are not discovered", len(described), described)
	}
	for _, d := range described {
		t.Log(d)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestLanePathCatchesAStrayStage makes sure the check can fail: in a tree
// with every listed package and lawful imports it finds nothing, and once
// the planner imports a new package that imports lang (a stage, not a
// leaf) and a leaf imports a stage, it names both, on every lane's path.
func TestLanePathCatchesAStrayStage(t *testing.T) {
	lawful := map[string][]string{
		"lang":                     nil,
		"planner":                  {"lang", "planner/load", "planner/search", "planner/state"},
		"planner/arch":             nil,
		"planner/load":             nil,
		"planner/search":           nil,
		"planner/state":            nil,
		"planner/workload":         {"lang", "planner/state"},
		"planner/workload/synth":   nil,
		"executor":                 {"planner", "executor/sim", "executor/loadgen", "executor/redact"},
		"executor/sim":             {"planner", "planner/load", "executor/clock"},
		"executor/loadgen":         {"planner/load", "executor/clock", "executor/redact"},
		"executor/report":          {"lang", "planner", "executor/loadgen"},
		"executor/calibrate":       {"executor/report", "executor/benchresult"},
		"executor/benchresult":     nil,
		"executor/affinity":        nil,
		"executor/clock":           nil,
		"executor/redact":          nil,
		"plugins":                  {"executor", "lang", "plugins/executorpb"},
		"plugins/executorpb":       nil,
		"plugins/endpoint":         {"executor"},
		"plugins/modal":            {"executor", "planner", "planner/workload"},
		"plugins/modal/localcloud": {"plugins/modal"},
		"plugins/cmd/example":      {"plugins"},
		"cmd/infercrane":           {"plugins", "plugins/endpoint", "executor/calibrate", "planner/workload/synth"},
	}
	write := func(t *testing.T, pkgs map[string][]string) string {
		files := map[string]string{}
		for dir, imports := range pkgs {
			src := "package " + filepath.Base(dir) + "\n"
			for _, imp := range imports {
				src += "\nimport _ \"" + modulePath + "/" + imp + "\"\n"
			}
			files[dir+"/x.go"] = src
		}
		return writeTree(t, files)
	}
	problems, described, err := lanePathProblems(write(t, lawful))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 || len(described) != 4 {
		t.Fatalf("the lawful tree: %q, lanes %q; want no problems and 4 lanes", problems, described)
	}

	stray := maps.Clone(lawful)
	stray["planner"] = append(slices.Clone(lawful["planner"]), "planner/extra")
	stray["planner/extra"] = []string{"lang"}
	stray["executor/redact"] = []string{"executor/loadgen"}
	problems, _, err = lanePathProblems(write(t, stray))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"leaf executor/redact imports executor/loadgen, which is not a leaf: it makes the leaf a stage",
		"package planner/extra is on no lane's path, not a leaf and not listed off the lane path: if a lane runs it, it is one stage more (fold it into the stage it serves); if it imports only leaves, list it in laneLeaves; else say in offLane what runs it",
		"the executor (sim) lane's stages link planner/extra (imported by planner), one stage more than its 6; fold it into the stage it serves or make it a leaf",
		"the plugins lane's stages link planner/extra (imported by planner), one stage more than its 6; fold it into the stage it serves or make it a leaf",
		"the plugins/endpoint lane's stages link planner/extra (imported by planner), one stage more than its 6; fold it into the stage it serves or make it a leaf",
		"the plugins/modal lane's stages link planner/extra (imported by planner), one stage more than its 6; fold it into the stage it serves or make it a leaf",
	}
	if !slices.Equal(problems, want) {
		t.Fatalf("found\n%s\nwant\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}
