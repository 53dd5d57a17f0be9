package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/infercrane/infercrane/executor/report"
	"github.com/infercrane/infercrane/planner/state"
)

func init() {
	register(&command{
		Name:     "report",
		Synopsis: "Write the evidence and reports of a state directory; exit 0/3/4 by the gates",
		Run:      runReport,
	})
}

func runReport(env *cliEnv, args []string) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	formats := fs.String("format", strings.Join(report.AllFormats, ","), "comma-separated formats to write: "+strings.Join(report.AllFormats, ", "))
	out := fs.String("out", "", "directory for the reports (default STATE_DIR/reports)")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "Usage: infercrane report [STATE_DIR] [-format json,md,html,parquet] [-out DIR]")
		fmt.Fprintln(env.Stderr, "\nBuilds the evidence of every screen in STATE_DIR (default "+state.DefaultDir+") from its")
		fmt.Fprintln(env.Stderr, "per-request records and writes it. Exit status: 0 every gate passed, 3 a gate failed,")
		fmt.Fprintln(env.Stderr, "4 a gate was inconclusive, 1 an error.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagErrorCode(err, 1)
	}
	if len(pos) > 1 {
		fmt.Fprintf(env.Stderr, "infercrane report: one STATE_DIR at most, got %d; run 'infercrane report -h'\n", len(pos))
		return 1
	}
	dir := state.DefaultDir
	if len(pos) == 1 {
		dir = pos[0]
	}
	var list []string
	for _, f := range strings.Split(*formats, ",") {
		if f = strings.TrimSpace(f); f != "" {
			list = append(list, f)
		}
	}
	if err := report.CheckFormats(list); err != nil {
		fmt.Fprintf(env.Stderr, "infercrane report: %v\n", err)
		return 1
	}
	opts := report.Options{Formats: list, OutDir: *out, InfercraneVersion: Version}
	if env.Environ != nil {
		opts.Secrets = report.SecretsFromEnv(env.Environ())
	}
	oc, err := report.Generate(dir, opts)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane report: %v\n", err)
		return 1
	}
	printOutcome(env, oc)
	return oc.ExitCode
}

// printOutcome renders what Generate wrote and the gates; apply uses it too.
func printOutcome(env *cliEnv, oc *report.Outcome) {
	for _, w := range oc.Warnings {
		fmt.Fprintf(env.Stderr, "Warning: %s\n", w)
	}
	for _, f := range oc.Files {
		fmt.Fprintf(env.Stdout, "Wrote %s\n", filepath.ToSlash(f))
	}
	for _, ev := range oc.Evidence {
		gs := ev.GateSummary
		fmt.Fprintf(env.Stdout, "Screen %s: %d gate(s) pass, %d fail, %d inconclusive.\n", ev.Screen, gs.Pass, gs.Fail, gs.Inconclusive)
		for _, m := range ev.Models {
			for _, c := range m.Campaigns {
				for _, g := range c.Gates {
					if g.Status != report.StatusPass {
						fmt.Fprintf(env.Stdout, "  %s %s on %s/%s: %s\n", strings.ToUpper(g.Status), g.Gate, m.Name, c.Profile, g.Reason)
					}
				}
			}
		}
	}
}
