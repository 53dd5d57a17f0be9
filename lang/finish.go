package lang

import (
	"github.com/hashicorp/hcl/v2"
)

// finish adds spec-wide checks once every block is evaluated.
func (l *loader) finish() {
	if len(l.cfg.Screens) == 0 && !l.diags.HasErrors() {
		var rng hcl.Range
		if len(l.declOrder) > 0 {
			rng = l.declOrder[0].defRange()
		} else {
			for name := range l.cfg.Files {
				rng = hcl.Range{Filename: name, Start: hcl.InitialPos, End: hcl.InitialPos}
				break
			}
		}
		l.diags = append(l.diags, warnf(rng, "No screen",
			"The spec declares no screen block, so there is nothing to plan. Add screen \"NAME\" { models = [...], shapes = [...], gpus = [...] }."))
	}
}
