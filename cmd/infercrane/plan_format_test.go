package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/planner"
)

// TestApplyRefusesAFormat1Plan: a plan saved by an infercrane before plan
// format 2 carries no executor settings, which this infercrane's executors
// run from (they have no defaults of their own). apply refuses it before
// anything starts, saying to plan again; show still reads it.
func TestApplyRefusesAFormat1Plan(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec")
	if err := os.MkdirAll(spec, 0o755); err != nil {
		t.Fatal(err)
	}
	src := rigSpec("executor \"x\" {\n  type = \"sim\"\n}", 1)
	if err := os.WriteFile(filepath.Join(spec, "main.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	file := filepath.Join(dir, "old.plan")
	if code, out, errOut := runCLI(t, "plan", "-state", state, "-out", file, spec); code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	saved, err := planner.LoadSaved(file)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Plan.FormatVersion != "2" || saved.Plan.Lanes[0].ExecutorSettings["timing"] != "model" {
		t.Fatalf("a fresh plan: format %q, settings %v", saved.Plan.FormatVersion, saved.Plan.Lanes[0].ExecutorSettings)
	}
	// What an earlier infercrane wrote: format 1, no settings.
	saved.Plan.FormatVersion = "1"
	for _, l := range saved.Plan.Lanes {
		l.ExecutorSettings = nil
	}
	if err := saved.Save(file); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "show", file); code != 0 || !strings.Contains(out, "Plan: ") {
		t.Fatalf("show of a format 1 plan: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runCLI(t, "apply", "-auto-approve", file)
	if code != 1 || !strings.Contains(errOut, `format_version "1"`) || !strings.Contains(errOut, "make the plan again") {
		t.Fatalf("apply of a format 1 plan: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(state, "runs")); err == nil {
		t.Errorf("apply of a format 1 plan ran something")
	}
}
