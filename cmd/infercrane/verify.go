package main

import (
	"fmt"

	"github.com/infercrane/infercrane/executor/report"
)

// addVerifyCommands registers the commands of this file (called by setupCommands).
func addVerifyCommands() {
	register(&command{
		Name:     "verify",
		Synopsis: "Check an evidence file's digest and files and, with -state, rebuild it field by field from the state",
		Run:      runVerify,
	})
}

func runVerify(env *cliEnv, args []string) int {
	fs := newFlags(env, "verify", usageDoc{
		Usage: "infercrane verify [flags] FILE",
		About: "Recomputes the digest of an evidence file and the SHA-256 of the files it names; with -state\n" +
			"also rebuilds the whole document from the state (plan, journal, records, cleanup) and names\n" +
			"every field that differs. Exit status 0 when all agree, 1 otherwise.",
		Examples: []string{
			"infercrane verify .infercrane/reports/quickstart.evidence.json",
			"infercrane verify -state .infercrane .infercrane/reports/quickstart.evidence.json",
		},
	})
	stateDir := fs.String("state", "", "state directory the whole evidence document is rebuilt from and compared with")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageError("give exactly one evidence FILE, got %d", len(pos))
	}
	res, err := report.Verify(pos[0], *stateDir)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane verify: %v\n", err)
		return 1
	}
	if res.DigestOK {
		fmt.Fprintf(env.Stdout, "Digest OK: %s\n", res.Computed)
	} else {
		fmt.Fprintf(env.Stdout, "Digest MISMATCH: the file states %s but its content hashes to %s; the evidence was changed after it was written.\n", res.Recorded, res.Computed)
	}
	switch {
	case res.Recomputed && len(res.Differences) == 0:
		fmt.Fprintf(env.Stdout, "Fields OK: %d fields rebuilt from the state agree; %d file(s) match their SHA-256.\n", res.Checked, res.FilesChecked)
	case res.Recomputed:
		fmt.Fprintf(env.Stdout, "Fields DIFFER: %d difference(s) from the document the state gives (%d fields, %d files checked):\n", len(res.Differences), res.Checked, res.FilesChecked)
	case len(res.Differences) == 0:
		fmt.Fprintf(env.Stdout, "Files OK: %d file(s) beside the evidence match their SHA-256; pass -state to rebuild the whole document.\n", res.FilesChecked)
	default:
		fmt.Fprintf(env.Stdout, "Files DIFFER: %d difference(s):\n", len(res.Differences))
	}
	for _, d := range res.Differences {
		fmt.Fprintf(env.Stdout, "  %s\n", d)
	}
	if !res.OK() {
		return 1
	}
	return 0
}
