package report

import (
	"fmt"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner"
)

// GatesFromPlan returns the gates the plan resolved for its screens (the
// report evaluates exactly those; it never reads gate blocks from the spec).
// A gate whose recorded condition does not parse, or a screen gate the plan
// has no spec for (a plan written before gates were recorded), is left out
// and named in warnings, so its results are inconclusive.
func GatesFromPlan(p *planner.Plan) (map[string]*GateSpec, []string) {
	out := map[string]*GateSpec{}
	var warnings []string
	for _, s := range p.Screens {
		recorded := map[string]bool{}
		for _, g := range s.GateSpecs {
			recorded[g.Name] = true
			if _, done := out[g.Name]; done {
				continue
			}
			lg, diags := lang.ParseGate(g.Name, g.Condition, g.ErrorMessage, g.MinRuns, g.MaxCV)
			if diags.HasErrors() {
				warnings = append(warnings, fmt.Sprintf("gate %s: the plan's condition %q is not a valid gate condition (%s); it is inconclusive", g.Name, g.Condition, firstSummary(diags)))
				continue
			}
			out[g.Name] = &GateSpec{Name: g.Name, Condition: lg.Condition, ConditionText: oneLine(g.Condition),
				ErrorMessage: g.ErrorMessage, MinRuns: g.MinRuns, MaxCV: g.MaxCV}
		}
		for _, name := range s.Gates {
			if !recorded[name] {
				warnings = append(warnings, fmt.Sprintf("screen %s: the plan records no condition for gate %s (it was made by an older infercrane), so the gate is inconclusive; plan and apply again to record it", s.Name, name))
			}
		}
	}
	return out, warnings
}
