package planner

import (
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner/state"
)

// reportPlan is a small plan with one screen, two gates and one complete
// lane, as the state's plan.json would hold it.
func reportPlan() *Plan {
	return &Plan{
		FormatVersion: FormatVersion, Variables: map[string]any{}, Preflight: []Finding{}, Assumptions: []Assumption{},
		Graph: Graph{Nodes: []Node{}, Edges: []Edge{}},
		Screens: []*Screen{{
			Name: "s", Baseline: "a", Gates: []string{"clean", "fast"}, Runs: 2, Seed: 1,
			SelectionBoundary: "sim only",
			GateSpecs: []Gate{
				{Name: "clean", Condition: "lane.failed == 0", Metrics: []string{"failed"}, ErrorMessage: "no failures"},
				{Name: "fast", Condition: "lane.ttft_p95_ms < 10", Metrics: []string{"ttft_p95_ms"}, MinRuns: 1},
			},
		}},
		Lanes: []*Lane{{ID: "0123456789ab", Key: "s/a/chat/l40s", Screen: "s", Model: "a", Shape: "chat", GPU: "l40s",
			Action: ActionNoop, Runs: 2, RunsDone: 2, ChangedInputs: []string{}, Inputs: LaneInputs{Runtime: engine.Runtime{RuntimeArgs: []string{}}}}},
	}
}

// TestReportChanges: every report setting that is not a lane input is
// named when it changes, and nothing is named when none did (reformatting a
// condition included), when there is no applied plan, or for a lane that
// runs anyway.
func TestReportChanges(t *testing.T) {
	applied, err := Marshal(reportPlan())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(p *Plan)
		want []string // substrings, one per change, in order
	}{
		{"unchanged", func(p *Plan) {}, nil},
		{"condition reformatted", func(p *Plan) { p.Screens[0].GateSpecs[1].Condition = "lane.ttft_p95_ms  <\n 10" }, nil},
		{"condition", func(p *Plan) { p.Screens[0].GateSpecs[1].Condition = "lane.ttft_p95_ms < 1000" },
			[]string{"screen s: gate fast: condition lane.ttft_p95_ms < 1000 (was lane.ttft_p95_ms < 10)"}},
		{"message", func(p *Plan) { p.Screens[0].GateSpecs[0].ErrorMessage = "none may fail" },
			[]string{`gate clean: error_message "none may fail" (was "no failures")`}},
		{"min_runs and max_cv", func(p *Plan) { p.Screens[0].GateSpecs[1].MinRuns = 5; p.Screens[0].GateSpecs[1].MaxCV = 0.1 },
			[]string{"gate fast: min_runs 5 (was 1)", "gate fast: max_cv 0.1 (was 0)"}},
		{"gate list", func(p *Plan) {
			p.Screens[0].Gates = []string{"clean"}
			p.Screens[0].GateSpecs = p.Screens[0].GateSpecs[:1]
		},
			[]string{"screen s: gates [clean] (were [clean, fast])"}},
		{"baseline and boundary", func(p *Plan) { p.Screens[0].Baseline = ""; p.Screens[0].SelectionBoundary = "other" },
			[]string{"baseline none (was a)", "selection_boundary other (was sim only)"}},
		{"runtime order", func(p *Plan) { p.Screens[0].Runtimes = []string{"v2", "v1"} }, []string{"runtimes [v2, v1] (were [])"}},
		{"trace profile", func(p *Plan) { p.Traces = []TraceProfile{{Name: "t", Source: "t.parquet", Digest: "sha256:00"}} },
			[]string{"traces: the workload profiles"}},
		{"lane renamed", func(p *Plan) { p.Lanes[0].Key = "s/b/chat/l40s" }, []string{"lane 0123456789ab: now s/b/chat/l40s (was s/a/chat/l40s)"}},
		{"fewer runs", func(p *Plan) { p.Lanes[0].Runs = 1 }, []string{"lane 0123456789ab (s/a/chat/l40s): 1 run planned (was 2)"}},
		{"lane joins", func(p *Plan) { p.Lanes[0].ID = "ba9876543210" }, []string{"lane ba9876543210 (s/a/chat/l40s): complete in the state, joins the reports"}},
		{"lane runs anyway", func(p *Plan) { p.Lanes[0].ID, p.Lanes[0].Action = "ba9876543210", ActionRun }, nil},
		{"screen gone", func(p *Plan) { p.Screens[0].Name = "t" }, []string{"screen s: no longer in the spec"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := reportPlan()
			c.edit(p)
			got := reportChanges(applied, p)
			if len(got) != len(c.want) {
				t.Fatalf("got %d changes %q, want %d like %q", len(got), got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("change %d is %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
	if got := reportChanges(nil, reportPlan()); got != nil {
		t.Errorf("no applied plan: got %q, want no changes", got)
	}
	if got := reportChanges([]byte("{not json"), reportPlan()); len(got) != 1 || !strings.Contains(got[0], "cannot be read") {
		t.Errorf("an unreadable applied plan: got %q, want one change saying so", got)
	}
}

// TestForStateKeepsUntargetedLanes: the plan a targeted apply keeps in the
// state holds the lanes of the applied plan that the target left out and
// the state still records, and no lane the plan reruns under its key, drops
// or the state no longer has.
func TestForStateKeepsUntargetedLanes(t *testing.T) {
	before := reportPlan()
	other := *before.Lanes[0]
	other.ID, other.Key, other.Shape = "ffff00001111", "s/a/long/l40s", "long"
	gone := other
	gone.ID, gone.Key = "eeee00002222", "s/a/gone/l40s"
	rerun := other
	rerun.ID, rerun.Key = "dddd00003333", "s/a/rerun/l40s"
	before.Lanes = append(before.Lanes, &other, &gone, &rerun)
	applied, err := Marshal(before)
	if err != nil {
		t.Fatal(err)
	}
	snap := &state.Snapshot{Applied: applied, Lanes: map[string]*state.LaneRecord{}}
	for _, id := range []string{"0123456789ab", "ffff00001111", "dddd00003333"} {
		snap.Lanes[id] = &state.LaneRecord{ID: id}
	}
	p := reportPlan() // -target s/a/chat and s/a/rerun: the chat lane, and rerun under a new ID
	p.Lanes = append(p.Lanes, &Lane{ID: "cccc00004444", Key: "s/a/rerun/l40s", Screen: "s", Action: ActionRerun, ChangedInputs: []string{}, Inputs: LaneInputs{Runtime: engine.Runtime{RuntimeArgs: []string{}}}})
	b, err := (&SavedPlan{Format: SavedFormat, Plan: p}).ForState(snap)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := DecodePlan(b, "plan.json")
	if err != nil {
		t.Fatalf("the state's plan does not read back: %v", err)
	}
	var keys []string
	for _, l := range got.Lanes {
		keys = append(keys, l.ID+" "+string(l.Action))
	}
	if want := "0123456789ab noop,cccc00004444 rerun,ffff00001111 noop"; strings.Join(keys, ",") != want {
		t.Errorf("the state's plan has lanes %q, want %q", strings.Join(keys, ","), want)
	}
	if len(p.Lanes) != 2 {
		t.Errorf("ForState changed the plan it was given: %d lanes", len(p.Lanes))
	}
	if b, err = (&SavedPlan{Format: SavedFormat, Plan: reportPlan()}).ForState(&state.Snapshot{}); err != nil || strings.Contains(string(b), "ffff00001111") {
		t.Errorf("without an applied plan: %v, %s", err, b)
	}
}
