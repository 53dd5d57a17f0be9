package main

import (
	"flag"
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
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	stateDir := fs.String("state", "", "state directory whose records the figures are recomputed from")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "Usage: infercrane verify FILE [-state DIR]")
		fmt.Fprintln(env.Stderr, "\nRecomputes the digest of an evidence file; with -state also recomputes every")
		fmt.Fprintln(env.Stderr, "figure from the per-request records. Exit status 0 when all agree, 1 otherwise.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagErrorCode(err, 1)
	}
	if len(pos) != 1 {
		fmt.Fprintln(env.Stderr, "infercrane verify: give exactly one evidence FILE; run 'infercrane verify -h'")
		return 1
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
