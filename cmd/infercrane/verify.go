package main

import (
	"fmt"

	"github.com/infercrane/infercrane/executor/report"
)

func init() {
	register(&command{
		Name:     "verify",
		Synopsis: "Check an evidence file's digest and, with -state, recompute its figures from the records",
		Run:      runVerify,
	})
}

func runVerify(env *cliEnv, args []string) int {
	fs := newFlags(env, "verify", usageDoc{
		Usage: "infercrane verify [flags] FILE",
		About: "Recomputes the digest of an evidence file; with -state also recomputes every figure from\n" +
			"the per-request records. Exit status 0 when all agree, 1 otherwise.",
		Examples: []string{
			"infercrane verify .infercrane/reports/quickstart.evidence.json",
			"infercrane verify -state .infercrane .infercrane/reports/quickstart.evidence.json",
		},
	})
	stateDir := fs.String("state", "", "state directory whose records the figures are recomputed from")
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
	if res.Recomputed {
		if len(res.Differences) == 0 {
			fmt.Fprintf(env.Stdout, "Figures OK: %d figures recomputed from the records agree.\n", res.Checked)
		} else {
			fmt.Fprintf(env.Stdout, "Figures DIFFER: %d of %d figures recomputed from the records disagree:\n", len(res.Differences), res.Checked)
			for _, d := range res.Differences {
				fmt.Fprintf(env.Stdout, "  %s\n", d)
			}
		}
	}
	if !res.OK() {
		return 1
	}
	return 0
}
