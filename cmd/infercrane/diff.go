package main

import (
	"flag"
	"fmt"

	"github.com/infercrane/infercrane/planner"
)

func init() {
	register(&command{
		Name:     "diff",
		Synopsis: "Compare two plans or specs: lanes added, removed and changed, and the cost delta",
		Run:      runDiff,
	})
}

func runDiff(env *cliEnv, args []string) int {
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	pf := addPlanFlags(fs)
	asJSON := fs.Bool("json", false, "print the diff as JSON on stdout")
	format := fs.String("format", "text", "output format: text or markdown (a pull-request comment, under 60,000 characters)")
	detailed := fs.Bool("detailed-exitcode", false, "exit 0 when the plans have the same lanes, 1 on errors, 2 when they differ")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "Usage: infercrane diff [-json | -format text|markdown] [-detailed-exitcode] [-var NAME=VALUE]... OLD NEW")
		fmt.Fprintln(env.Stderr, "\nOLD and NEW are plan files (plan -out, plan -json) or specs (a directory or .hcl file, planned")
		fmt.Fprintln(env.Stderr, "from scratch, ignoring state, with the -var flags given).")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagErrorCode(err, 1)
	}
	if len(pos) != 2 {
		fmt.Fprintln(env.Stderr, "infercrane diff: give OLD and NEW; run 'infercrane diff -h'")
		return 1
	}
	if *format != "text" && *format != "markdown" {
		fmt.Fprintf(env.Stderr, "infercrane diff: -format must be text or markdown, not %q\n", *format)
		return 1
	}
	var plans [2]*planner.Plan
	for i, path := range pos {
		p, ok := readPlanArg(env, path, pf, true)
		if !ok {
			return 1
		}
		plans[i] = p
	}
	d := planner.Diff(plans[0], plans[1])
	switch {
	case *asJSON:
		b, err := d.JSON()
		if err != nil {
			fmt.Fprintf(env.Stderr, "infercrane: %v\n", err)
			return 1
		}
		_, _ = env.Stdout.Write(b)
	case *format == "markdown":
		fmt.Fprint(env.Stdout, d.Markdown())
	default:
		if err := d.WriteText(env.Stdout); err != nil {
			return 1
		}
	}
	if *detailed && !d.Empty() {
		return 2
	}
	return 0
}

// readPlanArg returns the plan in a plan file, or plans a spec path
// (ignoring its state when fresh is set).
func readPlanArg(env *cliEnv, path string, pf *planFlags, fresh bool) (*planner.Plan, bool) {
	if isSpecPath(path) {
		ps, ok := planSpec(env, path, pf, fresh)
		return ps.plan, ok
	}
	p, _, err := planner.ReadPlanFile(path)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane: %v\n", err)
		return nil, false
	}
	return p, true
}
