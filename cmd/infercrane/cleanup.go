package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/planner/state"
	"github.com/infercrane/infercrane/plugins/modal"
)

// addCleanupCommands registers the commands of this file (called by setupCommands).
func addCleanupCommands() {
	register(&command{
		Name:     "cleanup",
		Synopsis: "Tear down what a crashed apply left running (journaled deployments, tagged Modal sandboxes)",
		Run:      runCleanup,
	})
}

func runCleanup(env *cliEnv, args []string) int {
	fs := newFlags(env, "cleanup", usageDoc{
		Usage: "infercrane cleanup [flags]",
		About: "Reaps the deployments a killed apply left running, from the state directory's journal\n" +
			"(local server trees, Modal sandboxes, plugin deployments); then, without -state, lists the\n" +
			"running Modal sandboxes tagged infercrane=1 and terminates them. Credentials come\n" +
			"from MODAL_TOKEN_ID/MODAL_TOKEN_SECRET or ~/.modal.toml (MODAL_PROFILE).",
		Examples: []string{
			"infercrane cleanup -state .infercrane",
			"infercrane cleanup -dry-run",
			"infercrane cleanup -older-than 2h",
			"infercrane cleanup -app my-screens -environment dev -json",
		},
	})
	olderThan := fs.String("older-than", "0", `only sandboxes created longer ago than this, e.g. "2h", "90m", "1d"`)
	dryRun := fs.Bool("dry-run", false, "list what would be terminated; terminate nothing")
	app := fs.String("app", modal.DefaultApp, "Modal App the executor block names")
	environment := fs.String("environment", "", "Modal environment (default: the profile's)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	stateDir := fs.String("state", "", "state directory whose journaled deployments to reap (then only those; default: also ./"+state.DefaultDir+" when it exists, before the Modal sweep)")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	age, err := parseAge(*olderThan)
	if err != nil {
		return fs.usageError("-older-than: %v", err)
	}
	reapDir := *stateDir
	if reapDir == "" {
		if fi, err := os.Stat(state.DefaultDir); err == nil && fi.IsDir() {
			reapDir = state.DefaultDir
		}
	}
	if reapDir != "" {
		if code := reapState(env, reapDir, *dryRun, *stateDir != ""); code != 0 || *stateDir != "" {
			return code
		}
	}
	if err := env.Wire.modalCredentials(nil, env.Getenv); err != nil {
		if reapDir != "" {
			// The state was reaped; without Modal credentials there is no
			// Modal to sweep.
			fmt.Fprintf(env.Stdout, "Modal: not swept (%v).\n", err)
			return 0
		}
		fmt.Fprintf(env.Stderr, "infercrane cleanup: cannot list sandboxes: %v\n", hinted(err))
		return 1
	}
	cloud, err := env.Wire.modalCloud(*environment)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane cleanup: cannot list sandboxes: %v\n", hinted(err))
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := modal.Cleanup(ctx, cloud, modal.CleanupOptions{App: *app, OlderThan: age, DryRun: *dryRun})
	if !rep.Listed {
		// No answer from Modal: print no result, only the error.
		fmt.Fprintf(env.Stderr, "infercrane cleanup: %v\nNothing was listed or terminated; sandboxes may still be running. Fix the cause and run cleanup again.\n", hinted(err))
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		renderCleanup(env, rep)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane cleanup: %v\n", hinted(err))
		return 1
	}
	return 0
}

// reapState tears down the deployments journaled in state directory dir
// that no apply tore down (their apply died), holding the state's lock so
// that a running apply's own deployments are never touched.
func reapState(env *cliEnv, dir string, dryRun, explicit bool) int {
	// A mistyped -state must not read as a clean state (nor be created: a
	// lock and an empty journal once appeared where the user meant another
	// directory, and cleanup said "no deployment left running").
	if _, err := os.Stat(filepath.Join(dir, state.JournalFile)); explicit && err != nil {
		fmt.Fprintf(env.Stderr, "infercrane cleanup: no state in %s (no %s): check -state; nothing was reaped\n", dir, state.JournalFile)
		return 1
	}
	if err := refreshState(env, nil, dir); err != nil {
		fmt.Fprintf(env.Stderr, "infercrane cleanup: %v\n", hinted(err))
		return 1
	}
	if dryRun {
		live, err := state.LiveDeployments(dir)
		if err != nil {
			fmt.Fprintf(env.Stderr, "infercrane cleanup: %v\n", hinted(err))
			return 1
		}
		if held, pid := state.Held(dir); held {
			fmt.Fprintf(env.Stdout, "State %s: an apply (PID %d) holds it; its deployments are its own.\n", dir, pid)
			return 0
		}
		for _, l := range live {
			fmt.Fprintf(env.Stdout, "State %s: would tear down deployment %s (executor %s) left by apply %s.\n", dir, l.Deployment, l.Executor, l.Apply)
		}
		if len(live) == 0 {
			fmt.Fprintf(env.Stdout, "State %s: no deployment left running.\n", dir)
		}
		return 0
	}
	st, guard, err := openState(env, nil, dir, "infercrane cleanup")
	defer guard.stop()
	var locked *state.LockedError
	if errors.As(err, &locked) && !explicit {
		fmt.Fprintf(env.Stdout, "State %s: an apply (PID %d) holds it; its deployments are its own.\n", dir, locked.Holder.PID)
		return 0
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane cleanup: %v\n", hinted(err))
		return 1
	}
	defer st.Close()
	pluginLog, err := openPluginLog(st)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane cleanup: %v\n", hinted(err))
		return 1
	}
	defer pluginLog.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	reaped, err := executor.ReapDeployments(ctx, st, newRegistry(env, pluginLog).OpenJournaled, "cleanup", 0)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane cleanup: %v\n", hinted(err))
		return 1
	}
	code := 0
	for _, rp := range reaped {
		fmt.Fprintf(env.Stdout, "State %s: %s.\n", dir, rp.Message())
		if rp.Err != nil {
			code = 1
		}
	}
	if len(reaped) == 0 {
		fmt.Fprintf(env.Stdout, "State %s: no deployment left running.\n", dir)
	}
	return code
}

// parseAge reads a Go duration or a number of days ("1d").
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(d, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration; write it like 2h, 90m or 1d", s)
		}
		return time.Duration(n * 24 * float64(time.Hour)), nil
	}
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration; write it like 2h, 90m or 1d", s)
	}
	return d, nil
}

func renderCleanup(env *cliEnv, rep modal.CleanupReport) {
	if len(rep.Sandboxes) == 0 {
		fmt.Fprintf(env.Stdout, "No running InferCrane sandboxes in Modal app %s.\n", rep.App)
		return
	}
	fmt.Fprintf(env.Stdout, "%d running InferCrane sandboxes in Modal app %s:\n", len(rep.Sandboxes), rep.App)
	for _, s := range rep.Sandboxes {
		age := "unknown age"
		if s.AgeSeconds >= 0 {
			age = "age " + (time.Duration(s.AgeSeconds) * time.Second).Round(time.Second).String()
		}
		fmt.Fprintf(env.Stdout, "  %s  screen=%s deployment=%s apply=%s  %s  %s\n", s.ID, dash(s.Screen), dash(s.Deployment), dash(s.Apply), age, s.Action)
		if s.Error != "" {
			fmt.Fprintf(env.Stdout, "      %s\n", s.Error)
		}
	}
	kept := countAction(rep, modal.ActionKept)
	if rep.DryRun {
		fmt.Fprintf(env.Stdout, "Dry run: %d would be terminated, %d kept. Run without -dry-run to terminate them.\n", countAction(rep, modal.ActionWould), kept)
		return
	}
	fmt.Fprintf(env.Stdout, "Terminated %d, kept %d, failed %d.\n", rep.Terminated, kept, rep.Failed)
}

func countAction(rep modal.CleanupReport, action string) int {
	n := 0
	for _, s := range rep.Sandboxes {
		if s.Action == action {
			n++
		}
	}
	return n
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
