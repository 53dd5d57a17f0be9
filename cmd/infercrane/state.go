package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/state"
)

// addStateCommands registers the commands of this file (called by setupCommands).
func addStateCommands() {
	register(&command{
		Name:     "state list",
		Synopsis: "List the lanes in the state and how many of their runs are complete",
		Run:      runStateList,
	})
	register(&command{
		Name:     "state show",
		Synopsis: "Show a lane in the state: its inputs and every completed run's figures",
		Run:      runStateShow,
	})
	register(&command{
		Name:     "state rm",
		Synopsis: "Remove lanes and their runs from the state, so the next apply runs them again",
		Run:      runStateRm,
	})
}

// stateFlag registers -state with the default state directory.
func stateFlag(fs *cmdFlags) *string {
	return fs.String("state", state.DefaultDir, "state `DIR`ectory (what apply wrote next to the spec)")
}

// loadState reads the state in dir, failing when there is none.
func loadState(env *cliEnv, name, dir string) (*state.Snapshot, bool) {
	if err := refreshState(env, nil, dir); err != nil {
		fmt.Fprintf(env.Stderr, "infercrane %s: %v\n", name, hinted(err))
		return nil, false
	}
	if _, err := os.Stat(filepath.Join(dir, state.JournalFile)); err != nil {
		err = fmt.Errorf("no state in %s (no %s): %w", dir, state.JournalFile, state.ErrNoState)
		fmt.Fprintf(env.Stderr, "infercrane %s: %v\n", name, hinted(specDirGivenForState(dir, err)))
		return nil, false
	}
	snap, err := state.Load(dir)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane %s: %v\n", name, hinted(err))
		return nil, false
	}
	for _, w := range snap.Warnings {
		fmt.Fprintf(env.Stderr, "Warning: %s\n", w)
	}
	return snap, true
}

// matchState returns the state's lanes that targets name (every lane
// without targets), in ID order, and the targets that named none.
func matchState(snap *state.Snapshot, targets []string) (lanes []*state.LaneRecord, unmatched []string) {
	hit := make([]bool, len(targets))
	for _, id := range snap.LaneIDs() {
		l := snap.Lanes[id]
		keep := len(targets) == 0
		for i, t := range targets {
			if planner.TargetsLane(l.ID, l.Key, t) {
				hit[i], keep = true, true
			}
		}
		if keep {
			lanes = append(lanes, l)
		}
	}
	for i, t := range targets {
		if !hit[i] {
			unmatched = append(unmatched, t)
		}
	}
	return lanes, unmatched
}

func runStateList(env *cliEnv, args []string) int {
	fs := newFlags(env, "state list", usageDoc{
		Usage: "infercrane state list [flags] [LANE...]",
		About: "Lists the lanes the state records: ID, key (screen/model/shape/gpu[/runtime]) and complete runs.\n" +
			"LANE filters by ID, ID prefix, key or key prefix (a screen name, screen/model, ...).",
		Examples: []string{
			"infercrane state list",
			"infercrane state list -state examples/quickstart/.infercrane quickstart",
			"infercrane state list -json | jq -r '.[].id'",
		},
	})
	dir := stateFlag(fs)
	asJSON := fs.Bool("json", false, "print the lanes as a JSON array")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	snap, ok := loadState(env, "state list", *dir)
	if !ok {
		return exitError
	}
	lanes, unmatched := matchState(snap, pos)
	if len(unmatched) > 0 {
		fmt.Fprintf(env.Stderr, "infercrane state list: no lane in %s matches %s\n", *dir, strings.Join(unmatched, ", "))
		return exitError
	}
	if *asJSON {
		type laneJSON struct {
			ID        string `json:"id"`
			Key       string `json:"key"`
			Runs      int    `json:"runs"`
			Completed []int  `json:"completed"`
		}
		out := []laneJSON{}
		for _, l := range lanes {
			out = append(out, laneJSON{ID: l.ID, Key: l.Key, Runs: l.Runs, Completed: append([]int{}, l.Completed...)})
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(env.Stdout, string(b))
		return exitOK
	}
	if len(lanes) == 0 {
		fmt.Fprintf(env.Stdout, "The state in %s records no lane: nothing was applied there yet.\n", *dir)
		return exitOK
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	for _, l := range lanes {
		if _, search := l.Inputs["search"]; search {
			// A search runs the points it needs, up to max_points: "3/5
			// runs" read as two missing for one that converged.
			fmt.Fprintf(tw, "%s\t%s\t%d points (a search of at most %d)\n", l.ID, l.Key, len(l.Completed), l.Runs)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d runs\n", l.ID, l.Key, len(l.Completed), l.Runs)
	}
	tw.Flush()
	return exitOK
}

func runStateShow(env *cliEnv, args []string) int {
	fs := newFlags(env, "state show", usageDoc{
		Usage: "infercrane state show [flags] LANE",
		About: "Shows one lane of the state: its inputs, and for every completed run when it ran, its\n" +
			"requests, throughputs, TTFT and latency percentiles and where its per-request records are.",
		Examples: []string{
			"infercrane state show 598f4af04901",
			"infercrane state show quickstart/qwen06/chat/l40s",
			"infercrane state show -json -state runs/.infercrane 598f",
		},
	})
	dir := stateFlag(fs)
	asJSON := fs.Bool("json", false, "print the lane as JSON (its record in the state)")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageError("give exactly one LANE (ID, ID prefix or key), got %d", len(pos))
	}
	snap, ok := loadState(env, "state show", *dir)
	if !ok {
		return exitError
	}
	var match []*state.LaneRecord
	for _, id := range snap.LaneIDs() {
		if l := snap.Lanes[id]; planner.MatchLane(l.ID, l.Key, pos[0]) {
			match = append(match, l)
		}
	}
	switch len(match) {
	case 0:
		fmt.Fprintf(env.Stderr, "infercrane state show: no lane in %s is %s; 'infercrane state list' shows them\n", *dir, pos[0])
		return exitError
	case 1:
	default:
		fmt.Fprintf(env.Stderr, "infercrane state show: %s matches %d lanes; give more digits of the ID\n", pos[0], len(match))
		return exitError
	}
	if *asJSON {
		b, _ := json.MarshalIndent(match[0], "", "  ")
		fmt.Fprintln(env.Stdout, string(b))
		return exitOK
	}
	writeStateLane(env.Stdout, match[0])
	return exitOK
}

// writeStateLane renders a lane of the state for people.
func writeStateLane(w io.Writer, l *state.LaneRecord) {
	fmt.Fprintf(w, "lane %s (%s): %d of %d runs complete\n", l.ID, l.Key, len(l.Completed), l.Runs)
	for _, k := range []string{"model_id", "revision", "gpu_type", "runtime_engine", "runtime_version", "executor_type", "input_tokens", "output_tokens", "concurrency", "requests"} {
		if v, ok := l.Inputs[k]; ok && v != "" {
			fmt.Fprintf(w, "  %-16s %v\n", k, v)
		}
	}
	for _, r := range l.Results {
		var s loadgen.Summary
		_ = json.Unmarshal(r.Summary, &s)
		fmt.Fprintf(w, "  run %d  %s .. %s\n", r.Run, r.StartedAt, r.FinishedAt)
		fmt.Fprintf(w, "    %d requests, %d failed; %.2f req/s, %.0f output tok/s; TTFT p50 %.1f ms, p95 %.1f ms; latency p95 %.1f ms\n",
			s.Requests, s.Failed, s.RequestThroughput, s.OutputTokenThroughput, s.TTFTMs.P50, s.TTFTMs.P95, s.LatencyMs.P95)
		fmt.Fprintf(w, "    records %s\n", r.RecordsPath)
	}
}

func runStateRm(env *cliEnv, args []string) int {
	fs := newFlags(env, "state rm", usageDoc{
		Usage: "infercrane state rm [flags] LANE...",
		About: "Removes lanes and all their runs from the state (a journaled drop; the records files stay\n" +
			"on disk until the lane runs again). The next plan shows them as lanes to run. LANE is an\n" +
			"ID, ID prefix, key or key prefix, as for -target.",
		Examples: []string{
			"infercrane state rm 598f4af04901",
			"infercrane state rm -dry-run quickstart",
			"infercrane state rm -state runs/.infercrane quickstart/qwen06/chat/l40s",
		},
	})
	dir := stateFlag(fs)
	dryRun := fs.Bool("dry-run", false, "list what would be removed; change nothing")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return fs.usageError("name at least one LANE to remove")
	}
	snap, ok := loadState(env, "state rm", *dir)
	if !ok {
		return exitError
	}
	lanes, unmatched := matchState(snap, pos)
	if len(unmatched) > 0 {
		fmt.Fprintf(env.Stderr, "infercrane state rm: no lane in %s matches %s; nothing was removed\n", *dir, strings.Join(unmatched, ", "))
		return exitError
	}
	if *dryRun {
		for _, l := range lanes {
			fmt.Fprintf(env.Stdout, "Would remove lane %s (%s) and its %d complete run(s).\n", l.ID, l.Key, len(l.Completed))
		}
		return exitOK
	}
	st, guard, err := openState(env, nil, *dir, "infercrane state rm")
	defer guard.stop()
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane state rm: %v\n", hinted(err))
		return exitError
	}
	defer st.Close()
	for _, l := range lanes {
		if err := st.Drop(l.ID, "removed by 'infercrane state rm'"); err != nil {
			fmt.Fprintf(env.Stderr, "infercrane state rm: %v\n", hinted(err))
			return exitError
		}
		fmt.Fprintf(env.Stdout, "Removed lane %s (%s) and its %d complete run(s).\n", l.ID, l.Key, len(l.Completed))
	}
	fmt.Fprintf(env.Stdout, "Removed %d lane(s) from %s; the next plan runs them again.\n", len(lanes), *dir)
	return exitOK
}
