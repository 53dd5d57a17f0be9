package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/term"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/report"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/state"
	"github.com/infercrane/infercrane/plugins"
	"github.com/infercrane/infercrane/plugins/local"
)

// addApplyCommands registers the commands of this file (called by setupCommands).
func addApplyCommands() {
	register(&command{
		Name:     "apply",
		Synopsis: "Run a spec's (or a saved plan's) lanes, journal every run and write the reports",
		Run:      runApply,
	})
}

// applyOpts are apply's flags.
type applyOpts struct {
	pf          *planFlags
	parallelism int
	autoApprove bool
	json        bool
}

func runApply(env *cliEnv, args []string) int {
	fs := newFlags(env, "apply", usageDoc{
		Usage: "infercrane apply [flags] [PATH | PLANFILE]",
		About: "Plans the spec in PATH (default .), shows the plan, asks for approval and runs it; or runs\n" +
			"the saved plan PLANFILE ('infercrane plan -out FILE') if none of its inputs changed.\n" +
			"Exit status: 0 done and every gate passed, 1 an error, 3 a gate failed, 4 a gate was\n" +
			"inconclusive, 130 interrupted (run apply again to resume).",
		Examples: []string{
			"infercrane apply examples/quickstart -auto-approve",
			"infercrane plan -out quick.plan examples/quickstart && infercrane apply quick.plan",
			"infercrane apply -target quickstart/qwen06 -parallelism 2 -json -auto-approve",
		},
	})
	o := applyOpts{pf: addPlanFlags(fs.FlagSet)}
	addVerbose(env, fs.FlagSet)
	fs.IntVar(&o.parallelism, "parallelism", 1, "deployments up at once (runs on one deployment always run one after another)")
	fs.BoolVar(&o.autoApprove, "auto-approve", false, "apply without asking (needed when not on a terminal)")
	fs.BoolVar(&o.json, "json", false, "stream events as JSON lines on stdout instead of the live display")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	path, code, ok := fs.oneOptional(pos, "PATH or PLANFILE", ".")
	if !ok {
		return code
	}
	if o.parallelism < 1 {
		return fs.usageError("-parallelism must be at least 1, not %d", o.parallelism)
	}
	// The built-in load generator and the simulated engine run in this
	// process: the same short scheduler slice as bench and sim serve.
	(&placement{slice: sliceFlag{d: defaultSlice}}).apply(env, "infercrane apply")
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintf(env.Stderr, "infercrane apply: %s does not exist; give a spec directory, a .hcl file or a plan file made by 'infercrane plan -out FILE'\n", path)
		return exitError
	}
	var job *applyJob
	if isSpecPath(path) {
		job, code = prepareSpec(env, path, o)
	} else {
		job, code = prepareSaved(env, path, o)
	}
	if job == nil {
		return code
	}
	defer job.guard.stop()
	defer job.store.Close()
	switch {
	case job.nothing:
		return job.repairReports(env, o)
	case job.reportsOnly:
		return job.refreshReports(env, o)
	}
	return job.run(env, o)
}

// applyJob is an approved plan with its locked state.
type applyJob struct {
	plan  *planner.Plan
	saved *planner.SavedPlan
	cfg   *lang.Config // nil for a saved plan
	store *state.Store
	// guard releases a backend's lock on an interrupt that comes while
	// the runner's own handling is not installed (nil for local state).
	guard    *lockGuard
	stateDir string
	// nothing is set when the plan has no changes: apply only checks (and
	// repairs) the reports.
	nothing bool
	// reportsOnly is set when no lane runs or drops but the reports are out
	// of date with the plan (Plan.ReportChanges): apply saves the plan in
	// the state and makes the reports again.
	reportsOnly bool
}

// lockState opens the state directory (and takes its backend's lock, when
// it has one), failing fast when another apply holds it. cfg is nil for a
// saved plan: the directory's backend.json then names the backend.
func lockState(env *cliEnv, cfg *lang.Config, dir string) (*state.Store, *lockGuard) {
	st, guard, err := openState(env, cfg, dir, "infercrane apply")
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane apply: %v\n", hinted(err))
		return nil, nil
	}
	for _, n := range st.Notes {
		fmt.Fprintf(env.Stderr, "Note: %s\n", n)
	}
	return st, guard
}

// prepareSpec plans the spec with the state locked, shows the plan and
// gets approval.
func prepareSpec(env *cliEnv, path string, o applyOpts) (*applyJob, int) {
	ps, ok := planSpec(env, path, o.pf, false)
	if !ok || !haveCredentials(env, ps.plan) {
		return nil, 1
	}
	st, guard := lockState(env, ps.cfg, ps.stateDir)
	if st == nil {
		return nil, 1
	}
	// The state may have changed (or been repaired) between planning and
	// locking: plan again under the lock.
	if planner.StateDigest(st.Snapshot()) != planner.StateDigest(ps.snap) {
		if ps, ok = planSpec(env, path, o.pf, false); !ok {
			st.Close()
			guard.stop()
			return nil, 1
		}
	}
	job := &applyJob{plan: ps.plan, cfg: ps.cfg, store: st, guard: guard, stateDir: ps.stateDir,
		saved: planner.NewSaved(ps.plan, ps.cfg, ps.snap, path, ps.stateDir)}
	if code, ok := job.review(env, o); !ok {
		st.Close()
		guard.stop()
		return nil, code
	}
	return job, 0
}

// prepareSaved checks a saved plan against its inputs as they are now.
func prepareSaved(env *cliEnv, path string, o applyOpts) (*applyJob, int) {
	if len(o.pf.vars.files) > 0 || len(o.pf.replace) > 0 || len(o.pf.target) > 0 {
		fmt.Fprintln(env.Stderr, "infercrane apply: a saved plan fixes its variables, replacements and targets; give -var-file, -replace and -target to 'infercrane plan -out' instead")
		return nil, 1
	}
	p, saved, err := planner.ReadPlanFile(path)
	if err == nil {
		err = planner.Applicable(p)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane apply: %v\n", hinted(err))
		return nil, 1
	}
	if saved != nil {
		if err := revealSaved(env, saved, o.pf.vars.vars); err != nil {
			fmt.Fprintf(env.Stderr, "infercrane apply: %v\n", hinted(err))
			return nil, 1
		}
	}
	if saved == nil {
		fmt.Fprintf(env.Stderr, "infercrane apply: %s is plan JSON, which records no input digests, so apply cannot check that it still holds; save the plan with 'infercrane plan -out FILE' and apply that\n", path)
		return nil, 1
	}
	if why := saved.Unverified(); why != "" {
		fmt.Fprintf(env.Stderr, "infercrane apply: refusing %s: %s; make the plan again with 'infercrane plan -out FILE'\n", path, why)
		return nil, 1
	}
	if !haveCredentials(env, p) {
		return nil, 1
	}
	dir := saved.StateDir
	if *o.pf.state != "" && absOr(*o.pf.state) != filepath.Clean(dir) {
		fmt.Fprintf(env.Stderr, "infercrane apply: %s was planned against the state in %s, not %s; drop -state or plan again\n", path, dir, *o.pf.state)
		return nil, 1
	}
	st, guard := lockState(env, nil, dir)
	if st == nil {
		return nil, 1
	}
	cur, err := saved.CurrentInputs()
	if err != nil {
		st.Close()
		guard.stop()
		fmt.Fprintf(env.Stderr, "infercrane apply: %v\n", hinted(err))
		return nil, 1
	}
	if changes := saved.Changes(cur); len(changes) > 0 {
		st.Close()
		guard.stop()
		fmt.Fprintf(env.Stderr, "infercrane apply: the saved plan %s is stale; since it was made:\n", path)
		for _, c := range changes {
			fmt.Fprintf(env.Stderr, "  - %s\n", c)
		}
		fmt.Fprintln(env.Stderr, "Make a new plan with 'infercrane plan -out FILE' and apply that.")
		return nil, 1
	}
	job := &applyJob{plan: p, saved: saved, store: st, guard: guard, stateDir: dir}
	if code, ok := job.review(env, applyOpts{autoApprove: true, json: o.json}); !ok {
		st.Close()
		guard.stop()
		return nil, code
	}
	return job, 0
}

// haveCredentials reports whether every executor with work in p finds its
// credentials; otherwise it says which are missing and apply stops before
// it locks the state or deploys anything.
func haveCredentials(env *cliEnv, p *planner.Plan) bool {
	missing := credentialProblems(env, p)
	for _, c := range missing {
		fmt.Fprintf(env.Stderr, "infercrane apply: credentials missing for %s\n", c)
	}
	if len(missing) > 0 {
		fmt.Fprintln(env.Stderr, "Nothing was deployed; set them and apply again.")
	}
	return len(missing) == 0
}

// review shows the plan and asks for approval; ok is false when apply
// must stop, with code its exit status.
func (j *applyJob) review(env *cliEnv, o applyOpts) (code int, ok bool) {
	p := j.plan
	if o.json {
		newJSONView(env.Stdout, nil).Event(executor.Event{Type: executor.EventPlan, Message: planner.SummaryLine(p),
			LanesToRun: p.Totals.LanesToRun, RunsToDo: p.Totals.Runs})
	} else if err := writePlanText(env, p); err != nil {
		return 1, false
	}
	if p.HasErrors() {
		fmt.Fprintln(env.Stderr, "infercrane apply: the plan has preflight errors; fix them and apply again")
		return 1, false
	}

	if !p.HasChanges() {
		if !o.json {
			fmt.Fprintln(env.Stdout, "\nNo changes: every lane is complete in the state. Nothing to run.")
		}
		j.nothing = true
		return 0, true
	}
	j.reportsOnly = !p.HasWork() && p.Totals.Dropped == 0
	if o.autoApprove {
		return 0, true
	}
	in, isFile := env.Stdin.(*os.File)
	if !isFile || !term.IsTerminal(int(in.Fd())) || o.json {
		fmt.Fprintln(env.Stderr, "infercrane apply: not asking for approval without a terminal; review the plan and re-run with -auto-approve")
		return 1, false
	}
	fmt.Fprintf(env.Stdout, "\nDo you want to run this plan? Only 'yes' will be accepted.\n  Enter a value: ")
	line, _ := bufio.NewReader(env.Stdin).ReadString('\n')
	if strings.TrimSpace(line) != "yes" {
		fmt.Fprintln(env.Stderr, "Apply cancelled.")
		return 1, false
	}
	return 0, true
}

// view picks the progress display for plan p.
func view(env *cliEnv, o applyOpts, p *planner.Plan) progressView {
	tr := newTracker(p, o.parallelism)
	if o.json {
		return newJSONView(env.Stdout, tr)
	}
	if f, ok := terminalOf(env.Stdout); ok && env.Getenv("TERM") != "dumb" {
		// A terminal of unknown width cannot show bars.
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return newBarsView(env.Stdout, p.Totals.Runs, tr)
		}
	}
	return newPlainView(env.Stdout, tr)
}

// run applies the plan, then writes the reports.
func (j *applyJob) run(env *cliEnv, o applyOpts) int {
	planJSON, err := j.saved.ForState(j.store.Snapshot())
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane apply: encode the plan: %v\n", err)
		return 1
	}
	pluginLog, err := openPluginLog(j.store)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane apply: %v\n", hinted(err))
		return 1
	}
	defer pluginLog.Close()
	env.secrets.Add(j.plan.Secrets()...)
	reg := newRegistry(env, env.secrets.LineWriter(pluginLog))
	// Servers' orphaned descendants are re-parented to apply, not init,
	// while it runs (see plugins/local); where the kernel refuses, the
	// journal and the next apply still reap them.
	_ = local.Subreap()
	v := view(env, o, j.plan)
	events := func(e executor.Event) {
		slog.Debug("event", "type", e.Type, "lane", e.Lane, "deployment", e.Deployment, "run", e.Run, "error", e.Error, "message", e.Message)
		v.Event(e)
	}
	r := &executor.Runner{Store: j.store, Open: reg.Open, ReapOpen: reg.OpenJournaled, Parallelism: o.parallelism, PlanJSON: planJSON, Events: events, Secrets: env.secrets}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j.guard.pause()
	stop := handleInterrupts(env, cancel, r.Busy)
	out, err := r.Apply(ctx, j.plan)
	stop()
	j.guard.resume()
	v.Close()
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane apply: %v\n", hinted(err))
		return 1
	}
	code := 0
	switch {
	case out.Interrupted:
		fmt.Fprintln(env.Stderr, "Apply interrupted: completed runs are journaled in "+j.stateDir+"; run apply again to resume.")
		code = 130
	case out.Err() != nil:
		fmt.Fprintf(env.Stderr, "infercrane apply: %s\nCompleted runs are journaled in %s; fix the cause and run apply again to resume.\n", errText(out.Err()), j.stateDir)
		code = 1
	}
	cl := &evidence.Cleanup{State: "torn_down", DeploymentsTornDown: append([]string{}, out.TornDown...), ActiveGPUTasks: len(out.TeardownFailed)}
	if len(out.TeardownFailed) > 0 {
		cl.State = "teardown_failed"
	}
	if rc := j.report(env, o, cl); code == 0 {
		code = rc
	}
	return code
}

// refreshReports applies a plan that changes only the reports: it saves
// the plan as the state's plan (which the reports read their gates and
// lanes from) and makes every report again from the runs in the state,
// running no lane; it returns the gates' exit code.
func (j *applyJob) refreshReports(env *cliEnv, o applyOpts) int {
	planJSON, err := j.saved.ForState(j.store.Snapshot())
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane apply: encode the plan: %v\n", err)
		return 1
	}
	if err := j.store.SavePlan(planJSON); err != nil {
		fmt.Fprintf(env.Stderr, "infercrane apply: %v\n", hinted(err))
		return 1
	}
	if !o.json {
		fmt.Fprintln(env.Stdout, "\nNo lane to run: every lane is complete in the state. Re-evaluating the reports.")
	}
	// The teardown facts stay those of the last apply that deployed.
	return j.report(env, o, nil)
}

// newRegistry is the executor registry apply and cleanup open executors
// from; plugin logs go to logOut.
func newRegistry(env *cliEnv, logOut io.Writer) *plugins.Registry {
	reg := env.registry(logOut)
	reg.Isolate = env.Getenv("INFERCRANE_EXECUTOR_ISOLATION") == "process"
	return reg
}

// openPluginLog opens STATE_DIR/logs/plugins.log for appending.
func openPluginLog(st *state.Store) (*os.File, error) {
	logDir, err := st.LogDir()
	if err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(logDir, "plugins.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
}

// errText renders joined errors one per line, each followed by what to
// run about it (hinted).
func errText(err error) string {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		var lines, hintedLines []string
		for _, e := range joined.Unwrap() {
			lines = append(lines, e.Error())
			hintedLines = append(hintedLines, hinted(e).Error())
		}
		// errors.Join's lines, not an error that wraps several (a
		// fmt.Errorf with two %w), which reads as one.
		if strings.Join(lines, "\n") == joined.(error).Error() {
			return strings.Join(hintedLines, "\n")
		}
	}
	return hinted(err).Error()
}

// report writes the evidence and reports of the state and returns the
// gates' exit code (0 when there is nothing to report). cl are the
// teardown facts of this apply (nil: keep those of the last one).
func (j *applyJob) report(env *cliEnv, o applyOpts, cl *evidence.Cleanup) int {
	opts := report.Options{Config: j.cfg, Cleanup: cl}
	opts.Secrets = env.secrets.Values()
	key, err := signingKey(env.Getenv(signingKeyEnv))
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane apply: the runs are in the state, but $%s: %v\n", signingKeyEnv, err)
		return 1
	}
	opts.SigningKey = key
	oc, err := j.generateReports(opts)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane apply: the runs are in the state, but the report failed: %v; run 'infercrane report %s' after fixing it\n", hinted(err), j.stateDir)
		return 1
	}
	if o.json {
		code := oc.ExitCode
		newJSONView(env.Stdout, nil).Event(executor.Event{Type: executor.EventReportWritten, Files: oc.Files, ExitCode: &code})
		return oc.ExitCode
	}
	fmt.Fprintln(env.Stdout)
	printOutcome(env, oc)
	fmt.Fprintf(env.Stdout, "Reports are in %s.\n", filepath.Join(j.stateDir, state.ReportsDir))
	return oc.ExitCode
}

// repairReports rewrites, when an apply has nothing to do, the reports in
// the state that are missing, truncated or older than the state, and says
// which; it returns the gates' exit code, as every apply does (1 when the
// reports cannot be made).
func (j *applyJob) repairReports(env *cliEnv, o applyOpts) int {
	if _, err := os.Stat(filepath.Join(j.stateDir, state.PlanFile)); err != nil {
		return 0 // nothing was ever applied here
	}
	opts := report.Options{RepairOnly: true}
	opts.Secrets = env.secrets.Values()
	key, err := signingKey(env.Getenv(signingKeyEnv))
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane apply: $%s: %v\n", signingKeyEnv, err)
		return 1
	}
	opts.SigningKey = key
	oc, err := j.generateReports(opts)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane apply: the reports in %s could not be checked or repaired: %v; run 'infercrane report %s' after fixing it\n", j.stateDir, hinted(err), j.stateDir)
		return 1
	}
	if o.json {
		if len(oc.Repaired) > 0 {
			code := oc.ExitCode
			newJSONView(env.Stdout, nil).Event(executor.Event{Type: executor.EventReportWritten, Files: oc.Files, ExitCode: &code,
				Message: "repaired: " + strings.Join(oc.Repaired, "; ")})
		}
		return oc.ExitCode
	}
	if len(oc.Repaired) > 0 {
		fmt.Fprintf(env.Stdout, "Repaired %d report(s) that were missing, truncated or older than the state:\n", len(oc.Repaired))
		for _, r := range oc.Repaired {
			fmt.Fprintf(env.Stdout, "  %s\n", r)
		}
	}
	printGates(env, oc)
	return oc.ExitCode
}

// revealSaved gives the lanes of a saved plan the real values of their
// sensitive inputs, which no plan file holds: it loads the spec again with
// the plan's variables, the sensitive ones from where they came (the
// environment, the variable files the plan read, *.auto.vars.hcl) or from
// -var flags given now (allowed for sensitive variables only), and takes the
// values from the lanes of the same IDs.
func revealSaved(env *cliEnv, saved *planner.SavedPlan, vars []string) error {
	for _, kv := range vars {
		name, _, _ := strings.Cut(kv, "=")
		if v, ok := saved.Variables[name]; !ok || v != planner.Redacted {
			return fmt.Errorf("a saved plan fixes its variables; -var is accepted only for sensitive ones, which the plan does not hold, and %q is not one; give it to 'infercrane plan -out' instead", name)
		}
	}
	need := false
	for _, l := range saved.Plan.Lanes {
		need = need || (l.Work() && l.Inputs.HasRedacted())
	}
	if !need {
		return nil
	}
	vf := &varFlags{}
	for _, name := range sortedNames(saved.Variables) {
		v := saved.Variables[name]
		if v == planner.Redacted || v == nil {
			continue
		}
		text, isStr := v.(string)
		if !isStr {
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			text = string(b)
		}
		vf.vars = append(vf.vars, name+"="+text)
	}
	vf.vars = append(vf.vars, vars...)
	for name := range saved.Inputs.Spec {
		if _, snap := saved.Spec[name]; !snap && !strings.HasSuffix(name, ".auto.vars.hcl") && !strings.HasSuffix(name, ".auto.vars.json") {
			p := filepath.FromSlash(name)
			if !filepath.IsAbs(p) {
				p = filepath.Join(saved.Dir, p)
			}
			vf.files = append(vf.files, p)
		}
	}
	sort.Strings(vf.files)
	cfg, diags := loadResolved(env, saved.SpecPath, vf)
	if diags.HasErrors() || cfg == nil {
		printDiags(env, diags, nil)
		return fmt.Errorf("the saved plan has sensitive inputs, and loading the spec again for their values failed; set its sensitive variables (-var NAME=VALUE, %sNAME) and apply again", lang.EnvVarPrefix)
	}
	fresh, _ := planner.Build(cfg, &state.Snapshot{}, planner.Options{Version: Version, Env: env.Getenv})
	byID := map[string]*planner.Lane{}
	for _, l := range fresh.Lanes {
		byID[l.ID] = l
	}
	for _, l := range saved.Plan.Lanes {
		if !l.Work() || !l.Inputs.HasRedacted() {
			continue
		}
		f := byID[l.ID]
		if f == nil || f.Inputs.Secrets == nil {
			return fmt.Errorf("lane %s (%s) has sensitive inputs, and the spec loaded again gives no lane %s with their values; make the plan again", l.ID, l.Key, l.ID)
		}
		l.Inputs.Secrets = f.Inputs.Secrets
	}
	env.secrets.Add(fresh.Secrets()...)
	return nil
}

// absOr is p made absolute, or p cleaned when that fails.
func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// sortedNames returns the keys of m in order.
func sortedNames(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// generateReports writes the reports into the state and, when the state
// lives in a backend, stores them there too.
func (j *applyJob) generateReports(opts report.Options) (*report.Outcome, error) {
	// The lock this apply holds must still be on the state directory
	// before each file: one replaced during the apply is another's.
	opts.Check = j.store.Check
	oc, err := report.Generate(j.stateDir, opts)
	if err != nil {
		return oc, err
	}
	if err := j.store.PublishReports(); err != nil {
		return oc, fmt.Errorf("the reports are in %s, but %w", j.stateDir, err)
	}
	return oc, nil
}
