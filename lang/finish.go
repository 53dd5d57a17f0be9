package lang

import (
	"github.com/hashicorp/hcl/v2"
)

// finish adds spec-wide checks once every block is evaluated.
func (l *loader) finish() {
	l.sessionSearches()
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

// sessionSearches rejects a request_rate search over a session shape, by
// the shape's own search or its screen's: sessions run closed loop (each
// turn waits for the answer to the last), so every point of the search
// would fail at apply.
func (l *loader) sessionSearches() {
	const detail = "Search %q varies request_rate (open loop), and shape %q sends sessions, which run closed loop: each turn waits for the answer to the last, so the load generator would refuse every point. Use a search with vary = \"concurrency\" for this shape, or remove its session block."
	rate := func(name string) bool {
		se := l.cfg.Searches[name]
		return se != nil && se.Vary == "request_rate"
	}
	for _, name := range sortedKeys(l.cfg.Shapes) {
		sh := l.cfg.Shapes[name]
		if sh.Session != nil && rate(sh.Search) {
			at := sh.DeclRange
			if r, ok := sh.AttrRanges["search"]; ok {
				at = r
			}
			l.diags = append(l.diags, errorf(at, "request_rate search over sessions", detail, sh.Search, name))
		}
	}
	for _, name := range sortedKeys(l.cfg.Screens) {
		sc := l.cfg.Screens[name]
		if !rate(sc.Search) {
			continue
		}
		for _, shName := range sc.Shapes {
			if sh := l.cfg.Shapes[shName]; sh != nil && sh.Session != nil && sh.Search == "" {
				l.diags = append(l.diags, errorf(sc.DeclRange, "request_rate search over sessions",
					detail+" (The screen's search applies to every shape without one of its own.)", sc.Search, shName))
			}
		}
	}
}
