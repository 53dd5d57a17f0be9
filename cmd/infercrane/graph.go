package main

import (
	"fmt"

	"github.com/infercrane/infercrane/planner"
)

// addGraphCommands registers the commands of this file (called by setupCommands).
func addGraphCommands() {
	register(&command{
		Name:     "graph",
		Synopsis: "Print the plan's DAG as Graphviz DOT or a Mermaid flowchart",
		Run:      runGraph,
	})
}

func runGraph(env *cliEnv, args []string) int {
	fs := newFlags(env, "graph", usageDoc{
		Usage: "infercrane graph [flags] [PATH | PLANFILE]",
		About: "Prints the DAG apply walks (deploy, preflight, runs, aggregate, gates, compare, report,\n" +
			"teardown) for the spec in PATH (default .), planned against its state, or for a plan file.",
		Examples: []string{
			"infercrane graph | dot -Tsvg > plan.svg",
			"infercrane graph -format mermaid examples/quickstart",
			"infercrane graph quick.plan",
		},
	})
	pf := addPlanFlags(fs.FlagSet)
	format := fs.String("format", "dot", "output format: dot (Graphviz) or mermaid")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	path, code, ok := fs.oneOptional(pos, "PATH", ".")
	if !ok {
		return code
	}
	var render func(*planner.Plan) string
	switch *format {
	case "dot":
		render = planner.DOT
	case "mermaid":
		render = planner.Mermaid
	default:
		return fs.usageError("-format must be dot or mermaid, not %q", *format)
	}
	p, ok := readPlanArg(env, path, pf, false)
	if !ok {
		return 1
	}
	if len(p.Graph.Nodes) == 0 {
		fmt.Fprintln(env.Stderr, "infercrane graph: nothing to run: "+planner.SummaryLine(p)+" The graph is empty; use -replace LANE to rerun a lane.")
		return exitOK
	}
	fmt.Fprint(env.Stdout, render(p))
	return 0
}
