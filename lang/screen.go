package lang

import (
	"fmt"
	"math"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

var screenSpecs = []attrSpec{
	{name: "models", raw: true},
	{name: "shapes", raw: true},
	{name: "gpus", raw: true},
	{name: "runtime", raw: true},
	{name: "runtimes", raw: true},
	{name: "executor", raw: true},
	{name: "baseline", raw: true},
	{name: "gates", raw: true},
	{name: "runs", typ: cty.Number, whole: true, def: cty.NumberIntVal(DefaultRuns), max: MaxRuns},
	{name: "seed", typ: cty.Number, whole: true, def: cty.NumberIntVal(0), max: math.MaxInt64},
	{name: "selection_boundary", typ: cty.String},
	{name: "search", raw: true},
}

// DefaultRuns is the number of runs per lane when a screen does not say.
const DefaultRuns = 3

// namedVal is one evaluated block instance.
type namedVal struct {
	name string
	val  cty.Value
}

func (l *loader) decodeScreen(d *decl, in instance, body hcl.Body, ctx *hcl.EvalContext) cty.Value {
	a, _ := l.decodeBody(d, body, ctx, screenSpecs)
	s := &Screen{
		Name: in.name, Runs: int(a.int("runs")), Seed: a.int("seed"),
		SelectionBoundary: a.str("selection_boundary"), DeclRange: d.block.DefRange,
	}
	l.diags = appendIf(l.diags, numCheck(a, "runs", positive, "greater than 0",
		fmt.Sprintf("It is the number of repeated runs per lane (default %d; 5 or more is decision grade).", DefaultRuns)))
	for _, req := range []struct{ attr, kind string }{{"models", "model"}, {"shapes", "shape"}, {"gpus", "gpu"}} {
		if _, ok := a.exprs[req.attr]; !ok {
			l.diags = append(l.diags, errorf(a.body, "Missing "+req.attr,
				"A screen needs %s = [%s.NAME, ...]: the screen runs every combination of its models, shapes and gpus.", req.attr, req.kind))
		}
	}
	s.Models = l.refList(d, a, "models", "model", ctx, true)
	s.Shapes = l.refList(d, a, "shapes", "shape", ctx, true)
	s.GPUs = l.refList(d, a, "gpus", "gpu", ctx, true)
	s.Gates = l.refList(d, a, "gates", "gate", ctx, false)
	s.Runtime = l.refOne(d, a, "runtime", "runtime", ctx)
	s.Runtimes = l.refList(d, a, "runtimes", "runtime", ctx, true)
	if _, both := a.exprs["runtime"]; both && a.exprs["runtimes"] != nil {
		l.diags = append(l.diags, errorf(a.rangeOf("runtimes"), "Both runtime and runtimes",
			"A screen names one runtime (runtime = runtime.NAME) or several to compare as lanes (runtimes = [runtime.A, runtime.B]), not both; move runtime.%s into runtimes.", s.Runtime))
		s.Runtimes = nil
	}
	s.Executor = l.refOne(d, a, "executor", "executor", ctx)
	if _, set := a.exprs["executor"]; !set {
		s.Executor = l.defaultExecutor()
	}
	s.Search = l.refOne(d, a, "search", "search", ctx)
	s.Baseline = l.refOne(d, a, "baseline", "model", ctx)
	if s.Baseline != "" && !contains(s.Models, s.Baseline) && len(s.Models) > 0 {
		l.diags = append(l.diags, errorf(a.rangeOf("baseline"), "Baseline is not screened",
			"The baseline model.%s is not one of this screen's models, so there is nothing to compare against. Add it to models or pick one of them.", s.Baseline))
	}
	if lanes := len(s.Models) * len(s.Shapes) * len(s.GPUs) * max(len(s.Runtimes), 1); lanes*max(s.Runs, 1) > l.planRuns {
		l.diags = append(l.diags, errorf(a.rangeOf("runs"), "Too many runs",
			"Screen %q has %d lanes of %d runs, which with the screens before it is more than the %d runs one spec may plan (docs/language/bounds.md). Split the spec, or screen fewer combinations or runs.",
			in.name, lanes, s.Runs, MaxPlanRuns))
	} else {
		l.planRuns -= lanes * max(s.Runs, 1)
	}
	l.cfg.Screens[in.name] = s
	return cty.ObjectVal(map[string]cty.Value{
		"name": cty.StringVal(in.name), "runs": a.vals["runs"], "seed": a.vals["seed"],
	})
}

// refList resolves a list of block references, reporting each bad element
// at its own range.
func (l *loader) refList(d *decl, a *attrs, attr, kind string, ctx *hcl.EvalContext, nonEmpty bool) []string {
	expr, ok := a.exprs[attr]
	if !ok {
		return nil
	}
	var names []string
	seen := map[string]hcl.Range{}
	add := func(name string, rng hcl.Range) {
		if prev, dup := seen[name]; dup {
			l.diags = append(l.diags, errorf(rng, fmt.Sprintf("Duplicate %s in %s", kind, attr),
				"%s.%s is already listed at %s; list each %s once.", kind, name, prev, kind))
			return
		}
		seen[name] = rng
		names = append(names, name)
	}
	failed := false
	if elems, diags := hcl.ExprList(expr); !diags.HasErrors() {
		for _, e := range elems {
			v, diags := e.Value(ctx)
			l.diags = append(l.diags, diags...)
			if diags.HasErrors() {
				failed = true
				continue
			}
			for _, n := range l.identify(d, v, kind, attr, e.Range(), &failed) {
				add(n, e.Range())
			}
		}
	} else {
		v, diags := expr.Value(ctx)
		l.diags = append(l.diags, diags...)
		if diags.HasErrors() {
			return nil
		}
		v, _ = v.UnmarkDeep()
		switch {
		case !v.IsKnown() || v.IsNull():
			l.identify(d, v, kind, attr, expr.Range(), &failed)
		case v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType():
			for it := v.ElementIterator(); it.Next(); {
				_, ev := it.Element()
				for _, n := range l.identify(d, ev, kind, attr, expr.Range(), &failed) {
					add(n, expr.Range())
				}
			}
		default:
			for _, n := range l.identify(d, v, kind, attr, expr.Range(), &failed) {
				add(n, expr.Range())
			}
		}
	}
	if nonEmpty && len(names) == 0 && !failed {
		l.diags = append(l.diags, errorf(expr.Range(), "Empty "+attr,
			"%s must list at least one %s, like [%s.NAME].", attr, kind, kind))
	}
	return names
}

// refOne resolves a single block reference.
func (l *loader) refOne(d *decl, a *attrs, attr, kind string, ctx *hcl.EvalContext) string {
	expr, ok := a.exprs[attr]
	if !ok {
		return ""
	}
	v, diags := expr.Value(ctx)
	l.diags = append(l.diags, diags...)
	if diags.HasErrors() {
		return ""
	}
	failed := false
	names := l.identify(d, v, kind, attr, expr.Range(), &failed)
	if len(names) > 1 {
		hint := ""
		if attr == "runtime" {
			hint = " To compare runtimes as lanes, list them in runtimes = [...] instead."
		}
		l.diags = append(l.diags, errorf(expr.Range(), "Invalid "+attr,
			"%s must be one %s, like %s.NAME; this names %d of them.%s", attr, kind, kind, len(names), hint))
		return ""
	}
	if len(names) == 1 {
		return names[0]
	}
	return ""
}

// identify maps a value to the names of the block instances of kind it
// is: one instance, or every instance of a for_each block.
func (l *loader) identify(d *decl, v cty.Value, kind, attr string, rng hcl.Range, failed *bool) []string {
	v, _ = v.UnmarkDeep()
	if !v.IsKnown() {
		*failed = true
		if len(d.traces) > 0 {
			l.unprofiled(rng, "Value depends on an unprofiled trace",
				"%s depends on %s, which is not profiled yet; block references must be known when the spec is loaded.", attr, traceList(d.traces))
		}
		return nil
	}
	if !v.IsNull() {
		if n, ok := l.instanceOf(kind, v); ok {
			return []string{n}
		}
		// A for_each block as a whole: every instance, in key order.
		if v.Type().IsObjectType() || v.Type().IsMapType() {
			var names []string
			for it := v.ElementIterator(); it.Next(); {
				_, ev := it.Element()
				n, ok := l.instanceOf(kind, ev)
				if !ok {
					names = nil
					break
				}
				names = append(names, n)
			}
			if len(names) > 0 {
				return names
			}
		}
	}
	*failed = true
	what := describe(v)
	for _, other := range blockKinds {
		if n, ok := l.instanceOf(other, v); ok {
			what = fmt.Sprintf("%s.%s", other, n)
		}
	}
	l.diags = append(l.diags, errorf(rng, fmt.Sprintf("Invalid %s reference", kindWord(kind)),
		"%s expects %s references like %s.NAME, but this is %s.", attr, kind, kind, what))
	return nil
}

// instanceOf finds the block instance of kind whose value is v.
func (l *loader) instanceOf(kind string, v cty.Value) (string, bool) {
	v, _ = v.UnmarkDeep() // a block holding a sensitive value is still that block
	if !v.Type().IsObjectType() || !v.Type().HasAttribute("name") {
		return "", false
	}
	nv := v.GetAttr("name")
	if !nv.IsKnown() || nv.IsNull() || nv.Type() != cty.String {
		return "", false
	}
	name := nv.AsString()
	for _, nvl := range l.instVals[kind] {
		if nvl.name != name {
			continue // compare names first: unmarking every block is quadratic in a screen's list
		}
		if uv, _ := nvl.val.UnmarkDeep(); uv.RawEquals(v) {
			return name, true
		}
	}
	return "", false
}
