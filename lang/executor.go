package lang

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// executorTypes lists the known executor types, sorted.
func (l *loader) executorTypes() []string {
	if l.opts.ExecutorSchemas == nil {
		return BuiltinExecutorTypes
	}
	return sortedKeys(l.opts.ExecutorSchemas)
}

func (l *loader) decodeExecutor(d *decl, in instance, body hcl.Body, ctx *hcl.EvalContext) cty.Value {
	e := &Executor{Name: in.name, Attrs: map[string]cty.Value{}, DeclRange: d.block.DefRange}
	l.cfg.Executors[in.name] = e
	attrsMap, diags := body.JustAttributes()
	l.diags = append(l.diags, diags...)
	typeAttr, ok := attrsMap["type"]
	if !ok {
		l.diags = append(l.diags, errorf(body.MissingItemRange(), "Missing required argument",
			"The argument \"type\" is required: it selects the executor (%s).", strings.Join(l.executorTypes(), ", ")))
		return cty.DynamicVal
	}
	tv, diags := typeAttr.Expr.Value(ctx)
	l.diags = append(l.diags, diags...)
	if diags.HasErrors() {
		return cty.DynamicVal
	}
	tv, err := convert.Convert(tv, cty.String)
	if err != nil || tv.IsNull() || !tv.IsKnown() {
		l.diags = append(l.diags, errorf(typeAttr.Expr.Range(), "Invalid executor type", "type must be a string naming the executor (%s).", strings.Join(l.executorTypes(), ", ")))
		return cty.DynamicVal
	}
	e.Type = tv.AsString()
	if !contains(l.executorTypes(), e.Type) {
		l.diags = append(l.diags, errorf(typeAttr.Expr.Range(), "Unknown executor type",
			"There is no executor of type %q.%s Known types: %s. External executors are found as infercrane-executor-NAME programs on PATH.",
			e.Type, didYouMean(e.Type, l.executorTypes()), strings.Join(l.executorTypes(), ", ")))
		return cty.DynamicVal
	}
	var schema *ExecutorSchema
	if s, ok := l.opts.ExecutorSchemas[e.Type]; ok {
		schema = &s
	}
	for _, a := range sortedAttrs(attrsMap) {
		if a.Name == "type" {
			continue
		}
		var spec AttributeSpec
		if schema != nil {
			s, ok := schema.Attributes[a.Name]
			if !ok {
				l.diags = append(l.diags, errorf(a.NameRange, "Unsupported argument",
					"An executor of type %q has no argument named %q.%s", e.Type, a.Name, didYouMean(a.Name, sortedKeys(schema.Attributes))))
				continue
			}
			spec = s
		}
		v, diags := a.Expr.Value(ctx)
		l.diags = append(l.diags, diags...)
		if diags.HasErrors() {
			continue
		}
		if !v.IsWhollyKnown() {
			if len(d.traces) > 0 {
				l.diags = append(l.diags, errorf(a.Expr.Range(), "Value depends on an unprofiled trace",
					"%s depends on %s, which is not profiled yet. Executor settings must be known when the spec is loaded.", a.Name, traceList(d.traces)))
			}
			continue
		}
		if spec.Type != cty.NilType && spec.Type != cty.DynamicPseudoType {
			cv, err := convert.Convert(v, spec.Type)
			if err != nil {
				l.diags = append(l.diags, errorf(a.Expr.Range(), "Incorrect attribute value type",
					"Inappropriate value for attribute %q: %s.", a.Name, err))
				continue
			}
			v = cv
		}
		e.Attrs[a.Name] = v
	}
	if schema != nil {
		for _, name := range sortedKeys(schema.Attributes) {
			if _, set := attrsMap[name]; schema.Attributes[name].Required && !set {
				l.diags = append(l.diags, errorf(body.MissingItemRange(), "Missing required argument",
					"An executor of type %q needs the argument %q.", e.Type, name))
			}
		}
	}
	obj := map[string]cty.Value{"name": cty.StringVal(in.name), "type": tv}
	for k, v := range e.Attrs {
		obj[k] = v
	}
	return cty.ObjectVal(obj)
}

// defaultExecutor returns the executor a screen without one uses, adding
// the built-in sim executor to the Config when the spec declares none of
// that name.
func (l *loader) defaultExecutor() string {
	if _, ok := l.cfg.Executors[DefaultExecutorName]; !ok {
		l.cfg.Executors[DefaultExecutorName] = &Executor{Name: DefaultExecutorName, Type: "sim", Attrs: map[string]cty.Value{}}
	}
	return DefaultExecutorName
}

// String renders an executor for messages.
func (e *Executor) String() string { return fmt.Sprintf("executor.%s (%s)", e.Name, e.Type) }
