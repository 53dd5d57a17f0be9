package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/report"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/state"
)

// hints are what the CLI tells a user to run about each kind of error the
// libraries return. The libraries say what is wrong in plain errors; the
// commands to run are the CLI's, so they are written here, once.
var hints = []struct {
	kind error
	hint string
}{
	{planner.ErrNotPlan, "make one with 'infercrane plan -out FILE' (or 'infercrane plan -json > FILE')"},
	{planner.ErrPlanFormat, "make the plan again with 'infercrane plan -out FILE'"},
	{planner.ErrPlanEdited, "make the plan again with 'infercrane plan -out FILE'"},
	{state.ErrNoState, "run 'infercrane apply' with this state directory first (or pass the right state directory)"},
	{report.ErrNotEvidence, "pass a *.evidence.json file written by 'infercrane report'"},
	{report.ErrEvidenceChanged, "see what changed with 'infercrane verify -state STATE_DIR FILE', or write it again with 'infercrane report STATE_DIR'"},
	{executor.ErrNotProfiled, "run 'infercrane profile trace', pin the profile and its digest in the trace block, then plan again"},
	{executor.ErrLeftRunning, "run 'infercrane cleanup' to stop it now"},
	{evidence.ErrNotPrivateKey, "make one with 'infercrane keygen' or 'openssl genpkey -algorithm ed25519'"},
	{evidence.ErrNotPublicKey, "pass the .pub file 'infercrane keygen' wrote (or 'openssl pkey -pubout' of the key)"},
	{evidence.ErrNoEnvelope, "sign the evidence with 'infercrane report -sign KEY'"},
}

// hinted adds to err what to run about it, for the first kind of hints it
// is; other errors are returned as they are.
func hinted(err error) error {
	if err == nil {
		return nil
	}
	for _, h := range hints {
		if errors.Is(err, h.kind) {
			return fmt.Errorf("%w; %s", err, h.hint)
		}
	}
	return err
}

// evidenceFiles are where a directory holds evidence files: in it, or in
// its reports directory when it is a state directory (or a spec
// directory's, which dirGivenForFiles also looks in).
var evidenceFiles = []string{report.FileName("*", report.FormatJSON), state.ReportsDir + "/" + report.FileName("*", report.FormatJSON)}

// dirGivenForFiles is the error for a directory passed where a command
// reads files (evidence, a records file): it names the files of the kind
// found under it, directly or in the state directory of a spec directory
// (STATE_DIR/reports for evidence, STATE_DIR/runs/LANE for records), so
// the user sees what to pass. It is nil when path is not a directory.
func dirGivenForFiles(path, what string, patterns ...string) error {
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return nil
	}
	var found []string
	for _, p := range patterns {
		for _, root := range []string{path, filepath.Join(path, state.DefaultDir)} {
			m, _ := filepath.Glob(filepath.Join(root, p))
			found = append(found, m...)
		}
	}
	slices.Sort(found)
	found = slices.Compact(found)
	switch {
	case len(found) == 0:
		return fmt.Errorf("%s is a directory, and no %s lies in it or in its %s: give the %s's path", path, what, state.DefaultDir, what)
	case len(found) > 4:
		return fmt.Errorf("%s is a directory: give the %s's path, one of the %d under it, e.g. %s", path, what, len(found), strings.Join(found[:4], ", "))
	}
	return fmt.Errorf("%s is a directory: give the %s's path: %s", path, what, strings.Join(found, ", "))
}

// specDirGivenForState is err, about a directory that holds no applied
// plan, with the state directory inside it named instead of the generic
// hint when dir is a spec directory that was applied
// (DIR/.infercrane/plan.json); other errors are returned as they are.
func specDirGivenForState(dir string, err error) error {
	if dir == "" || !errors.Is(err, state.ErrNoState) {
		return err
	}
	inner := filepath.Join(dir, state.DefaultDir)
	if _, serr := os.Stat(filepath.Join(inner, state.PlanFile)); serr != nil {
		return err
	}
	return fmt.Errorf("%v; %s is a spec directory that was applied: pass its state directory, %s", err, dir, inner)
}

// appliedStateDir is nil when dir holds an applied plan, else the error
// that says it does not (naming the state directory inside a spec
// directory given instead).
func appliedStateDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, state.PlanFile)); err == nil {
		return nil
	}
	return specDirGivenForState(dir, fmt.Errorf("%s has no %s: %w", dir, state.PlanFile, state.ErrNoState))
}
