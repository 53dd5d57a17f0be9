package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/infercrane/infercrane/planner"
)

// addShowCommands registers the commands of this file (called by setupCommands).
func addShowCommands() {
	register(&command{
		Name:     "show",
		Synopsis: "Render a saved plan (plan -out) or plan JSON, and say whether it is still valid",
		Run:      runShow,
	})
}

func runShow(env *cliEnv, args []string) int {
	fs := newFlags(env, "show", usageDoc{
		Usage: "infercrane show [flags] [PLANFILE | STATE_DIR]",
		About: "Renders a saved plan (made by 'infercrane plan -out FILE' or 'plan -json > FILE') and says\n" +
			"whether apply still accepts it; or, given a state directory or nothing (-state, default\n" +
			".infercrane), shows the state: every lane with its completed runs and their figures.",
		Examples: []string{
			"infercrane show",
			"infercrane show quick.plan",
			"infercrane show -json examples/quickstart/.infercrane",
		},
	})
	asJSON := fs.Bool("json", false, "print the plan (or the state's lanes) as JSON on stdout")
	addVerbose(env, fs.FlagSet)
	dir := stateFlag(fs)
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	arg, code, ok := fs.oneOptional(pos, "PLANFILE or STATE_DIR", "")
	if !ok {
		return code
	}
	if arg == "" || isDir(arg) {
		if arg == "" {
			arg = *dir
		}
		return showState(env, arg, *asJSON)
	}
	pos = []string{arg}
	p, saved, err := planner.ReadPlanFile(pos[0])
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane: %v\n", hinted(err))
		return 1
	}
	if *asJSON {
		b, err := planner.Marshal(p)
		if err != nil {
			fmt.Fprintf(env.Stderr, "infercrane: %v\n", hinted(err))
			return 1
		}
		_, _ = env.Stdout.Write(b)
	} else if err := writePlanText(env, p); err != nil {
		return 1
	}
	if saved != nil {
		reportStaleness(env, saved)
	}
	return 0
}

// reportStaleness says on stderr whether a saved plan's inputs changed.
func reportStaleness(env *cliEnv, s *planner.SavedPlan) {
	if why := s.Unverified(); why != "" {
		fmt.Fprintf(env.Stderr, "\n'infercrane apply' refuses this plan: %s. Make a new plan with 'infercrane plan -out FILE %s'.\n", why, s.SpecPath)
		return
	}
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

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// showState renders every lane of the state in dir.
func showState(env *cliEnv, dir string, asJSON bool) int {
	snap, ok := loadState(env, "show", dir)
	if !ok {
		return exitError
	}
	if asJSON {
		lanes := []any{}
		for _, id := range snap.LaneIDs() {
			lanes = append(lanes, snap.Lanes[id])
		}
		b, _ := json.MarshalIndent(map[string]any{"format_version": "1", "state_dir": snap.Dir, "lanes": lanes}, "", "  ")
		fmt.Fprintln(env.Stdout, string(b))
		return exitOK
	}
	runs := 0
	for _, l := range snap.Lanes {
		runs += len(l.Completed)
	}
	fmt.Fprintf(env.Stdout, "State %s: %s, %s complete.\n", dir, plural(len(snap.Lanes), "lane", "lanes"), plural(runs, "run", "runs"))
	for _, id := range snap.LaneIDs() {
		fmt.Fprintln(env.Stdout)
		writeStateLane(env.Stdout, snap.Lanes[id])
	}
	return exitOK
}
