package main

import (
	"fmt"

	"github.com/infercrane/infercrane/planner"
)

// addDiffCommands registers the commands of this file (called by setupCommands).
func addDiffCommands() {
	register(&command{
		Name:     "diff",
		Synopsis: "Compare two plans or specs: lanes added, removed and changed, and the cost delta",
		Run:      runDiff,
	})
}

func runDiff(env *cliEnv, args []string) int {
	fs := newFlags(env, "diff", usageDoc{
		Usage: "infercrane diff [flags] OLD NEW",
		About: "Compares two plans: lanes added, removed and changed (with the changed inputs named) and\n" +
			"the cost delta. OLD and NEW are plan files (plan -out, plan -json) or specs (a directory or\n" +
			".hcl file, planned from scratch, ignoring state, with the -var flags given).",
		Examples: []string{
			"infercrane diff old.plan new.plan",
			"infercrane diff -format markdown main-spec/ pr-spec/ > comment.md",
			"infercrane diff -detailed-exitcode -json old.json specs/",
		},
	})
	pf := addPlanFlags(fs.FlagSet)
	asJSON := fs.Bool("json", false, "print the diff as JSON on stdout")
	format := fs.String("format", "text", "output format: text or markdown (a pull-request comment, under 60,000 characters)")
	detailed := fs.Bool("detailed-exitcode", false, "exit 0 when the plans have the same lanes, 1 on errors, 2 when they differ")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 2 {
		return fs.usageError("give OLD and NEW, got %d argument(s)", len(pos))
	}
	if *format != "text" && *format != "markdown" {
		return fs.usageError("-format must be text or markdown, not %q", *format)
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
			fmt.Fprintf(env.Stderr, "infercrane: %v\n", hinted(err))
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
		fmt.Fprintf(env.Stderr, "infercrane: %v\n", hinted(err))
		return nil, false
	}
	return p, true
}
