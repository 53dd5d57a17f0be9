package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/infercrane/infercrane/planner/workload/synth"
)

func init() {
	register(&command{
		Name:     "profile synth",
		Synopsis: "Write a synthetic trace with the public Chutes trace's Parquet schema",
		Run:      runProfileSynth,
	})
}

func runProfileSynth(env *cliEnv, args []string) int {
	fs := flag.NewFlagSet("profile synth", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	rows := fs.Int64("rows", 100_000, "number of requests")
	perGroup := fs.Int("rows-per-group", 10_000, "rows per Parquet row group")
	seed := fs.Uint64("seed", 1, "random seed (same seed, same file)")
	rate := fs.Float64("rate", 50, "mean arrival rate, requests per second")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "Usage: infercrane profile synth [--rows N] [--rows-per-group N] [--seed S] [--rate R] FILE")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagErrorCode(err, 1)
	}
	if len(pos) != 1 {
		fmt.Fprintln(env.Stderr, "infercrane profile synth: give one output FILE; run 'infercrane profile synth -h'")
		return 1
	}
	f, err := os.Create(pos[0])
	if err == nil {
		err = synth.Write(f, synth.Options{Rows: *rows, RowsPerGroup: *perGroup, Seed: *seed, RatePerSecond: *rate})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane profile synth: %v\n", err)
		return 1
	}
	fmt.Fprintf(env.Stdout, "Wrote %s: %d rows in row groups of %d.\n", pos[0], *rows, *perGroup)
	return 0
}
