package planner

import (
	"strings"
	"testing"
)

// TestTargetLimitsThePlan: -target keeps only the lanes it names (by ID,
// ID prefix, key or key prefix), leaves the state's other lanes alone (no
// drop), warns that the plan is partial, and rejects a target naming nothing.
func TestTargetLimitsThePlan(t *testing.T) {
	all := build(t, fixture())
	if len(all.Lanes) != 4 {
		t.Fatalf("fixture has %d lanes, want 4", len(all.Lanes))
	}
	one := all.Lanes[1]
	for _, tc := range []struct {
		target []string
		want   int
	}{
		{[]string{one.ID}, 1},
		{[]string{one.ID[:5]}, 1},
		{[]string{one.Key}, 1},
		{[]string{one.Screen + "/" + one.Model}, 2},
		{[]string{one.Screen}, 4},
		{[]string{all.Lanes[0].ID, all.Lanes[3].Key}, 2},
	} {
		p, diags := Build(fixture(), nil, Options{Target: tc.target})
		if diags.HasErrors() {
			t.Fatalf("-target %v: %v", tc.target, diags)
		}
		if len(p.Lanes) != tc.want || p.Totals.LanesToRun != tc.want {
			t.Errorf("-target %v: %d lanes (%d to run), want %d", tc.target, len(p.Lanes), p.Totals.LanesToRun, tc.want)
		}
		// A partial plan says so; one whose targets name every lane says
		// that instead of "limits this plan to 4 of 4 lanes".
		want := "-target limits this plan"
		if tc.want == len(all.Lanes) {
			want = "-target matches every lane"
		}
		warned := false
		for _, f := range p.Preflight {
			warned = warned || (f.Severity == SeverityWarning && strings.Contains(f.Summary, want))
		}
		if !warned {
			t.Errorf("-target %v: no warning %q: %+v", tc.target, want, p.Preflight)
		}
		for _, n := range p.Graph.Nodes {
			if n.Lane != "" && p.Lane(n.Lane) == nil {
				t.Errorf("-target %v: graph node %s of an untargeted lane", tc.target, n.ID)
			}
		}
	}
	// A lane the state has but the spec lost is dropped only when targeted.
	snap := writeState(t, t.TempDir(), all.Lanes, []int{2, 2, 2, 2})
	cfg := fixture()
	cfg.Screens["qwen_l40s"].Shapes = []string{"interactive"}
	p, diags := Build(cfg, snap, Options{Target: []string{all.Lanes[0].Key}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if !strings.Contains(all.Lanes[0].Key, "decode_heavy") {
		t.Fatalf("lane 0 is %s; the test expects a decode_heavy lane first", all.Lanes[0].Key)
	}
	// Lanes 0 and 2 vanished; only lane 0 is targeted, so only it drops.
	if p.Totals.Dropped != 1 || len(p.Lanes) != 1 || p.Lanes[0].ID != all.Lanes[0].ID {
		t.Errorf("targeted drop: %+v, lanes %d", p.Totals, len(p.Lanes))
	}
	_, diags = Build(fixture(), nil, Options{Target: []string{"nosuchscreen"}})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "-target=nosuchscreen matches no lane") {
		t.Errorf("a target naming nothing: %v", diags)
	}
}
