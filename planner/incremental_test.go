package planner

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/planner/state"
)

// writeState records lanes in a real state directory as apply would:
// each lane started with its inputs, and runs 1..done[i] committed.
func writeState(t *testing.T, dir string, lanes []*Lane, done []int) *state.Snapshot {
	t.Helper()
	st, err := state.Open(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, l := range lanes {
		if err := st.StartLane(l.ID, l.Key, l.Runs, l.Inputs); err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= done[i]; n++ {
			r := state.RunRecord{Lane: l.ID, Run: n, Summary: []byte(`{}`)}
			if err := st.CommitRun(r, func(w io.Writer) error { _, err := fmt.Fprintln(w, `{"ok":true}`); return err }); err != nil {
				t.Fatal(err)
			}
		}
	}
	return closeAndLoad(t, st, dir)
}

// closeAndLoad closes a state store and reads its directory back.
func closeAndLoad(t *testing.T, st *state.Store, dir string) *state.Snapshot {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestIncrementalPlan(t *testing.T) {
	first := build(t, fixture())
	dir := t.TempDir()
	// Lane 0 complete, lane 1 half done, lanes 2 and 3 never started.
	snap := writeState(t, dir, first.Lanes[:2], []int{2, 1})

	cfg := fixture()
	cfg.Shapes["interactive"].OutputTokens = 400 // changes the two interactive lanes
	delete(cfg.Models, "qwen17")                 // drops nothing yet: qwen17 never ran
	cfg.Screens["qwen_l40s"].Models = []string{"qwen06"}
	cfg.Screens["qwen_l40s"].Baseline = "qwen06"
	p, diags := Build(cfg, snap, Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	byKey := map[string]*Lane{}
	for _, l := range p.Lanes {
		byKey[l.Key] = l
	}
	dh, ia := byKey["qwen_l40s/qwen06/decode_heavy/l40s"], byKey["qwen_l40s/qwen06/interactive/l40s"]
	if dh.Action != ActionNoop || dh.RunsDone != 2 || dh.Estimate.GPUSeconds != 0 {
		t.Errorf("complete, unchanged lane: %+v", dh)
	}
	if ia.Action != ActionRerun || strings.Join(ia.ChangedInputs, ",") != "output_tokens" || ia.Supersedes != first.Lanes[1].ID || ia.RunsToDo() != 2 {
		t.Errorf("changed lane: action %s changed %v supersedes %s", ia.Action, ia.ChangedInputs, ia.Supersedes)
	}
	if p.Totals.LanesToRun != 1 || p.Totals.Unchanged != 1 || p.Totals.Runs != 2 {
		t.Errorf("totals %+v", p.Totals)
	}
	if !strings.HasPrefix(SummaryLine(p), "Plan: 1 lane to run (2 runs, 64 requests), 1 unchanged.") {
		t.Errorf("summary %q", SummaryLine(p))
	}
}

func TestResumeAndDrop(t *testing.T) {
	first := build(t, fixture())
	snap := writeState(t, t.TempDir(), first.Lanes, []int{2, 1, 0, 2})
	cfg := fixture()
	cfg.Screens["qwen_l40s"].Shapes = []string{"interactive"} // decode_heavy lanes vanish
	p, _ := Build(cfg, snap, Options{})
	actions := map[string]string{}
	for _, l := range p.Lanes {
		actions[l.Key] = fmt.Sprintf("%s %d/%d", l.Action, l.RunsDone, l.Runs)
	}
	want := map[string]string{
		"qwen_l40s/qwen06/decode_heavy/l40s": "drop 2/2",
		"qwen_l40s/qwen06/interactive/l40s":  "run 1/2", // resumes: one run left
		"qwen_l40s/qwen17/decode_heavy/l40s": "drop 0/2",
		"qwen_l40s/qwen17/interactive/l40s":  "noop 2/2",
	}
	if fmt.Sprint(actions) != fmt.Sprint(want) {
		t.Errorf("actions = %v\nwant      %v", actions, want)
	}
	if p.Totals.Dropped != 2 || p.Totals.Runs != 1 || !strings.Contains(SummaryLine(p), "1 unchanged, 2 to drop.") {
		t.Errorf("totals %+v, summary %q", p.Totals, SummaryLine(p))
	}
	// The graph holds only the remaining run, on its own deployment.
	var runs []string
	for _, n := range p.Graph.Nodes {
		if n.Kind == NodeRun {
			runs = append(runs, n.ID)
		}
	}
	if len(runs) != 1 || !strings.HasSuffix(runs[0], ".2") {
		t.Errorf("run nodes %v, want only run 2 of the resumed lane", runs)
	}
}

func TestReplaceForcesRerun(t *testing.T) {
	first := build(t, fixture())
	snap := writeState(t, t.TempDir(), first.Lanes, []int{2, 2, 2, 2})
	p, _ := Build(fixture(), snap, Options{})
	if p.HasWork() || p.Totals.Unchanged != 4 || len(p.Graph.Nodes) != 0 {
		t.Fatalf("complete state must give an empty plan: %+v", p.Totals)
	}
	target := first.Lanes[2]
	for _, r := range []string{target.ID, target.ID[:6], target.Key} {
		p, diags := Build(fixture(), snap, Options{Replace: []string{r}})
		if diags.HasErrors() {
			t.Fatalf("-replace=%s: %v", r, diags)
		}
		l := p.Lane(target.ID)
		if l.Action != ActionRerun || l.Reason != "forced by -replace" || l.RunsToDo() != 2 || p.Totals.LanesToRun != 1 {
			t.Errorf("-replace=%s: %+v", r, l)
		}
	}
	_, diags := Build(fixture(), snap, Options{Replace: []string{"ffffffffffff"}})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "matches no lane") {
		t.Errorf("unknown -replace target: %v", diags)
	}
}

// TestMissingEarlierRunIsRedone: with run 2 complete but run 1 missing (its
// records lost), run 1 is scheduled again and run 2 is not: the plan counts
// exactly the one run apply makes (it counted 2, or 3 of 3, before).
func TestMissingEarlierRunIsRedone(t *testing.T) {
	first := build(t, fixture())
	snap := writeState(t, t.TempDir(), first.Lanes[:1], []int{0})
	rec := snap.Lanes[first.Lanes[0].ID]
	rec.Completed = []int{2}
	p, _ := Build(fixture(), snap, Options{})
	l := p.Lane(first.Lanes[0].ID)
	if l == nil || l.Action != ActionRun || l.RunsDone != 1 || l.RunsToDo() != 1 || !l.RunDone(2) || l.RunDone(1) {
		t.Fatalf("lane with only run 2 complete: %+v", l)
	}
	if !strings.Contains(l.Reason, "run 1 to do") {
		t.Errorf("reason %q does not name the missing run", l.Reason)
	}
	var runs []string
	allRuns := 0
	for _, n := range p.Graph.Nodes {
		if n.Kind == NodeRun {
			allRuns++
		}
		if n.Kind == NodeRun && n.Lane == l.ID {
			runs = append(runs, n.ID)
		}
	}
	if len(runs) != 1 || !strings.HasSuffix(runs[0], ".1") {
		t.Errorf("run nodes %v, want run 1 only", runs)
	}
	if p.Totals.Runs != allRuns {
		t.Errorf("plan totals %d runs, the graph has %d run nodes", p.Totals.Runs, allRuns)
	}
	// A saved plan keeps the list.
	data, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var back Lane
	if err := json.Unmarshal(data, &back); err != nil || back.RunsToDo() != 1 || !back.RunDone(2) {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}
