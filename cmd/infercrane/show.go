package main

import (
	"flag"
	"fmt"

	"github.com/infercrane/infercrane/planner"
)

func init() {
	register(&command{
		Name:     "show",
		Synopsis: "Render a saved plan (plan -out) or plan JSON, and say whether it is still valid",
		Run:      runShow,
	})
}

func runShow(env *cliEnv, args []string) int {
	fs := flag.NewFlagSet("show", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	asJSON := fs.Bool("json", false, "print the plan as JSON on stdout")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "Usage: infercrane show [-json] FILE")
		fmt.Fprintln(env.Stderr, "\nRenders the plan in FILE, made by 'infercrane plan -out FILE' or 'infercrane plan -json > FILE'.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagErrorCode(err, 1)
	}
	if len(pos) != 1 {
		fmt.Fprintln(env.Stderr, "infercrane show: give exactly one plan FILE; run 'infercrane show -h'")
		return 1
	}
	p, saved, err := planner.ReadPlanFile(pos[0])
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane: %v\n", err)
		return 1
	}
	if *asJSON {
		b, err := planner.Marshal(p)
		if err != nil {
			fmt.Fprintf(env.Stderr, "infercrane: %v\n", err)
			return 1
		}
		_, _ = env.Stdout.Write(b)
	} else if err := planner.WriteText(env.Stdout, p); err != nil {
		return 1
	}
	if saved != nil {
		reportStaleness(env, saved)
	}
	return 0
}

// reportStaleness says on stderr whether a saved plan's inputs changed.
func reportStaleness(env *cliEnv, s *planner.SavedPlan) {
	cur, err := s.CurrentInputs()
	if err != nil {
		fmt.Fprintf(env.Stderr, "\nCannot check whether the plan is still valid: %v\n", err)
		return
	}
	changes := s.Changes(cur)
	if len(changes) == 0 {
		fmt.Fprintf(env.Stderr, "\nThe plan's inputs (spec %s, state %s) are unchanged: 'infercrane apply' accepts it.\n", s.SpecPath, s.StateDir)
		return
	}
	fmt.Fprintf(env.Stderr, "\nThe plan is stale; 'infercrane apply' refuses it because:\n")
	for _, c := range changes {
		fmt.Fprintf(env.Stderr, "  - %s\n", c)
	}
	fmt.Fprintf(env.Stderr, "Make a new plan with 'infercrane plan -out FILE %s'.\n", s.SpecPath)
}
