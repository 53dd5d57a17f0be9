// Command infercrane-loadgen is InferCrane's load generator alone, the
// small binary the modal executor copies into each sandbox (instead of the
// whole CLI) so that the load runs next to the server.
//
// It reads the load to generate as one typed message, the JSON of a
// loadgen.Config (exactly what the plan resolved for the run), runs it,
// writes the per-request records as JSONL and prints the summary as JSON on
// stdout, or with --result the whole loadgen.Result: the summary with the
// server's own view of the run (its latency histograms, read from /metrics
// right before and after the measured requests). Progress lines go to
// stderr. Its command line is the one `infercrane bench` accepts for the
// same job, so either binary can serve:
//
//	infercrane-loadgen bench --config FILE [--url URL] [--records FILE] [--result FILE] [--server-gauges D] [--json]
//	infercrane-loadgen probe [--timeout D] URL
//
// probe exits 0 when URL answers 2xx: the executor's health check of the
// server inside the sandbox.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "probe" {
		return probe(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "bench" {
		args = args[1:]
	}
	fs := flag.NewFlagSet("infercrane-loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "the load to generate: a loadgen config as JSON (- for stdin); required")
	url := fs.String("url", "", "server base URL (overrides the config's base_url)")
	records := fs.String("records", "", "write per-request records (JSONL) to this file")
	result := fs.String("result", "", "write the whole result (summary, the server's view from its /metrics, calibrations, and the records unless --records takes them) as one JSON document to this file (- for stdout, instead of the summary)")
	gauges := fs.Duration("server-gauges", 0, "sample the server's gauges (running and waiting requests, KV-cache usage) from /metrics every D over the run, for --result's server_series and server_metrics (0: off)")
	fs.Bool("json", true, "print the summary as JSON (always on; accepted for bench compatibility)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: infercrane-loadgen [bench] --config FILE [--url URL] [--records FILE] [--result FILE] [--server-gauges D] [--json]")
		fmt.Fprintln(stderr, "\nRuns the load a loadgen config describes and prints its summary as JSON.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *config == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	cfg, err := loadgen.ReadConfigFile(*config, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "infercrane-loadgen: %v\n", err)
		return 2
	}
	if *url != "" {
		cfg.BaseURL = *url
	}
	// As in `infercrane bench`: records stay in memory only when --result
	// must carry them; with --records they stream to that file.
	keep := *result != "" && *records == ""
	opts := []loadgen.Option{loadgen.WithProgress(func(p loadgen.Progress) { fmt.Fprintln(stderr, p) }, 5*time.Second)}
	if *gauges > 0 {
		opts = append(opts, loadgen.WithServerGauges(*gauges))
	}
	res, err, werr := loadgen.RunRecorded(ctx, cfg, *records, keep, opts...)
	if res == nil {
		fmt.Fprintf(stderr, "infercrane-loadgen: %v\n", err)
		return 1
	}
	code := 0
	if err != nil {
		fmt.Fprintf(stderr, "infercrane-loadgen: interrupted (%v); the summary covers the requests that finished\n", err)
		code = 1
	}
	if werr != nil {
		fmt.Fprintf(stderr, "infercrane-loadgen: %v\n", werr)
		code = 1
	}
	if *result != "" {
		if err := loadgen.WriteResultFile(*result, stdout, res); err != nil {
			fmt.Fprintf(stderr, "infercrane-loadgen: %v\n", err)
			code = 1
		}
		if *result == "-" {
			return code
		}
	}
	b, err := json.Marshal(res.Summary)
	if err != nil {
		fmt.Fprintf(stderr, "infercrane-loadgen: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return code
}

// probe is `infercrane probe`: exit 0 when URL answers 2xx within --timeout.
func probe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("infercrane-loadgen probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "Usage: infercrane-loadgen probe [--timeout D] URL")
		return 2
	}
	if err := loadgen.Probe(ctx, fs.Arg(0), *timeout); err != nil {
		fmt.Fprintf(stderr, "infercrane-loadgen probe: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "ok")
	return 0
}
