package lang

import (
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// SearchVaries are the loads a search block can vary.
var SearchVaries = []string{"request_rate", "concurrency"}

// Search defaults (see the README's "Capacity at SLO").
const (
	DefaultSearchGoodput   = 0.95
	DefaultSearchTolerance = 0.05
	DefaultSearchMaxPoints = 8
	DefaultSearchRequests  = 200
	// MinSearchRequests is the fewest measured requests a point may have
	// for its p95 to be more than the slowest request or two.
	MinSearchRequests = 20
)

// Search asks for a lane's capacity at SLO: the largest load (request rate
// or concurrency) whose p95 latencies and goodput meet the objectives,
// found adaptively by apply. A screen or a shape refers to it with
// search = search.NAME.
type Search struct {
	Name string
	// Vary is "request_rate" (open loop, Poisson arrivals) or "concurrency"
	// (closed loop).
	Vary     string
	Min, Max float64 // the range searched
	SLO      SearchSLO
	// Goodput is the fraction of a point's requests that must meet every
	// objective individually (0: not checked).
	Goodput float64
	// Tolerance is the relative bracket width hi/lo - 1 at which the
	// search stops.
	Tolerance float64
	MaxPoints int
	// Requests is the fewest measured requests per point; Duration
	// (request_rate only) raises a point's count to rate x duration.
	Requests  int
	Duration  time.Duration
	DeclRange hcl.Range
	// AttrRanges maps each attribute set in the block to its expression's
	// range, so that later stages can point diagnostics at it.
	AttrRanges map[string]hcl.Range
}

// SearchSLO are a search's p95 objectives; zero fields are unset.
type SearchSLO struct {
	TTFTP95Ms    float64
	TPOTP95Ms    float64
	LatencyP95Ms float64
}

var searchSpecs = []attrSpec{
	{name: "vary", typ: cty.String, required: true},
	{name: "range", typ: cty.List(cty.Number), required: true, max: 1_000_000},
	{name: "goodput", typ: cty.Number, def: cty.NumberFloatVal(DefaultSearchGoodput), max: 1},
	{name: "tolerance", typ: cty.Number, def: cty.NumberFloatVal(DefaultSearchTolerance), max: 1},
	{name: "max_points", typ: cty.Number, whole: true, def: cty.NumberIntVal(DefaultSearchMaxPoints), max: MaxRuns},
	{name: "requests", typ: cty.Number, whole: true, def: cty.NumberIntVal(DefaultSearchRequests), max: MaxRequests},
	{name: "duration", typ: cty.String},
}

var searchSLOSpecs = []attrSpec{
	{name: "ttft_p95_ms", typ: cty.Number, max: MaxMilliseconds},
	{name: "tpot_p95_ms", typ: cty.Number, max: MaxMilliseconds},
	{name: "latency_p95_ms", typ: cty.Number, max: MaxMilliseconds},
}

func (l *loader) decodeSearch(d *decl, in instance, body hcl.Body, ctx *hcl.EvalContext) cty.Value {
	a, content := l.decodeBody(d, body, ctx, searchSpecs, hcl.BlockHeaderSchema{Type: "slo"})
	s := &Search{
		Name: in.name, Vary: a.str("vary"), Goodput: a.float("goodput"), Tolerance: a.float("tolerance"),
		MaxPoints: int(a.int("max_points")), Requests: int(a.int("requests")),
		DeclRange: d.block.DefRange, AttrRanges: a.ranges(),
	}
	l.diags = appendIf(l.diags,
		oneOf(a, "vary", SearchVaries),
		numCheck(a, "goodput", func(f float64) bool { return f >= 0 && f <= 1 }, "in [0, 1]",
			"It is the fraction of a point's requests that must meet every objective (0: not checked)."),
		numCheck(a, "tolerance", func(f float64) bool { return f > 0 && f < 1 }, "in (0, 1)",
			"It is the relative width of the final bracket, e.g. 0.05 for 5%."),
		numCheck(a, "max_points", func(f float64) bool { return f >= 2 }, "at least 2",
			"A search needs a passing and a failing point to bracket the capacity."),
		numCheck(a, "requests", func(f float64) bool { return f >= MinSearchRequests }, fmt.Sprintf("at least %d", MinSearchRequests),
			"With fewer measured requests a point's p95 is just its slowest request or two; 100 or more is sound."),
	)
	l.searchRange(a, s)
	if a.known("duration") {
		dur, err := time.ParseDuration(a.str("duration"))
		switch {
		case err != nil:
			l.diags = append(l.diags, errorf(a.rangeOf("duration"), "Invalid value for duration",
				`duration must be a duration such as "30s" or "2m", got %q.`, a.str("duration")))
		case dur <= 0:
			l.diags = append(l.diags, errorf(a.rangeOf("duration"), "Invalid value for duration",
				"duration must be positive, got %s.", dur))
		case s.Vary == "concurrency":
			l.diags = append(l.diags, errorf(a.rangeOf("duration"), "duration with a concurrency search",
				"duration sizes a request_rate point (rate x duration requests, at least requests). A concurrency point is sized by requests alone: remove duration and set requests."))
		default:
			s.Duration = dur
		}
	}
	slo := cty.NullVal(cty.DynamicPseudoType)
	if len(content.Blocks) == 0 {
		l.diags = append(l.diags, errorf(a.body, "Missing slo block",
			"A search needs an slo block with at least one of ttft_p95_ms, tpot_p95_ms and latency_p95_ms: capacity is the largest load that meets them."))
	}
	for i, b := range content.Blocks {
		if i > 0 {
			l.diags = append(l.diags, errorf(b.DefRange, "Duplicate slo block",
				"A search has one slo block; one was already declared at %s.", content.Blocks[0].DefRange))
			continue
		}
		sc, cdiags := b.Body.Content(schemaFor(searchSLOSpecs))
		l.diags = append(l.diags, withHints(cdiags, "A search's slo block", schemaFor(searchSLOSpecs))...)
		sa, diags := decodeAttrs(sc, b.Body.MissingItemRange(), searchSLOSpecs, ctx)
		l.diags = append(l.diags, diags...)
		diags = append(diags, cdiags...)
		l.requireKnown(d, sa)
		for _, n := range []string{"ttft_p95_ms", "tpot_p95_ms", "latency_p95_ms"} {
			l.diags = appendIf(l.diags, numCheck(sa, n, positive, "greater than 0", "Leave it out for no objective."))
		}
		s.SLO = SearchSLO{TTFTP95Ms: sa.float("ttft_p95_ms"), TPOTP95Ms: sa.float("tpot_p95_ms"), LatencyP95Ms: sa.float("latency_p95_ms")}
		if !sa.set["ttft_p95_ms"] && !sa.set["tpot_p95_ms"] && !sa.set["latency_p95_ms"] && !diags.HasErrors() {
			l.diags = append(l.diags, errorf(b.DefRange, "Empty slo block",
				"Set at least one of ttft_p95_ms, tpot_p95_ms and latency_p95_ms, e.g. ttft_p95_ms = 2000."))
		}
		slo = sa.object(nil)
	}
	l.cfg.Searches[in.name] = s
	return a.object(map[string]cty.Value{"name": cty.StringVal(in.name), "slo": slo})
}

// searchRange reads range = [min, max] with 0 < min < max, whole numbers
// for concurrency.
func (l *loader) searchRange(a *attrs, s *Search) {
	if !a.known("range") {
		return
	}
	rng := a.rangeOf("range")
	var vals []float64
	for it := a.vals["range"].ElementIterator(); it.Next(); {
		_, v := it.Element()
		if !v.IsKnown() || v.IsNull() {
			l.diags = append(l.diags, errorf(rng, "Invalid value for range", "range must be two numbers, [min, max]."))
			return
		}
		f, _ := v.AsBigFloat().Float64()
		vals = append(vals, f)
	}
	switch {
	case len(vals) != 2:
		l.diags = append(l.diags, errorf(rng, "Invalid value for range",
			"range must be two numbers, [min, max], the loads the search may try; it has %d.", len(vals)))
	case vals[0] <= 0 || vals[1] <= vals[0] || math.IsInf(vals[1], 0):
		l.diags = append(l.diags, errorf(rng, "Invalid value for range",
			"range must be [min, max] with 0 < min < max, got [%g, %g].", vals[0], vals[1]))
	case s.Vary == "concurrency" && (vals[0] != math.Trunc(vals[0]) || vals[1] != math.Trunc(vals[1])):
		l.diags = append(l.diags, errorf(rng, "Invalid value for range",
			"A concurrency search varies whole numbers of streams; range must be whole numbers, got [%g, %g].", vals[0], vals[1]))
	default:
		s.Min, s.Max = vals[0], vals[1]
	}
}
