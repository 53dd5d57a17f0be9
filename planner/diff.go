package planner

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
)

// DiffResult is what changed between two plans of a spec: lanes added,
// removed and changed (with the changed inputs named), and the effect on
// the bill.
type DiffResult struct {
	Old DiffSide `json:"old"`
	New DiffSide `json:"new"`
	// Added are lanes only the new plan has.
	Added []DiffLane `json:"added"`
	// Removed are lanes only the old plan has.
	Removed []DiffLane `json:"removed"`
	// Changed are lanes at the same key (screen/model/shape/gpu) with
	// different inputs, or moved to another key with the same inputs.
	Changed []DiffChange `json:"changed"`
	// Unchanged counts lanes with the same key and ID in both plans.
	Unchanged int `json:"unchanged"`
	// CostDeltaUSD and GPUSecondsDelta are the new plan's totals minus the
	// old plan's.
	CostDeltaUSD    float64 `json:"cost_delta_usd"`
	GPUSecondsDelta float64 `json:"gpu_seconds_delta"`
	// Notional is the cost of the lanes on executors that bill nothing
	// (the sim) had they run on their GPUs at the plan's price, old and
	// new totals and the difference: a change of a sim screen shows what
	// it would cost on the real GPUs, not $0. Nil without such lanes.
	Notional *NotionalCost `json:"notional,omitempty"`
	// FindingsAdded are preflight findings only the new plan has.
	FindingsAdded []Finding `json:"findings_added"`
	// SettingsChanged are the settings only the reports read (a gate's
	// condition, min_runs or max_cv, the gates a screen lists, its
	// baseline or selection boundary, ...) that differ, with old and new
	// values: what "pass" means, which no lane's ID carries.
	SettingsChanged []SettingChange `json:"settings_changed"`
}

// NotionalCost is what lanes on an executor that bills nothing would
// cost on their GPUs at the plan's price (notionalUSD), in each plan.
type NotionalCost struct {
	OldUSD   float64 `json:"old_usd"`
	NewUSD   float64 `json:"new_usd"`
	DeltaUSD float64 `json:"delta_usd"`
}

// DiffSide identifies one plan of a diff.
type DiffSide struct {
	SpecDigest string `json:"spec_digest"`
	PlanDigest string `json:"plan_digest"`
	Totals     Totals `json:"totals"`
}

// DiffLane is a lane added or removed.
type DiffLane struct {
	ID         string  `json:"id"`
	Key        string  `json:"key"`
	Runs       int     `json:"runs"`
	Requests   int     `json:"requests"`
	GPUSeconds float64 `json:"gpu_seconds"`
	CostUSD    float64 `json:"cost_usd"`
	// NotionalUSD is the lane's notional cost (an executor that bills
	// nothing), 0 otherwise.
	NotionalUSD float64 `json:"notional_usd,omitempty"`
}

// DiffChange is a lane whose inputs or key changed.
type DiffChange struct {
	Key    string `json:"key"`
	OldKey string `json:"old_key,omitempty"` // set when the lane moved
	OldID  string `json:"old_id"`
	NewID  string `json:"new_id"`
	// ChangedInputs are the input names whose values differ.
	ChangedInputs []string `json:"changed_inputs"`
	// Values holds "old -> new" per changed input, for the reader.
	Values          map[string][2]any `json:"values"`
	GPUSecondsDelta float64           `json:"gpu_seconds_delta"`
	CostDeltaUSD    float64           `json:"cost_delta_usd"`
	// NotionalDeltaUSD is the change of the lane's notional cost (an
	// executor that bills nothing), 0 otherwise.
	NotionalDeltaUSD float64 `json:"notional_delta_usd,omitempty"`
}

// Empty reports whether the plans have the same lanes, findings and
// report settings.
func (d DiffResult) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0 && len(d.FindingsAdded) == 0 &&
		len(d.SettingsChanged) == 0
}

// Diff compares two plans. Lanes are matched by key first (a changed lane
// keeps its key and gets a new ID), then by ID (a lane whose block was
// renamed keeps its ID). Drop lanes, which are not in the spec, are ignored.
func Diff(old, cur *Plan) DiffResult {
	d := DiffResult{
		Old:     DiffSide{old.SpecDigest, old.PlanDigest, old.Totals},
		New:     DiffSide{cur.SpecDigest, cur.PlanDigest, cur.Totals},
		Added:   []DiffLane{},
		Removed: []DiffLane{},
		Changed: []DiffChange{},

		CostDeltaUSD:    round(cur.Totals.CostUSD-old.Totals.CostUSD, 6),
		GPUSecondsDelta: round(cur.Totals.GPUSeconds-old.Totals.GPUSeconds, 3),
		FindingsAdded:   []Finding{},
		SettingsChanged: nonNil(SettingChanges(old, cur)),
	}
	oldByKey, oldByID := map[string]*Lane{}, map[string]*Lane{}
	for _, l := range old.Lanes {
		if l.Action != ActionDrop {
			oldByKey[l.Key], oldByID[l.ID] = l, l
		}
	}
	// Executor settings are compared when both plans carry them (format
	// 2): a new default, or a spelling that resolves alike, shows here
	// though the lane's ID is the same.
	settings := old.FormatVersion == FormatVersion && cur.FormatVersion == FormatVersion
	change := func(o, l *Lane) DiffChange {
		c := change(o, l)
		if settings {
			c.addSettings(o, l)
		}
		ou, _ := notionalUSD(old, o)
		nu, _ := notionalUSD(cur, l)
		c.NotionalDeltaUSD = round(nu-ou, 6)
		return c
	}
	diffLane := func(p *Plan, l *Lane) DiffLane {
		dl := diffLane(l)
		dl.NotionalUSD, _ = notionalUSD(p, l)
		dl.NotionalUSD = round(dl.NotionalUSD, 6)
		return dl
	}
	matched := map[*Lane]bool{}
	var unmatched []*Lane
	for _, l := range cur.Lanes {
		if l.Action == ActionDrop {
			continue
		}
		o := oldByKey[l.Key]
		switch {
		case o != nil && o.ID == l.ID && o.Runs == l.Runs && (!settings || reflect.DeepEqual(o.ExecutorSettings, l.ExecutorSettings)):
			matched[o] = true
			d.Unchanged++
		case o != nil:
			matched[o] = true
			d.Changed = append(d.Changed, change(o, l))
		default:
			unmatched = append(unmatched, l)
		}
	}
	for _, l := range unmatched {
		if o := oldByID[l.ID]; o != nil && !matched[o] {
			matched[o] = true
			c := change(o, l)
			c.OldKey = o.Key
			d.Changed = append(d.Changed, c)
			continue
		}
		d.Added = append(d.Added, diffLane(cur, l))
	}
	for _, l := range old.Lanes {
		if l.Action != ActionDrop && !matched[l] {
			d.Removed = append(d.Removed, diffLane(old, l))
		}
	}
	sort.Slice(d.Changed, func(i, j int) bool { return d.Changed[i].Key < d.Changed[j].Key })
	sort.Slice(d.Added, func(i, j int) bool { return d.Added[i].Key < d.Added[j].Key })
	sort.Slice(d.Removed, func(i, j int) bool { return d.Removed[i].Key < d.Removed[j].Key })
	d.Notional = notionalTotals(old, cur)
	seen := map[Finding]bool{}
	for _, f := range old.Preflight {
		seen[f] = true
	}
	for _, f := range cur.Preflight {
		if !seen[f] {
			d.FindingsAdded = append(d.FindingsAdded, f)
		}
	}
	return d
}

// notionalTotals adds up the notional costs of each plan's lanes, in plan
// order; nil when neither plan has a lane with one.
func notionalTotals(old, cur *Plan) *NotionalCost {
	var n NotionalCost
	found := false
	for i, p := range []*Plan{old, cur} {
		for _, l := range p.Lanes {
			if l.Action == ActionDrop {
				continue
			}
			if usd, ok := notionalUSD(p, l); ok {
				found = true
				if i == 0 {
					n.OldUSD += usd
				} else {
					n.NewUSD += usd
				}
			}
		}
	}
	if !found {
		return nil
	}
	n.OldUSD, n.NewUSD, n.DeltaUSD = round(n.OldUSD, 6), round(n.NewUSD, 6), round(n.NewUSD-n.OldUSD, 6)
	return &n
}

func diffLane(l *Lane) DiffLane {
	return DiffLane{ID: l.ID, Key: l.Key, Runs: l.RunsToDo(), Requests: l.RunsToDo() * l.RequestsPerRun,
		GPUSeconds: l.Estimate.GPUSeconds, CostUSD: l.Estimate.CostUSD}
}

func change(o, l *Lane) DiffChange {
	c := DiffChange{Key: l.Key, OldID: o.ID, NewID: l.ID, ChangedInputs: ChangedInputs(o.Inputs, l.Inputs), Values: map[string][2]any{},
		GPUSecondsDelta: round(l.Estimate.GPUSeconds-o.Estimate.GPUSeconds, 3),
		CostDeltaUSD:    round(l.Estimate.CostUSD-o.Estimate.CostUSD, 6)}
	om, nm := flattenSearch(InputsMap(o.Inputs)), flattenSearch(InputsMap(l.Inputs))
	for _, k := range c.ChangedInputs {
		c.Values[k] = [2]any{om[k], nm[k]}
	}
	if o.Runs != l.Runs {
		c.ChangedInputs = append(c.ChangedInputs, "runs")
		c.Values["runs"] = [2]any{o.Runs, l.Runs}
	}
	return c
}

// addSettings names each executor setting that differs between the lanes
// ("executor_settings.timeout") with its values.
func (c *DiffChange) addSettings(o, l *Lane) {
	names := map[string]bool{}
	for k := range o.ExecutorSettings {
		names[k] = true
	}
	for k := range l.ExecutorSettings {
		names[k] = true
	}
	for _, k := range sortedKeys(names) {
		ov, nv := o.ExecutorSettings[k], l.ExecutorSettings[k]
		if reflect.DeepEqual(ov, nv) {
			continue
		}
		name := "executor_settings." + k
		c.ChangedInputs = append(c.ChangedInputs, name)
		c.Values[name] = [2]any{ov, nv}
	}
}

// JSON renders the diff as indented JSON.
func (d DiffResult) JSON() ([]byte, error) {
	b, err := encode(d)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
