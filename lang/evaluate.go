package lang

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// instance is one evaluation of a block: the block itself, or one element
// of its for_each.
type instance struct {
	// name is the block's name, or NAME["KEY"] for a for_each element.
	name string
	key  string
	each cty.Value // cty.NilVal without for_each
}

// evaluate checks references, orders the declarations and decodes each one.
func (l *loader) evaluate() {
	for _, d := range l.declOrder {
		if d.kind != "var" {
			l.collectRefs(d)
		}
	}
	for _, d := range l.order() {
		d.traces = map[string]bool{}
		for _, dep := range d.deps {
			if x := l.decls[dep]; x != nil {
				for t := range x.traces {
					d.traces[t] = true
				}
			}
		}
		if d.inCycle {
			l.setValue(d.kind, d.name, cty.DynamicVal)
			continue
		}
		l.checkInstanceKeys(d)
		l.evalDecl(d)
	}
}

// evalDecl evaluates one declaration and records its value.
func (l *loader) evalDecl(d *decl) {
	before := len(l.diags)
	if d.kind == "local" {
		v, diags := d.attr.Expr.Value(l.evalContext(d, cty.NilVal))
		if !d.failed {
			l.diags = append(l.diags, diags...)
		}
		if diags.HasErrors() {
			v = cty.DynamicVal
		}
		l.setValue("local", d.name, v)
		l.cfg.Locals[d.name] = v
		return
	}
	if d.kind == "trace" {
		l.decodeTrace(d)
		return
	}
	insts, body := l.instances(d)
	if insts == nil {
		l.setValue(d.kind, d.name, cty.DynamicVal)
		return
	}
	values := map[string]cty.Value{}
	for _, in := range insts {
		v := l.decodeInstance(d, in, body)
		l.instVals[d.kind] = append(l.instVals[d.kind], namedVal{in.name, v})
		if in.each == cty.NilVal {
			l.setValue(d.kind, d.name, v)
			break
		}
		values[in.key] = v
	}
	if insts[0].each != cty.NilVal {
		l.setValue(d.kind, d.name, cty.ObjectVal(values))
		d.hasForEachInstances = true
	}
	if d.failed {
		// The declaration's references were reported already; evaluation
		// errors about the same references would only repeat them.
		l.diags = append(l.diags[:before:before], onlyStructural(l.diags[before:])...)
	}
}

// onlyStructural keeps diagnostics that do not come from evaluation.
func onlyStructural(diags hcl.Diagnostics) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Expression == nil {
			out = append(out, d)
		}
	}
	return out
}

func hasErrors(diags hcl.Diagnostics) bool { return diags.HasErrors() }

// sortDiags orders diagnostics by file and position (those without a
// location first), keeping the order of diagnostics at the same place.
func sortDiags(diags hcl.Diagnostics) {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
}

// instances expands a block's for_each. It returns nil when for_each is
// invalid (after reporting why) and the body without for_each.
func (l *loader) instances(d *decl) ([]instance, hcl.Body) {
	if !forEachKinds[d.kind] {
		return []instance{{name: d.name}}, d.block.Body
	}
	content, rest, diags := d.block.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "for_each"}}})
	l.diags = append(l.diags, diags...)
	attr, ok := content.Attributes["for_each"]
	if !ok {
		return []instance{{name: d.name}}, rest
	}
	v, diags := attr.Expr.Value(l.evalContext(d, cty.NilVal))
	if !d.failed {
		l.diags = append(l.diags, diags...)
	}
	if diags.HasErrors() {
		return nil, rest
	}
	v, _ = v.UnmarkDeep()
	rng := attr.Expr.Range()
	if !v.IsWhollyKnown() {
		if len(d.traces) > 0 {
			l.unprofiled(rng, "Invalid for_each",
				"for_each must be known when the spec is loaded, but it depends on %s, which is not profiled yet.", traceList(d.traces))
		}
		return nil, rest
	}
	if v.IsNull() {
		l.diags = append(l.diags, errorf(rng, "Invalid for_each", "for_each must not be null; give it a map or a set of strings."))
		return nil, rest
	}
	var insts []instance
	ty := v.Type()
	switch {
	case ty.IsMapType() || ty.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			insts = append(insts, l.newInstance(d.name, k.AsString(), ev))
		}
	case ty.IsSetType() || ty.IsListType() || ty.IsTupleType():
		set, err := convert.Convert(v, cty.Set(cty.String))
		if err != nil {
			l.diags = append(l.diags, errorf(rng, "Invalid for_each",
				"for_each must be a map, or a set or list of strings: %s.", err))
			return nil, rest
		}
		for it := set.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			if ev.IsNull() {
				l.diags = append(l.diags, errorf(rng, "Invalid for_each", "for_each must not contain null."))
				return nil, rest
			}
			insts = append(insts, l.newInstance(d.name, ev.AsString(), ev))
		}
	default:
		l.diags = append(l.diags, errorf(rng, "Invalid for_each",
			"for_each must be a map, or a set or list of strings; got %s.", ty.FriendlyName()))
		return nil, rest
	}
	if len(insts) == 0 {
		l.diags = append(l.diags, warnf(rng, "Empty for_each",
			"for_each is empty, so %s declares nothing.", d.addr()))
		return nil, rest
	}
	sort.Slice(insts, func(i, j int) bool { return insts[i].key < insts[j].key })
	return insts, rest
}

func (l *loader) newInstance(name, key string, v cty.Value) instance {
	return instance{
		name: InstanceName(name, key),
		key:  key,
		each: cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(key), "value": v}),
	}
}

// InstanceName is the name of a for_each element of a block: NAME["KEY"],
// the same text a reference to it uses (model.qwen["0.6b"]).
func InstanceName(name, key string) string {
	return fmt.Sprintf("%s[%q]", name, key)
}

// traceList renders trace names as "trace.a and trace.b".
func traceList(traces map[string]bool) string {
	names := sortedKeys(traces)
	for i, n := range names {
		names[i] = "trace." + n
	}
	if len(names) == 1 {
		return names[0]
	}
	return fmt.Sprintf("%s and %s", joinComma(names[:len(names)-1]), names[len(names)-1])
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// decodeInstance decodes one instance of a block and returns the value
// other blocks see when they refer to it.
func (l *loader) decodeInstance(d *decl, in instance, body hcl.Body) cty.Value {
	ctx := l.evalContext(d, in.each)
	switch d.kind {
	case "model":
		return l.decodeModel(d, in, body, ctx)
	case "gpu":
		return l.decodeGPU(d, in, body, ctx)
	case "runtime":
		return l.decodeRuntime(d, in, body, ctx)
	case "executor":
		return l.decodeExecutor(d, in, body, ctx)
	case "search":
		return l.decodeSearch(d, in, body, ctx)
	case "shape":
		return l.decodeShape(d, in, body, ctx)
	case "gate":
		return l.decodeGate(d, in, body, ctx)
	case "screen":
		return l.decodeScreen(d, in, body, ctx)
	}
	return cty.DynamicVal
}
