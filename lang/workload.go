package lang

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// Distribution is a shape's distribution of a per-request quantity: the
// percentiles of a workload profile (Percentiles set) or a lognormal
// (Median and Sigma set).
type Distribution struct {
	// Percentiles are p50, p90, p95 and p99, in that order.
	Percentiles []float64
	// Points, when the value has quantiles (a profile made with
	// --quantiles), are every quantile it gives, the percentiles among
	// them, in increasing Q: the distribution to draw from.
	Points []QuantilePoint
	Median float64
	Sigma  float64
}

// Lengths draws each request's token counts from distributions; a nil
// field keeps the shape's fixed count.
type Lengths struct {
	Input, Output *Distribution
	// set names the sides the block sets, known or still pending.
	set map[string]bool
}

// representative returns the fixed count that stands for the distribution
// of input_tokens or output_tokens (its median, 0 while pending), and
// whether the lengths block sets it.
func (ls *Lengths) representative(field string) (int, bool) {
	side := map[string]string{"input_tokens": "input", "output_tokens": "output"}[field]
	if ls == nil || !ls.set[side] {
		return 0, false
	}
	d := ls.Input
	if side == "output" {
		d = ls.Output
	}
	if d == nil {
		return 0, true
	}
	return d.Median50(), true
}

// Median50 is the distribution's median rounded half to even.
func (d *Distribution) Median50() int {
	m := d.Median
	if len(d.Percentiles) > 0 {
		m = d.Percentiles[0]
	}
	return max(1, int(math.RoundToEven(m)))
}

// splitBlocks separates the blocks of one type from the rest.
func splitBlocks(blocks hcl.Blocks, typ string) (of, rest hcl.Blocks) {
	for _, b := range blocks {
		if b.Type == typ {
			of = append(of, b)
		} else {
			rest = append(rest, b)
		}
	}
	return of, rest
}

// Prefix makes a shape's prompts share prefixes: requests fall into Groups
// groups and share SharedTokens leading tokens (or a HitRatio distribution
// of the shared fraction) with their group.
type Prefix struct {
	Groups       int
	SharedTokens int
	HitRatio     *Distribution
	// DeclRange is the block's header and AttrRanges its attributes'
	// expressions, so that later stages (the planner's check of drawn
	// prompts against shared_tokens) can point at them.
	DeclRange  hcl.Range
	AttrRanges map[string]hcl.Range
}

// Session makes a shape's requests conversations of Turns turns.
type Session struct {
	Turns int
	// DeclRange is the block's header.
	DeclRange hcl.Range
}

// percentileKeys are the profile percentiles a distribution object holds.
var percentileKeys = []string{"p50", "p90", "p95", "p99"}

// distributionKeys are the attributes a percentile distribution object may
// have: the percentiles, and the samples and quantiles a profile's
// distribution (trace.NAME.input_tokens) carries besides them.
var distributionKeys = append(append([]string{}, percentileKeys...), "samples", "quantiles")

// distributionHelp says which values a distribution attribute takes.
const distributionHelp = "Use a profile's distribution such as trace.NAME.input_tokens, an object {p50, p90, p95, p99}, lognormal(median, p95) or lognormal_fit(trace.NAME.output_tokens)."

// lognormalObject is the value lognormal() and lognormal_fit() return.
func lognormalObject(median, sigma float64) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"distribution": cty.StringVal("lognormal"),
		"median":       cty.NumberFloatVal(median), "sigma": cty.NumberFloatVal(sigma),
	})
}

// normalScore is the standard normal quantile of q.
func normalScore(q float64) float64 { return math.Sqrt2 * math.Erfinv(2*q-1) }

// LognormalFunc is lognormal(median, p95): the lognormal distribution with
// that median and 95th percentile.
var LognormalFunc = function.New(&function.Spec{
	Description: "A lognormal length distribution with the given median and p95.",
	Params: []function.Parameter{
		{Name: "median", Type: cty.Number}, {Name: "p95", Type: cty.Number},
	},
	Type: function.StaticReturnType(cty.Object(map[string]cty.Type{
		"distribution": cty.String, "median": cty.Number, "sigma": cty.Number})),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		m, _ := args[0].AsBigFloat().Float64()
		p95, _ := args[1].AsBigFloat().Float64()
		if !(m >= 1) || math.IsInf(m, 0) {
			return cty.NilVal, function.NewArgErrorf(0, "the median must be a finite token count of at least 1, got %g", m)
		}
		if !(p95 >= m) || math.IsInf(p95, 0) {
			return cty.NilVal, function.NewArgErrorf(1, "the p95 must be at least the median (%g), got %g", m, p95)
		}
		if m > MaxTokens {
			return cty.NilVal, function.NewArgErrorf(0, "the median is %g; a token count is at most %d", m, MaxTokens)
		}
		if p95 > MaxTokens {
			return cty.NilVal, function.NewArgErrorf(1, "the p95 is %g; a token count is at most %d", p95, MaxTokens)
		}
		return lognormalObject(m, math.Log(p95/m)/normalScore(0.95)), nil
	},
})

// LognormalFitFunc is lognormal_fit(percentiles): the lognormal that fits a
// profile distribution's p50, p90, p95 and p99 best (least squares on the
// logarithms against the normal scores).
var LognormalFitFunc = function.New(&function.Spec{
	Description: "The lognormal length distribution fitted to a profile's percentiles.",
	Params:      []function.Parameter{{Name: "percentiles", Type: cty.DynamicPseudoType}},
	Type: function.StaticReturnType(cty.Object(map[string]cty.Type{
		"distribution": cty.String, "median": cty.Number, "sigma": cty.Number})),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		ps, err := percentilesOf(args[0])
		if err != nil {
			return cty.NilVal, function.NewArgError(0, err)
		}
		qs := []float64{0.5, 0.9, 0.95, 0.99}
		var sz, sy, szz, szy float64
		for i, p := range ps {
			if p < 1 {
				return cty.NilVal, function.NewArgErrorf(0, "%s is %g; token counts must be at least 1", percentileKeys[i], p)
			}
			z, y := normalScore(qs[i]), math.Log(p)
			sz, sy, szz, szy = sz+z, sy+y, szz+z*z, szy+z*y
		}
		n := float64(len(ps))
		sigma := (n*szy - sz*sy) / (n*szz - sz*sz)
		mu := (sy - sigma*sz) / n
		return lognormalObject(math.Exp(mu), math.Max(sigma, 0)), nil
	},
})

// percentilesOf reads p50, p90, p95 and p99 from an object value.
func percentilesOf(v cty.Value) ([]float64, error) {
	if v.IsNull() || !v.Type().IsObjectType() {
		return nil, fmt.Errorf("want an object with p50, p90, p95 and p99, such as trace.NAME.input_tokens")
	}
	for _, k := range sortedKeys(v.Type().AttributeTypes()) {
		if !slices.Contains(distributionKeys, k) {
			return nil, fmt.Errorf("the object has %s, which a distribution does not take; it takes %s (and samples and quantiles, as a profile's distribution has them).%s",
				k, strings.Join(percentileKeys, ", "), didYouMean(k, distributionKeys))
		}
	}
	out := make([]float64, len(percentileKeys))
	for i, k := range percentileKeys {
		if !v.Type().HasAttribute(k) {
			return nil, fmt.Errorf("the object has no %s; want p50, p90, p95 and p99, such as trace.NAME.input_tokens", k)
		}
		x := v.GetAttr(k)
		if x.IsNull() || x.Type() != cty.Number {
			return nil, fmt.Errorf("%s must be a number", k)
		}
		out[i], _ = x.AsBigFloat().Float64()
		if math.IsNaN(out[i]) || math.IsInf(out[i], 0) || out[i] < 0 {
			return nil, fmt.Errorf("%s must be a finite number of 0 or more, got %g", k, out[i])
		}
	}
	if !sort.Float64sAreSorted(out) {
		return nil, fmt.Errorf("the percentiles must not decrease (p50 %g, p90 %g, p95 %g, p99 %g)", out[0], out[1], out[2], out[3])
	}
	return out, nil
}

// toDistribution converts a distribution value; fraction requires values
// in [0, 1] (a hit ratio), otherwise token counts of at least 1.
func toDistribution(v cty.Value, fraction bool) (*Distribution, error) {
	if !v.IsNull() && v.Type().IsObjectType() && v.Type().HasAttribute("distribution") {
		kind := v.GetAttr("distribution")
		if kind.Type() == cty.String && !kind.IsNull() && kind.AsString() == "lognormal" {
			if fraction {
				return nil, fmt.Errorf("a lognormal cannot describe a fraction; use percentiles such as trace.NAME.cache_hit_fraction")
			}
			m, err := lognormalParam(v, "median", 1, MaxTokens)
			if err != nil {
				return nil, err
			}
			s, err := lognormalParam(v, "sigma", 0, MaxSigma)
			if err != nil {
				return nil, err
			}
			return &Distribution{Median: m, Sigma: s}, nil
		}
	}
	ps, err := percentilesOf(v)
	if err != nil {
		return nil, err
	}
	for i, p := range ps {
		if fraction && p > 1 {
			return nil, fmt.Errorf("%s is %g; a fraction is between 0 and 1", percentileKeys[i], p)
		}
		if !fraction && p < 1 {
			return nil, fmt.Errorf("%s is %g; token counts must be at least 1", percentileKeys[i], p)
		}
		if !fraction && p > MaxTokens {
			return nil, fmt.Errorf("%s is %g; a token count is at most %d", percentileKeys[i], p, MaxTokens)
		}
	}
	d := &Distribution{Percentiles: ps}
	if v.Type().HasAttribute("quantiles") {
		pts, err := quantilesOf(v.GetAttr("quantiles"), ps, fraction)
		if err != nil {
			return nil, err
		}
		d.Points = pts
	}
	return d, nil
}

// lognormalParam reads a lognormal object's median or sigma, a number in
// [lo, hi].
func lognormalParam(v cty.Value, name string, lo, hi float64) (float64, error) {
	if !v.Type().HasAttribute(name) {
		return 0, fmt.Errorf("the lognormal object has no %s; write lognormal(median, p95) or lognormal_fit(trace.NAME.output_tokens)", name)
	}
	x := v.GetAttr(name)
	if x.IsNull() || x.Type() != cty.Number {
		return 0, fmt.Errorf("the lognormal's %s must be a number", name)
	}
	f, _ := x.AsBigFloat().Float64()
	if !(f >= lo && f <= hi) {
		return 0, fmt.Errorf("the lognormal's %s is %g; it must be between %g and %g", name, f, lo, hi)
	}
	return f, nil
}

// quantilesOf reads a distribution's quantiles ({q, v} objects in
// increasing q) and merges in its percentiles, which they must agree with
// where both give a value.
func quantilesOf(v cty.Value, ps []float64, fraction bool) ([]QuantilePoint, error) {
	if v.IsNull() || !(v.Type().IsListType() || v.Type().IsTupleType()) {
		return nil, fmt.Errorf("quantiles must be a list of {q, v} objects, as a profile made with --quantiles has them")
	}
	if n := v.LengthInt(); n > MaxQuantiles {
		return nil, fmt.Errorf("quantiles has %d points; a distribution lists at most %d", n, MaxQuantiles)
	}
	at := map[float64]float64{0.5: ps[0], 0.9: ps[1], 0.95: ps[2], 0.99: ps[3]}
	var out []QuantilePoint
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		var pt [2]float64
		for j, k := range []string{"q", "v"} {
			if e.IsNull() || !e.Type().IsObjectType() || !e.Type().HasAttribute(k) || e.GetAttr(k).IsNull() || e.GetAttr(k).Type() != cty.Number {
				return nil, fmt.Errorf("quantiles[%d] must be an object {q, v} of two numbers", len(out))
			}
			pt[j], _ = e.GetAttr(k).AsBigFloat().Float64()
		}
		q, x := pt[0], pt[1]
		switch {
		case !(q > 0 && q < 1):
			return nil, fmt.Errorf("quantiles[%d].q is %g; it must be strictly between 0 and 1", len(out), q)
		case len(out) > 0 && q <= out[len(out)-1].Q:
			return nil, fmt.Errorf("quantiles[%d].q is %g, not above the one before it; list quantiles in increasing q", len(out), q)
		case math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || len(out) > 0 && x < out[len(out)-1].V:
			return nil, fmt.Errorf("quantiles[%d].v is %g; quantile values must be finite and must not decrease", len(out), x)
		case fraction && x > 1:
			return nil, fmt.Errorf("quantiles[%d].v is %g; a fraction is between 0 and 1", len(out), x)
		case !fraction && x < 1:
			return nil, fmt.Errorf("quantiles[%d].v is %g; token counts must be at least 1", len(out), x)
		case !fraction && x > MaxTokens:
			return nil, fmt.Errorf("quantiles[%d].v is %g; a token count is at most %d", len(out), x, MaxTokens)
		}
		if p, ok := at[q]; ok {
			if p != x {
				return nil, fmt.Errorf("quantiles[%d] gives %g at q = %g, but the percentile there is %g", len(out), x, q, p)
			}
			delete(at, q)
		}
		out = append(out, QuantilePoint{Q: q, V: x})
	}
	for q, p := range at {
		out = append(out, QuantilePoint{Q: q, V: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Q < out[j].Q })
	for i := 1; i < len(out); i++ {
		if out[i].V < out[i-1].V {
			return nil, fmt.Errorf("the quantile at q = %g (%g) is below the one at q = %g (%g): quantiles and percentiles must not decrease together", out[i].Q, out[i].V, out[i-1].Q, out[i-1].V)
		}
	}
	return out, nil
}

var lengthsSpecs = []attrSpec{
	{name: "input", typ: cty.DynamicPseudoType},
	{name: "output", typ: cty.DynamicPseudoType},
}

var prefixSpecs = []attrSpec{
	{name: "groups", typ: cty.Number, whole: true, required: true, max: 1_000_000},
	{name: "shared_tokens", typ: cty.Number, whole: true, max: MaxTokens},
	{name: "hit_ratio", typ: cty.DynamicPseudoType},
}

var curveSpecs = []attrSpec{
	{name: "rates", typ: cty.List(cty.Number), required: true, max: 1_000_000},
	{name: "step_seconds", typ: cty.Number, required: true, max: MaxSeconds},
}

var sessionSpecs = []attrSpec{
	{name: "turns", typ: cty.Number, whole: true, required: true, max: 10_000},
}

// workloadBlocks are the nested blocks of a shape that shape its requests.
var workloadBlocks = []hcl.BlockHeaderSchema{{Type: "lengths"}, {Type: "prefix"}, {Type: "session"}, {Type: "arrival_curve"}}

// decodeWorkload reads a shape's lengths, prefix and session blocks into s.
// A distribution that depends on an unprofiled trace leaves s pending.
func (l *loader) decodeWorkload(d *decl, s *Shape, blocks hcl.Blocks, ctx *hcl.EvalContext) {
	seen := map[string]*hcl.Block{}
	for _, b := range blocks {
		if prev := seen[b.Type]; prev != nil {
			l.diags = append(l.diags, errorf(b.DefRange, "Duplicate "+b.Type+" block",
				"A shape has at most one %s block; one was already declared at %s.", b.Type, prev.DefRange))
			continue
		}
		seen[b.Type] = b
		switch b.Type {
		case "lengths":
			a := l.decodeNested(b, lengthsSpecs, ctx)
			s.Lengths = &Lengths{set: map[string]bool{}}
			for _, side := range []struct {
				name  string
				dst   **Distribution
				fixed string
			}{{"input", &s.Lengths.Input, "input_tokens"}, {"output", &s.Lengths.Output, "output_tokens"}} {
				if _, present := a.exprs[side.name]; !present {
					continue
				}
				s.Lengths.set[side.name] = true
				if _, both := s.AttrRanges[side.fixed]; both {
					l.diags = append(l.diags, errorf(a.rangeOf(side.name), "Two lengths for "+side.fixed,
						"%s is set at %s and lengths.%s here. Keep the fixed count or the distribution, not both.",
						side.fixed, s.AttrRanges[side.fixed], side.name))
					continue
				}
				if a.set[side.name] {
					*side.dst = l.distribution(d, s, a, side.name, "lengths."+side.name, false)
				}
			}
			if len(s.Lengths.set) == 0 {
				l.diags = append(l.diags, errorf(b.DefRange, "Empty lengths block",
					"A lengths block sets input, output or both. %s", distributionHelp))
			}
		case "prefix":
			a := l.decodeNested(b, prefixSpecs, ctx)
			p := &Prefix{Groups: int(a.int("groups")), SharedTokens: int(a.int("shared_tokens")), DeclRange: b.DefRange, AttrRanges: a.ranges()}
			l.diags = appendIf(l.diags,
				numCheck(a, "groups", positive, "greater than 0", "It is the number of distinct shared prefixes."),
				numCheck(a, "shared_tokens", positive, "greater than 0", "It is the number of leading prompt tokens (chat template included) a request shares with its group."))
			if a.set["shared_tokens"] == a.set["hit_ratio"] {
				l.diags = append(l.diags, errorf(b.DefRange, "Set shared_tokens or hit_ratio",
					"A prefix block needs exactly one of shared_tokens (a fixed shared length) and hit_ratio (a distribution of the shared fraction, such as trace.NAME.cache_hit_fraction)."))
			}
			if a.set["hit_ratio"] {
				p.HitRatio = l.distribution(d, s, a, "hit_ratio", "prefix.hit_ratio", true)
			}
			s.Prefix = p
		case "arrival_curve":
			a := l.decodeNested(b, curveSpecs, ctx)
			l.diags = appendIf(l.diags, numCheck(a, "step_seconds", atLeastMillisecond, "at least 0.001 (the load generator times in whole milliseconds)", "It is how long each rate of the curve lasts in the run."))
			// An arrival_curve block sets the declared settings
			// arrival_curve (the rates) and arrival_curve_step_seconds.
			var rates []float64
			if a.known("rates") {
				sum := 0.0
				for i, v := range a.vals["rates"].AsValueSlice() {
					f, _ := v.AsBigFloat().Float64()
					if f < 0 || math.IsInf(f, 0) {
						l.diags = append(l.diags, errorf(a.rangeOf("rates"), "Invalid value for rates",
							"rates[%d] is %g; the curve's rates are requests per second (or relative weights) of 0 or more.", i, f))
					}
					sum += f
					rates = append(rates, f)
				}
				if sum <= 0 || len(rates) > 100000 {
					l.diags = append(l.diags, errorf(a.rangeOf("rates"), "Invalid value for rates",
						"The curve needs 1 to 100,000 rates and at least one above 0 (got %d rates summing to %g), e.g. trace.NAME.arrival_curve.rates.", len(rates), sum))
				}
			}
			s.ArrivalCurve, s.ArrivalCurveStepSeconds = rates, a.float("step_seconds")
		case "session":
			a := l.decodeNested(b, sessionSpecs, ctx)
			s.Session = &Session{Turns: int(a.int("turns")), DeclRange: b.DefRange}
			if a.known("turns") && s.Session.Turns < 2 {
				l.diags = append(l.diags, errorf(a.rangeOf("turns"), "Invalid value for turns",
					"turns must be at least 2, got %d: a one-turn session is a plain request; remove the session block.", s.Session.Turns))
			}
		}
	}
	if b := seen["arrival_curve"]; b != nil && !(s.RequestRate > 0) {
		l.diags = append(l.diags, errorf(b.DefRange, "arrival_curve without request_rate",
			"An arrival curve varies an open loop's rate around its mean. Set request_rate (the mean requests per second over the curve), or remove the arrival_curve block."))
	}
	if s.Session != nil && s.RequestRate > 0 {
		l.diags = append(l.diags, errorf(seen["session"].DefRange, "session with request_rate",
			"Sessions run closed loop: each turn waits for the answer to the last. Remove request_rate (and arrival), or the session block."))
	}
	if ss := s.Session; ss != nil && ss.Turns >= 2 && s.Requests > 0 && s.Requests < ss.Turns {
		at := ss.DeclRange
		if r, ok := s.AttrRanges["requests"]; ok {
			at = r
		}
		l.diags = append(l.diags, errorf(at, "Fewer requests than turns",
			"requests (%d) is fewer than the session's turns (%d): a run sends %d measured requests in all, so its one session would end after turn %d and no conversation would reach the turns the shape asks for. Set requests to at least %d (a multiple of turns runs whole sessions), or lower turns.",
			s.Requests, ss.Turns, s.Requests, s.Requests, ss.Turns))
	}
	if s.Session != nil && s.API == "completions" {
		at := seen["session"].DefRange
		if r, ok := s.AttrRanges["api"]; ok {
			at = r
		}
		l.diags = append(l.diags, errorf(at, "session with the completions API",
			"A session's turns are chat messages (each turn sends the conversation so far as messages), which the completions API has no place for, so every run would fail. Set api = \"chat\" (the default), or remove the session block."))
	}
	if s.Prefix != nil && s.Session != nil {
		l.diags = append(l.diags, errorf(seen["session"].DefRange, "prefix and session together",
			"A shape has a prefix block or a session block, not both: a session's turns already share their history. Remove one of them."))
	}
}

// decodeNested decodes one nested block of a shape against specs.
func (l *loader) decodeNested(b *hcl.Block, specs []attrSpec, ctx *hcl.EvalContext) *attrs {
	schema := schemaFor(specs)
	content, diags := b.Body.Content(schema)
	l.diags = append(l.diags, withHints(diags, "A "+b.Type+" block", schema)...)
	a, diags := decodeAttrs(content, b.Body.MissingItemRange(), specs, ctx)
	l.diags = append(l.diags, diags...)
	return a
}

// distribution converts attribute name of a to a distribution, noting a
// pending trace value on s or reporting an invalid one at its expression.
func (l *loader) distribution(d *decl, s *Shape, a *attrs, name, path string, fraction bool) *Distribution {
	v := a.vals[name]
	if !v.IsWhollyKnown() {
		for _, t := range sortedKeys(d.traces) {
			s.Pending = append(s.Pending, fmt.Sprintf(
				"%s: trace.%s is not profiled yet; run `infercrane profile trace` or set profile+digest", path, t))
		}
		return nil
	}
	dist, err := toDistribution(v, fraction)
	if err != nil {
		l.diags = append(l.diags, errorf(a.rangeOf(name), "Invalid distribution for "+path,
			"%s: %v. %s", path, err, distributionHelp))
		return nil
	}
	return dist
}

// prefixFits checks a fixed shared prefix against a fixed prompt length: a
// request shares at most its prompt less the last token (the engine always
// computes that one to sample the first output token; load.ServableTokens),
// so a shared_tokens of input_tokens or more would be cut to
// input_tokens - 1 on every request and every request of a group would be
// the same prompt. Drawn prompt lengths (lengths.input) are the planner's
// to check: it counts the draws shorter than the prefix.
func (l *loader) prefixFits(s *Shape) {
	p := s.Prefix
	if p == nil || p.SharedTokens < 1 || s.InputTokens < 1 {
		return
	}
	if _, fixed := s.AttrRanges["input_tokens"]; !fixed || p.SharedTokens < s.InputTokens {
		return
	}
	at, ok := p.AttrRanges["shared_tokens"]
	if !ok {
		at = p.DeclRange
	}
	l.diags = append(l.diags, errorf(at, "shared_tokens is not below the prompt's length",
		"shared_tokens (%d) must be below input_tokens (%d): a request shares at most its prompt less its last token, which the engine always computes, so every prompt would be cut to %d shared tokens and the requests of a group would all be the same prompt. Set shared_tokens to at most %d (less leaves each request a part of its own), or raise input_tokens.",
		p.SharedTokens, s.InputTokens, s.InputTokens-1, s.InputTokens-1))
}
