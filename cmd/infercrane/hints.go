package main

import (
	"errors"
	"fmt"

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
