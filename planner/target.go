package planner

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/infercrane/infercrane/lang"
)

// MatchLane reports whether target names the lane with this ID and key:
// its ID, a prefix of its ID of at least 4 characters, or its key
// (screen/model/shape/gpu). -replace and 'state' commands name lanes so.
func MatchLane(id, key, target string) bool {
	return id == target || key == target || (len(target) >= 4 && strings.HasPrefix(id, target))
}

// TargetsLane reports whether a -target names the lane: as MatchLane, or
// by a prefix of its key that ends at a "/" ("screen", "screen/model").
func TargetsLane(id, key, target string) bool {
	target = strings.TrimSuffix(strings.TrimSpace(target), "/")
	return MatchLane(id, key, target) || strings.HasPrefix(key, target+"/")
}

// applyTargets keeps the lanes and drops that a -target names (all of them
// without targets). A target that names nothing is an error; a targeted
// plan gets a warning that it is partial.
func applyTargets(lanes []*lanePlan, drops []*Lane, targets []string, f *findings) ([]*lanePlan, []*Lane, hcl.Diagnostics) {
	if len(targets) == 0 {
		return lanes, drops, nil
	}
	var diags hcl.Diagnostics
	hit := make([]bool, len(targets))
	targeted := func(id, key string) bool {
		ok := false
		for i, t := range targets {
			if TargetsLane(id, key, t) {
				hit[i], ok = true, true
			}
		}
		return ok
	}
	var keptLanes []*lanePlan
	for _, l := range lanes {
		if targeted(l.ID, l.Key) {
			keptLanes = append(keptLanes, l)
		}
	}
	var keptDrops []*Lane
	for _, l := range drops {
		if targeted(l.ID, l.Key) {
			keptDrops = append(keptDrops, l)
		}
	}
	var names []string // what a target may name: IDs, keys and their prefixes
	seen := map[string]bool{}
	addName := func(id, key string) {
		parts := strings.Split(key, "/")
		for i := range parts {
			if p := strings.Join(parts[:i+1], "/"); !seen[p] {
				seen[p] = true
				names = append(names, p)
			}
		}
		names = append(names, id)
	}
	for _, l := range lanes {
		addName(l.ID, l.Key)
	}
	for _, l := range drops {
		addName(l.ID, l.Key)
	}
	for i, t := range targets {
		if !hit[i] {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("-target=%s matches no lane", t),
				Detail: "Give a lane ID (or a prefix of at least 4 digits), a lane key screen/model/shape/gpu, or a prefix of keys such as a screen name, as 'infercrane plan' shows them." +
					lang.DidYouMean(strings.TrimSuffix(strings.TrimSpace(t), "/"), names),
			})
		}
	}
	total, kept := len(lanes)+len(drops), len(keptLanes)+len(keptDrops)
	if kept == total {
		f.add(SeverityWarning, "", "", fmt.Sprintf("-target matches every lane (%d): this plan is the one without it", total),
			"Targeting is for exceptions (rerunning one lane); drop -target, or name fewer lanes.")
		return keptLanes, keptDrops, diags
	}
	f.add(SeverityWarning, "", "", fmt.Sprintf("-target limits this plan to %d of %d lanes", kept, total),
		"The other lanes are left as they are in the state: not run, not rerun, not dropped. Targeting is for exceptions (rerunning one lane); plan without -target to see every change the spec makes.")
	return keptLanes, keptDrops, diags
}
