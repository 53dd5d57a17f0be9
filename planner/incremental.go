package planner

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/planner/state"
)

// resolveReplace maps -replace targets (lane IDs, unique ID prefixes of at
// least 4 digits, or lane keys) to lane IDs.
func resolveReplace(lanes []*lanePlan, targets []string) (map[string]bool, hcl.Diagnostics) {
	out := map[string]bool{}
	var diags hcl.Diagnostics
	for _, t := range targets {
		t = strings.TrimSpace(t)
		var match []string
		for _, l := range lanes {
			if MatchLane(l.ID, l.Key, t) {
				match = append(match, l.ID)
			}
		}
		switch {
		case len(match) == 1:
			out[match[0]] = true
		case len(match) == 0:
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("-replace=%s matches no lane", t),
				Detail:   "Give a lane ID (or a unique prefix of at least 4 digits) or a lane key screen/model/shape/gpu as shown by 'infercrane plan'.",
			})
		default:
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("-replace=%s matches %d lanes", t, len(match)),
				Detail:   "Give more digits of the lane ID: it matches " + strings.Join(match, ", ") + ".",
			})
		}
	}
	return out, diags
}

// applyState sets each lane's action from the state and returns the lanes
// the state has but the spec no longer makes, as drop lanes.
func applyState(lanes []*lanePlan, snap *state.Snapshot, replace map[string]bool) []*Lane {
	current := make(map[string]bool, len(lanes))
	for _, l := range lanes {
		current[l.ID] = true
	}
	// Records that no current lane has by ID, by key, for reruns.
	byKey := map[string]*state.LaneRecord{}
	for _, id := range sortedKeys(snap.Lanes) {
		rec := snap.Lanes[id]
		if rec == nil || current[id] {
			continue
		}
		if old := byKey[rec.Key]; old == nil || completed(rec, rec.Runs) > completed(old, old.Runs) {
			byKey[rec.Key] = rec
		}
	}
	superseded := map[string]bool{}
	for _, l := range lanes {
		rec := snap.Lanes[l.ID]
		switch {
		case replace[l.ID]:
			l.Action, l.Reason = ActionRerun, "forced by -replace"
			if rec != nil {
				l.Supersedes = l.ID
			} else if old := byKey[l.Key]; old != nil {
				l.Supersedes = old.ID
				superseded[old.ID] = true
			}
		case rec != nil:
			done := completed(rec, l.Runs)
			switch {
			case done >= l.Runs:
				l.Action, l.RunsDone = ActionNoop, done
				l.Reason = fmt.Sprintf("complete in the state (%d of %d runs)", done, l.Runs)
			case done > 0:
				l.Action, l.RunsDone = ActionRun, done
				l.RunsComplete = completeList(rec, l.Runs)
				l.Reason = fmt.Sprintf("%d of %d runs done; the rest run", done, l.Runs)
				if missing := missingRuns(l.Lane); len(missing) > 0 && l.RunsComplete != nil {
					l.Reason = fmt.Sprintf("%d of %d runs done; run %s to do", done, l.Runs, joinInts(missing))
				}
			default:
				l.Action, l.Reason = ActionRun, "no completed run in the state"
			}
			l.Notes = append(l.Notes, failedRunNotes(l.Lane, rec)...)
		case byKey[l.Key] != nil:
			old := byKey[l.Key]
			superseded[old.ID] = true
			l.Action, l.Supersedes = ActionRerun, old.ID
			l.ChangedInputs = changedInputs(old.Inputs, l.Inputs)
			if len(l.ChangedInputs) == 0 {
				l.Reason = "inputs changed since lane " + old.ID
			} else {
				l.Reason = "inputs changed: " + strings.Join(l.ChangedInputs, ", ")
			}
		default:
			l.Action, l.Reason = ActionRun, "new lane"
		}
	}
	var drops []*Lane
	for _, id := range sortedKeys(snap.Lanes) {
		rec := snap.Lanes[id]
		if rec == nil || current[id] || superseded[id] {
			continue
		}
		drops = append(drops, dropLane(rec))
	}
	sort.SliceStable(drops, func(i, j int) bool { return drops[i].Key < drops[j].Key })
	return drops
}

// completed is how many of rec's runs 1..runs are complete. A missing
// earlier run (its records lost, say) is redone and the later ones that
// completed are not: the plan lists them (completeList) and the DAG has a
// node only for each missing run, so plan, progress and apply count the
// same runs.
func completed(rec *state.LaneRecord, runs int) int {
	n := 0
	for _, r := range rec.Completed {
		if r >= 1 && r <= runs {
			n++
		}
	}
	return n
}

// failedRunNotes says which of the lane's runs to do failed in an earlier
// apply, and how: they are rerun.
func failedRunNotes(l *Lane, rec *state.LaneRecord) []string {
	var out []string
	runs := make([]int, 0, len(rec.Failed))
	for n := range rec.Failed {
		runs = append(runs, n)
	}
	sort.Ints(runs)
	for _, n := range runs {
		f := rec.Failed[n]
		if n > l.Runs || l.RunDone(n) || f == nil {
			continue
		}
		why := f.Error
		if i := strings.IndexByte(why, '\n'); i >= 0 {
			why = why[:i]
		}
		if len(why) > 200 {
			why = why[:200] + "..."
		}
		if total := sumCounts(f.Failures); total > 0 && total >= f.Requests {
			why = fmt.Sprintf("every request failed: %s of %d", classText(f.Failures), f.Requests)
		} else if total > 0 {
			// Some requests were answered: the error's first clause
			// says why the run still failed (the server was unreachable).
			cause, _, _ := strings.Cut(f.Error, " (")
			why = fmt.Sprintf("%s: %s of %d requests failed", cause, classText(f.Failures), f.Requests)
		}
		out = append(out, fmt.Sprintf("run %d failed in an earlier apply (%s); it is rerun", n, why))
	}
	return out
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// classText renders failure counts by class in class order, e.g. "connection 4".
func classText(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// completeList is the complete runs of rec among 1..runs when they are not
// simply 1..N (nil then: RunsDone says it all).
func completeList(rec *state.LaneRecord, runs int) []int {
	var out []int
	gap := false
	for _, r := range rec.Completed { // sorted
		if r < 1 || r > runs {
			continue
		}
		if r != len(out)+1 {
			gap = true
		}
		out = append(out, r)
	}
	if !gap {
		return nil
	}
	return out
}

// missingRuns lists the runs of l that are to do, in order.
func missingRuns(l *Lane) []int {
	var out []int
	for n := 1; n <= l.Runs; n++ {
		if !l.RunDone(n) {
			out = append(out, n)
		}
	}
	return out
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}

// dropLane describes a state lane that is no longer in the spec.
func dropLane(rec *state.LaneRecord) *Lane {
	l := &Lane{
		ID: rec.ID, Key: rec.Key, Action: ActionDrop,
		Reason:        "in the state but no longer in the spec",
		ChangedInputs: []string{}, Runs: rec.Runs, RunsDone: len(rec.Completed),
	}
	parts := strings.SplitN(rec.Key, "/", 5)
	for i, dst := range []*string{&l.Screen, &l.Model, &l.Shape, &l.GPU, &l.Runtime} {
		if i < len(parts) {
			*dst = parts[i]
		}
	}
	if rec.Inputs != nil {
		if b, err := json.Marshal(rec.Inputs); err == nil {
			_ = json.Unmarshal(b, &l.Inputs) // best effort: shown, not used
		}
	}
	if l.Inputs.RuntimeArgs == nil {
		l.Inputs.RuntimeArgs = []string{}
	}
	l.RequestsPerRun = l.Inputs.Requests
	l.Deployment = DeploymentID(l.Inputs)
	return l
}

// InputsMap is a lane's inputs as the flat JSON object the state records.
func InputsMap(in LaneInputs) map[string]any {
	b, _ := json.Marshal(in)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// flattenSearch spells a search's nested inputs as dotted names
// (search.slo.ttft_p95_ms), so a diff names the objective that changed.
func flattenSearch(m map[string]any) map[string]any {
	s, ok := m["search"].(map[string]any)
	if !ok {
		return m
	}
	out := make(map[string]any, len(m)+len(s))
	for k, v := range m {
		if k != "search" {
			out[k] = v
		}
	}
	var walk func(prefix string, v map[string]any)
	walk = func(prefix string, v map[string]any) {
		for k, x := range v {
			if sub, ok := x.(map[string]any); ok {
				walk(prefix+k+".", sub)
				continue
			}
			out[prefix+k] = x
		}
	}
	walk("search.", s)
	return out
}

// changedInputs names the inputs (JSON names) whose values differ between a
// recorded inputs object and the current inputs, sorted.
func changedInputs(old map[string]any, cur LaneInputs) []string {
	old, now := flattenSearch(old), flattenSearch(InputsMap(cur))
	names := map[string]bool{}
	for k := range old {
		names[k] = true
	}
	for k := range now {
		names[k] = true
	}
	out := []string{}
	for _, k := range sortedKeys(names) {
		if !reflect.DeepEqual(old[k], now[k]) {
			out = append(out, k)
		}
	}
	return out
}

// ChangedInputs names the inputs that differ between two lanes' inputs
// (JSON names, sorted).
func ChangedInputs(old, cur LaneInputs) []string { return changedInputs(InputsMap(old), cur) }
