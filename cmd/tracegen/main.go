// Command tracegen writes a synthetic serving trace with the exact Parquet
// schema of the public Chutes trace ("A Year in LLM Serving"), for trying
// `infercrane profile trace` without downloading anything.
//
//	go run ./cmd/tracegen -rows 1000000 -rows-per-group 50000 -o trace.parquet
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/infercrane/infercrane/planner/workload/synth"
)

func main() {
	rows := flag.Int64("rows", 100_000, "number of requests")
	perGroup := flag.Int("rows-per-group", 10_000, "rows per Parquet row group")
	seed := flag.Uint64("seed", 1, "random seed (same seed, same file)")
	rate := flag.Float64("rate", 50, "mean arrival rate, requests per second")
	out := flag.String("o", "trace.parquet", "output file")
	flag.Parse()
	if err := write(*out, synth.Options{Rows: *rows, RowsPerGroup: *perGroup, Seed: *seed, RatePerSecond: *rate}); err != nil {
		fmt.Fprintln(os.Stderr, "tracegen:", err)
		os.Exit(1)
	}
}

func write(path string, o synth.Options) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := synth.Write(f, o); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
