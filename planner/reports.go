package planner

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/infercrane/infercrane/planner/state"
)

// What the reports read from the plan, besides the runs in the state: the
// screens (their gates with every setting, baseline, selection boundary,
// runtime order), the traces' profiles (the evidence's provenance) and, of
// each live lane, its key and number of runs.
// A lane's inputs are its ID, so a change to them reruns the lane; the rest
// can change while every lane stays complete, and then only the reports
// need making again. reportChanges names those changes.

// HasReportChanges reports whether the reports in the state are out of date
// with this plan although no lane needs to run for it (ReportChanges).
func (p *Plan) HasReportChanges() bool { return len(p.ReportChanges) > 0 }

// HasChanges reports whether applying the plan changes anything: lanes to
// run or drop, or reports to re-evaluate.
func (p *Plan) HasChanges() bool {
	return p.HasWork() || p.Totals.Dropped > 0 || p.HasReportChanges()
}

// reportChanges compares the plan the state's reports were made from (the
// raw plan.json of the last apply; nil when none) with p and names, in
// words, each difference that changes the reports without changing a
// lane: a setting of a screen or its gates (SettingChanges), a screen
// gone, a complete lane under a new key or with fewer runs. Lanes p does
// not hold (outside its -target) are not compared.
func reportChanges(raw []byte, p *Plan) []string {
	if raw == nil {
		return nil
	}
	applied, _, err := DecodePlan(raw, "the state's plan.json")
	if err != nil {
		return []string{fmt.Sprintf("the state's plan.json cannot be read (%v); the reports are made again from this plan", err)}
	}
	var out []string
	for _, c := range SettingChanges(applied, p) {
		out = append(out, c.String())
	}
	now := map[string]bool{}
	for _, s := range p.Screens {
		now[s.Name] = true
	}
	for _, s := range applied.Screens {
		if !now[s.Name] {
			out = append(out, fmt.Sprintf("screen %s: no longer in the spec, its gates no longer count", s.Name))
		}
	}
	live := map[string]*Lane{}
	for _, l := range applied.Lanes {
		if l.Action != ActionDrop {
			live[l.ID] = l
		}
	}
	for _, l := range p.Lanes {
		if l.Action != ActionNoop {
			continue // it runs (or is dropped): the reports are made again anyway
		}
		old := live[l.ID]
		switch {
		case old == nil:
			out = append(out, fmt.Sprintf("lane %s (%s): complete in the state, joins the reports", l.ID, l.Key))
		case old.Key != l.Key:
			out = append(out, fmt.Sprintf("lane %s: now %s (was %s)", l.ID, l.Key, old.Key))
		case old.Runs != l.Runs:
			out = append(out, fmt.Sprintf("lane %s (%s): %s planned (was %d)", l.ID, l.Key, plural(l.Runs, "run"), old.Runs))
		}
	}
	return out
}

// SettingChange is one setting that only the reports read and that differs
// between two plans: the gates a screen lists, a gate's condition,
// error_message, min_runs or max_cv, a screen's baseline, selection
// boundary or runtime order, the traces' profiles. Such a change keeps
// every lane's ID and changes what "pass" means, so plan and diff both
// name it, with the old and the new value.
type SettingChange struct {
	Screen  string `json:"screen,omitempty"`
	Gate    string `json:"gate,omitempty"` // set for a gate's own setting
	Setting string `json:"setting"`
	Old     any    `json:"old"`
	New     any    `json:"new"`
}

// Subject names what the setting belongs to: "screen s", "screen s: gate
// g", or "" for a plan-wide setting.
func (c SettingChange) Subject() string {
	switch {
	case c.Gate != "":
		return fmt.Sprintf("screen %s: gate %s", c.Screen, c.Gate)
	case c.Screen != "":
		return "screen " + c.Screen
	}
	return ""
}

// String renders the change in words, "screen s: gate g: min_runs 5 (was 1)".
func (c SettingChange) String() string {
	var what string
	switch v := c.New.(type) {
	case []string:
		what = fmt.Sprintf("%s [%s] (were [%s])", c.Setting, strings.Join(v, ", "), strings.Join(c.Old.([]string), ", "))
	case []TraceProfile:
		what = fmt.Sprintf("%s: the workload profiles the evidence names as its provenance changed (%s, was %s)",
			c.Setting, traceDigests(v), traceDigests(c.Old.([]TraceProfile)))
	default:
		what = fmt.Sprintf("%s %s (was %s)", c.Setting, settingText(c.New), settingText(c.Old))
	}
	if s := c.Subject(); s != "" {
		return s + ": " + what
	}
	return what
}

func settingText(v any) string {
	switch x := v.(type) {
	case nil:
		return "none"
	case string:
		if x == "" {
			return "none"
		}
		return x
	case quoted:
		return fmt.Sprintf("%q", string(x))
	}
	return fmt.Sprint(v)
}

// quoted is a setting value shown in quotes (a gate's error_message).
type quoted string

func (q quoted) MarshalText() ([]byte, error) { return []byte(q), nil }

func traceDigests(ts []TraceProfile) string {
	if len(ts) == 0 {
		return "none"
	}
	var out []string
	for _, t := range ts {
		out = append(out, t.Name+" "+t.Digest)
	}
	return strings.Join(out, ", ")
}

// SettingChanges lists the report settings (SettingChange) that differ
// between old and cur, of the screens both plans have, then the traces.
func SettingChanges(old, cur *Plan) []SettingChange {
	var out []SettingChange
	before := map[string]*Screen{}
	for _, s := range old.Screens {
		before[s.Name] = s
	}
	for _, s := range cur.Screens {
		// A new screen's lanes run, or join the reports.
		if o := before[s.Name]; o != nil {
			out = append(out, screenChanges(o, s)...)
		}
	}
	if !slices.Equal(old.Traces, cur.Traces) {
		out = append(out, SettingChange{Setting: "traces", Old: nonNil(old.Traces), New: nonNil(cur.Traces)})
	}
	return out
}

// screenChanges lists what changed in a screen's report settings.
func screenChanges(old, s *Screen) []SettingChange {
	var out []SettingChange
	add := func(gate, setting string, o, n any) {
		out = append(out, SettingChange{Screen: s.Name, Gate: gate, Setting: setting, Old: o, New: n})
	}
	if !slices.Equal(old.Gates, s.Gates) {
		add("", "gates", nonNil(old.Gates), nonNil(s.Gates))
	}
	was := map[string]Gate{}
	for _, g := range old.GateSpecs {
		was[g.Name] = g
	}
	for _, g := range s.GateSpecs {
		o, ok := was[g.Name]
		if !ok {
			if slices.Contains(old.Gates, g.Name) {
				add(g.Name, "condition", "(not recorded in the old plan)", words(g.Condition))
			}
			continue // a gate new to the screen is named above
		}
		if words(o.Condition) != words(g.Condition) {
			add(g.Name, "condition", words(o.Condition), words(g.Condition))
		}
		if o.ErrorMessage != g.ErrorMessage {
			add(g.Name, "error_message", quoted(o.ErrorMessage), quoted(g.ErrorMessage))
		}
		if o.MinRuns != g.MinRuns {
			add(g.Name, "min_runs", o.MinRuns, g.MinRuns)
		}
		if o.MaxCV != g.MaxCV {
			add(g.Name, "max_cv", o.MaxCV, g.MaxCV)
		}
	}
	if old.Baseline != s.Baseline {
		add("", "baseline", old.Baseline, s.Baseline)
	}
	if old.SelectionBoundary != s.SelectionBoundary {
		add("", "selection_boundary", words(old.SelectionBoundary), words(s.SelectionBoundary))
	}
	if !slices.Equal(old.Runtimes, s.Runtimes) {
		add("", "runtimes", nonNil(old.Runtimes), nonNil(s.Runtimes))
	}
	return out
}

// words is text on one line with its runs of white space made one space,
// so reformatting a condition is not a change.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ForState returns the JSON of the saved plan to keep as the state's
// plan.json, which the reports read their screens, gates and lanes from:
// the plan itself, plus each live lane of the plan applied before
// (snap.Applied) that the plan does not make because a -target left it
// out and that the state still records, so that a targeted apply does not
// take the other lanes out of the reports. snap is the state as the apply
// holding its lock sees it.
func (s *SavedPlan) ForState(snap *state.Snapshot) ([]byte, error) {
	if s.Plan == nil {
		return nil, errors.New("saved plan has no plan")
	}
	kept := untargeted(snap, s.Plan)
	if len(kept) == 0 {
		return s.Encode()
	}
	c := *s
	pc := *s.Plan
	pc.Lanes = append(append([]*Lane{}, s.Plan.Lanes...), kept...)
	c.Plan = &pc
	return c.Encode() // digests computed anew
}

// untargeted lists the live lanes of the state's applied plan that p
// neither makes nor drops nor reruns under their key, of p's screens, and
// that the state still records: the lanes a -target left out of p.
func untargeted(snap *state.Snapshot, p *Plan) []*Lane {
	if snap == nil || snap.Applied == nil {
		return nil
	}
	applied, _, err := DecodePlan(snap.Applied, "the state's plan.json")
	if err != nil {
		return nil
	}
	ids, keys, screens := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, l := range p.Lanes {
		ids[l.ID], keys[l.Key] = true, true
	}
	for _, sc := range p.Screens {
		screens[sc.Name] = true
	}
	var out []*Lane
	for _, l := range applied.Lanes {
		if l.Action == ActionDrop || ids[l.ID] || keys[l.Key] || !screens[l.Screen] || snap.Lanes[l.ID] == nil {
			continue
		}
		k := *l
		k.Action, k.Reason = ActionNoop, "outside the -target of the last apply; kept for the reports"
		out = append(out, &k)
	}
	return out
}
