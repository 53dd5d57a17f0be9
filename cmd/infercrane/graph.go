package main

import (
	"flag"
	"fmt"

	"github.com/infercrane/infercrane/planner"
)

func init() {
	register(&command{
		Name:     "graph",
		Synopsis: "Print the plan's DAG as Graphviz DOT or a Mermaid flowchart",
		Run:      runGraph,
	})
}

func runGraph(env *cliEnv, args []string) int {
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	pf := addPlanFlags(fs)
	format := fs.String("format", "dot", "output format: dot (Graphviz) or mermaid")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "Usage: infercrane graph [-format dot|mermaid] [-var NAME=VALUE]... [-state DIR] [PATH]")
		fmt.Fprintln(env.Stderr, "\nPATH is a spec (a directory or .hcl file; default .), planned against its state, or a plan file.")
		fmt.Fprintln(env.Stderr, "Render DOT with: infercrane graph | dot -Tsvg > plan.svg")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagErrorCode(err, 1)
	}
	if len(pos) > 1 {
		fmt.Fprintf(env.Stderr, "infercrane graph: one PATH at most, got %d; run 'infercrane graph -h'\n", len(pos))
		return 1
	}
	path := "."
	if len(pos) == 1 {
		path = pos[0]
	}
	var render func(*planner.Plan) string
	switch *format {
	case "dot":
		render = planner.DOT
	case "mermaid":
		render = planner.Mermaid
	default:
		fmt.Fprintf(env.Stderr, "infercrane graph: -format must be dot or mermaid, not %q\n", *format)
		return 1
	}
	p, ok := readPlanArg(env, path, pf, false)
	if !ok {
		return 1
	}
	fmt.Fprint(env.Stdout, render(p))
	return 0
}
