package main

import (
	"fmt"
	"math"
	"os"

	"github.com/infercrane/infercrane/planner/workload/synth"
)

// addProfileSynthCommands registers the commands of this file (called by setupCommands).
func addProfileSynthCommands() {
	register(&command{
		Name:     "profile synth",
		Synopsis: "Write a synthetic trace with the public Chutes trace's Parquet schema",
		Run:      runProfileSynth,
	})
}

func runProfileSynth(env *cliEnv, args []string) int {
	fs := newFlags(env, "profile synth", usageDoc{
		Usage: "infercrane profile synth [flags] FILE",
		About: "Writes a synthetic trace with the public Chutes trace's Parquet schema (same seed, same file),\n" +
			"for trying 'profile trace' and trace-shaped screens offline.",
		Examples: []string{
			"infercrane profile synth trace.parquet",
			"infercrane profile synth --rows 20000 --rows-per-group 2000 --seed 7 small.parquet",
		},
	})
	rows := fs.Int64("rows", 100_000, "number of requests")
	perGroup := fs.Int("rows-per-group", 10_000, "rows per Parquet row group")
	seed := fs.Uint64("seed", 1, "random seed (same seed, same file)")
	rate := fs.Float64("rate", 50, "mean arrival rate, requests per second")
	pageIndex := fs.Bool("page-index", false, "write Parquet's page index (offset index), as some writers do")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageError("give one output FILE, got %d", len(pos))
	}
	if code, ok := fs.checkFlags(
		flagRule{*rows >= 1, fmt.Sprintf("--rows %d: write 1 or more requests", *rows)},
		flagRule{*perGroup >= 1, fmt.Sprintf("--rows-per-group %d: give row groups 1 or more rows", *perGroup)},
		flagRule{*seed >= 1, "--seed 0 would write the file of --seed 1 (0 means the default); give a seed of 1 or more"},
		flagRule{*rate > 0 && !math.IsInf(*rate, 0), fmt.Sprintf("--rate %g: give a finite mean arrival rate above 0 requests per second", *rate)},
	); !ok {
		return code
	}
	f, err := os.Create(pos[0])
	if err == nil {
		err = synth.Write(f, synth.Options{Rows: *rows, RowsPerGroup: *perGroup, Seed: *seed, RatePerSecond: *rate, PageIndex: *pageIndex})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane profile synth: %v\n", hinted(err))
		return 1
	}
	fmt.Fprintf(env.Stdout, "Wrote %s: %d rows in row groups of %d.\n", pos[0], *rows, *perGroup)
	return 0
}
