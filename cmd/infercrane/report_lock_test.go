package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/planner/state"
)

// report refuses to write a state's own reports while an apply holds the
// state (the apply writes the same files when it finishes); -out elsewhere
// is allowed. It once wrote them beside the running apply.
func TestReportRefusesAStateAnApplyHolds(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec")
	if err := os.MkdirAll(spec, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../examples/quickstart/main.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(spec, "main.hcl"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(spec, state.DefaultDir)
	if code, out, errOut := runCLI(t, "apply", "-auto-approve", "-var", "runs=1", spec); code != 0 {
		t.Fatalf("apply exited %d:\n%s\n%s", code, out, errOut)
	}
	st, err := state.Open(stateDir, "a test standing in for a running apply")
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "report", stateDir)
	if code != 1 || !strings.Contains(errOut, "holds "+stateDir) || !strings.Contains(errOut, "-out DIR") {
		t.Errorf("report while the state is held: exit %d, %q; want 1 and a refusal naming -out", code, errOut)
	}
	if code, _, errOut := runCLI(t, "report", "-out", filepath.Join(dir, "elsewhere"), stateDir); code != 0 {
		t.Errorf("report -out elsewhere while the state is held: exit %d: %s", code, errOut)
	}
	st.Close()
	if code, _, errOut := runCLI(t, "report", stateDir); code != 0 {
		t.Errorf("report after the apply let go: exit %d: %s", code, errOut)
	}
}
