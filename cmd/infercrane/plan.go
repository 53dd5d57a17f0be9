package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/state"
)

// addPlanCommands registers the commands of this file (called by setupCommands).
func addPlanCommands() {
	register(&command{
		Name:     "plan",
		Synopsis: "Show the lanes a spec will run, preflight findings and the estimated cost",
		Run:      runPlan,
	})
}

// planFlags are the flags plan shares with the commands that plan a spec.
type planFlags struct {
	vars    *varFlags
	state   *string
	replace multiFlag
	target  multiFlag
	// noDigest: the command neither shows nor keeps the plan's digest
	// (planner.Options.NoDigest).
	noDigest bool
}

func addPlanFlags(fs *flag.FlagSet) *planFlags {
	pf := &planFlags{vars: addVarFlags(fs)}
	pf.state = fs.String("state", "", "state directory (default: .infercrane next to the spec)")
	fs.Var(&pf.replace, "replace", "rerun this lane (ID, unique ID prefix or key screen/model/shape/gpu[/runtime]) even if complete (repeatable)")
	fs.Var(&pf.target, "target", "plan only the lanes this names (ID, unique ID prefix, or a key or key prefix: screen, screen/model, ...); repeatable")
	return pf
}

// plannedSpec is a spec planned against its state.
type plannedSpec struct {
	cfg      *lang.Config
	snap     *state.Snapshot
	stateDir string
	plan     *planner.Plan
}

// planSpec loads the spec at path, reads its state (unless noState) and
// builds the plan, printing diagnostics on stderr. ok is false when it
// could not make a plan.
func planSpec(env *cliEnv, path string, pf *planFlags, noState bool) (ps plannedSpec, ok bool) {
	cfg, diags := loadResolved(env, path, pf.vars)
	if cfg == nil {
		cfg = &lang.Config{}
	}
	printDiags(env, diags, cfg.Files)
	if diags.HasErrors() {
		return ps, false
	}
	ps.cfg = cfg
	ps.stateDir = *pf.state
	if ps.stateDir == "" {
		ps.stateDir = filepath.Join(cfg.Dir, state.DefaultDir)
	}
	ps.snap = &state.Snapshot{}
	if !noState {
		if err := refreshState(env, cfg, ps.stateDir); err != nil {
			fmt.Fprintf(env.Stderr, "infercrane: %v\n", hinted(err))
			return ps, false
		}
		snap, err := state.Load(ps.stateDir)
		if err != nil {
			fmt.Fprintf(env.Stderr, "infercrane: %v\n", hinted(err))
			return ps, false
		}
		for _, w := range snap.Warnings {
			fmt.Fprintf(env.Stderr, "Warning: %s\n", w)
		}
		ps.snap = snap
	}
	p, bdiags := planner.Build(cfg, ps.snap, planner.Options{Replace: pf.replace, Target: pf.target, Version: Version, Checks: env.planChecks(), Env: env.Getenv, NoDigest: pf.noDigest})
	printDiags(env, bdiags, cfg.Files)
	if bdiags.HasErrors() {
		return ps, false
	}
	ps.plan = p
	return ps, true
}

func runPlan(env *cliEnv, args []string) int {
	fs := newFlags(env, "plan", usageDoc{
		Usage: "infercrane plan [flags] [PATH]",
		About: "Plans the spec in PATH (a directory of *.hcl files or one file; default .) against its\n" +
			"state: the lanes to run, rerun and drop, preflight findings and the estimated cost.\n" +
			"Exit status 0 (with -detailed-exitcode: 0 nothing to do, 2 changes: lanes to run or drop,\n" +
			"or reports to re-evaluate), 1 an error.",
		Examples: []string{
			"infercrane plan",
			"infercrane plan examples/quickstart -out quick.plan",
			"infercrane plan -target quickstart/qwen06 -var runs=5 -json",
		},
	})
	pf := addPlanFlags(fs.FlagSet)
	addVerbose(env, fs.FlagSet)
	out := fs.outFile("out", "", "save the plan (with a snapshot of the spec and the digests of its inputs) to `FILE` for 'infercrane apply FILE'")
	asJSON := fs.Bool("json", false, "print the plan as JSON on stdout")
	detailed := fs.Bool("detailed-exitcode", false, "exit 0 when there is nothing to do, 1 on errors, 2 when there are changes (lanes to run or drop, reports to re-evaluate)")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	path, code, ok := fs.oneOptional(pos, "PATH", ".")
	if !ok {
		return code
	}
	// The plan is shown as text or JSON (Marshal digests it) and saved
	// (SavedPlan digests it): Build's digest would go unused.
	pf.noDigest = true
	ps, ok := planSpec(env, path, pf, false)
	if !ok {
		return 1
	}
	p := ps.plan
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
	for _, c := range credentialProblems(env, p) {
		fmt.Fprintf(env.Stderr, "Warning: credentials missing for %s\napply will refuse to start until they are set.\n", c)
	}
	if *out != "" {
		if p.HasErrors() {
			fmt.Fprintf(env.Stderr, "The plan was not saved to %s: fix the preflight errors first.\n", *out)
		} else if err := planner.NewSaved(p, ps.cfg, ps.snap, path, ps.stateDir).Save(*out); err != nil {
			fmt.Fprintf(env.Stderr, "infercrane: %v\n", hinted(err))
			return 1
		} else {
			fmt.Fprintf(env.Stderr, "Saved the plan to %s. Apply exactly this plan with: infercrane apply %s\n", *out, *out)
		}
	}
	switch {
	case p.HasErrors():
		return 1
	case *detailed && p.HasChanges():
		return 2
	default:
		return 0
	}
}

// isSpecPath reports whether path names a spec (a directory or a .hcl
// file) rather than a plan file.
func isSpecPath(path string) bool {
	if strings.HasSuffix(path, ".hcl") {
		return true
	}
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// addVerbose registers -verbose, which writePlanText reads.
func addVerbose(env *cliEnv, fs *flag.FlagSet) {
	fs.BoolVar(&env.verbosePlan, "verbose", false, "say how the estimates are made (the assumptions paragraph, one line without it) and where each lane's mean TTFT goes")
}

// writePlanText renders a plan for people, in colour on a terminal. It
// writes through a buffer: a plan of 10,000 lanes is as many lines, and a
// system call each was an eighth of the plan command's time.
func writePlanText(env *cliEnv, p *planner.Plan) error {
	buf := bufio.NewWriterSize(env.Stdout, 64<<10)
	w := env.coloredTo(env.Stdout, buf)
	err := planner.WriteTextOpts(w, p, planner.TextOptions{Verbose: env.verbosePlan})
	flushColor(w)
	if ferr := buf.Flush(); err == nil {
		err = ferr
	}
	return err
}
