package lang

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// executorTypes lists the known executor types, sorted: the built-ins, and
// the external ones once a spec named a type that is not built in.
func (l *loader) executorTypes() []string {
	var out []string
	if l.opts.ExecutorSchemas == nil {
		out = sortedKeys(BuiltinExecutors)
	} else {
		out = sortedKeys(l.opts.ExecutorSchemas)
	}
	if l.externalTypes != nil {
		for _, t := range l.externalTypes {
			if !contains(out, t) {
				out = append(out, t)
			}
		}
		sort.Strings(out)
	}
	return out
}

// executorSchema returns the schema of type typ: a built-in's, or an
// external plugin's (asked once per type and Load). ok is false for an
// unknown type; a plugin that cannot answer is a diagnostic at rng.
func (l *loader) executorSchema(typ string, rng hcl.Range) (schema *ExecutorSchema, ok bool) {
	if l.opts.ExecutorSchemas == nil {
		_, ok := BuiltinExecutors[typ]
		return nil, ok
	}
	if s, found := l.opts.ExecutorSchemas[typ]; found {
		return &s, true
	}
	ext := l.opts.ExternalExecutors
	if ext == nil {
		return nil, false
	}
	if l.externalTypes == nil {
		l.externalTypes = append([]string{}, ext.Types()...)
		l.externalSchemas = map[string]*ExecutorSchema{}
	}
	if !contains(l.externalTypes, typ) {
		return nil, false
	}
	if s, done := l.externalSchemas[typ]; done {
		return s, true
	}
	s, err := ext.Schema(typ)
	if err != nil {
		l.diags = append(l.diags, errorf(rng, "Executor plugin did not answer",
			"The executor plugin for type %q could not be asked for its schema: %v. Check that infercrane-executor-%s runs, or remove it from PATH.", typ, err, typ))
		l.externalSchemas[typ] = nil
		return nil, true
	}
	l.externalSchemas[typ] = &s
	return &s, true
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
	tv, _ = tv.UnmarkDeep() // the type selects code; it is never secret
	tv, err := convert.Convert(tv, cty.String)
	if err != nil || tv.IsNull() || !tv.IsKnown() {
		l.diags = append(l.diags, errorf(typeAttr.Expr.Range(), "Invalid executor type", "type must be a string naming the executor (%s).", strings.Join(l.executorTypes(), ", ")))
		return cty.DynamicVal
	}
	e.Type = tv.AsString()
	schema, known := l.executorSchema(e.Type, typeAttr.Expr.Range())
	if !known {
		l.diags = append(l.diags, errorf(typeAttr.Expr.Range(), "Unknown executor type",
			"There is no executor of type %q.%s Known types: %s. External executors are found as infercrane-executor-NAME programs on PATH.",
			e.Type, didYouMean(e.Type, l.executorTypes()), strings.Join(l.executorTypes(), ", ")))
		return cty.DynamicVal
	}
	e.Capabilities = l.capabilities(e.Type, schema)
	checkable := true
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
				checkable = false
				continue
			}
			spec = s
		}
		v, diags := a.Expr.Value(ctx)
		l.diags = append(l.diags, diags...)
		if diags.HasErrors() {
			checkable = false
			continue
		}
		if !v.IsWhollyKnown() {
			checkable = false
			if len(d.traces) > 0 {
				l.unprofiled(a.Expr.Range(), "Value depends on an unprofiled trace",
					"%s depends on %s, which is not profiled yet. Executor settings must be known when the spec is loaded.", a.Name, traceList(d.traces))
			}
			continue
		}
		if spec.Type != cty.NilType && spec.Type != cty.DynamicPseudoType {
			cv, err := convert.Convert(v, spec.Type)
			if err != nil {
				l.diags = append(l.diags, errorf(a.Expr.Range(), "Incorrect attribute value type",
					"Inappropriate value for attribute %q: %s.", a.Name, err))
				checkable = false
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
					"An executor of type %q needs the argument %q.%s", e.Type, name, docHint(schema.Attributes[name].Doc)))
				checkable = false
			}
		}
	}
	if checkable {
		l.resolveExecutor(e, schema, attrsMap, d.block.DefRange)
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
		e := &Executor{Name: DefaultExecutorName, Type: "sim", Attrs: map[string]cty.Value{}}
		var schema *ExecutorSchema
		if s, ok := l.opts.ExecutorSchemas[e.Type]; ok {
			schema = &s
		}
		e.Capabilities = l.capabilities(e.Type, schema)
		l.resolveExecutor(e, schema, nil, hcl.Range{})
		l.cfg.Executors[DefaultExecutorName] = e
	}
	return DefaultExecutorName
}

// capabilities are what an executor type declares it does: its schema's,
// or, without Options.ExecutorSchemas, the BuiltinExecutors'.
func (l *loader) capabilities(typ string, schema *ExecutorSchema) Capabilities {
	if schema != nil {
		return schema.Capabilities
	}
	if l.opts.ExecutorSchemas == nil {
		return BuiltinExecutors[typ]
	}
	return Capabilities{}
}

// String renders an executor for messages.
func (e *Executor) String() string { return fmt.Sprintf("executor.%s (%s)", e.Name, e.Type) }

// resolveExecutor sets the block's Settings (its attributes with the
// schema's defaults applied) and runs the executor's own check of them,
// reporting each problem at the attribute it names (a sensitive value is
// not shown).
func (l *loader) resolveExecutor(e *Executor, schema *ExecutorSchema, attrs hcl.Attributes, block hcl.Range) {
	given := make(map[string]any, len(e.Attrs))
	for name, v := range e.Attrs {
		x, err := JSONValue(v)
		if err != nil {
			l.diags = append(l.diags, errorf(block, "Invalid executor setting", "%s cannot be written as JSON: %v.", name, err))
			return
		}
		given[name] = x
	}
	e.Settings = given
	if schema == nil {
		return
	}
	if schema.Resolve != nil {
		e.Settings = schema.Resolve(given)
	}
	if schema.Check == nil {
		return
	}
	for _, p := range schema.Check(e.Settings) {
		rng := block
		detail := p.Detail
		if a, ok := attrs[p.Attr]; ok {
			rng = a.Expr.Range()
			if e.Attrs[p.Attr].ContainsMarked() {
				detail = fmt.Sprintf("The (sensitive) value of %s is not accepted by executor type %q; check the variable that sets it.", p.Attr, e.Type)
			}
		} else if v, defaulted := e.Settings[p.Attr]; defaulted && p.Attr != "" {
			// The block leaves it out: the problem is its default against
			// what the block sets.
			dv, _ := json.Marshal(v)
			detail = fmt.Sprintf("The block leaves %s out, so it takes its default %s: %s. Set %s in the block, or change the setting it conflicts with", p.Attr, dv, strings.TrimSuffix(detail, "."), p.Attr)
		}
		summary := "Invalid executor setting"
		if p.Attr != "" {
			summary = fmt.Sprintf("Invalid value for %s", p.Attr)
		}
		l.diags = append(l.diags, errorf(rng, summary, "%s", sentence(detail)))
	}
}

// docHint turns an attribute's doc into a sentence for a message.
func docHint(doc string) string {
	if doc == "" {
		return ""
	}
	return " It is " + strings.TrimSuffix(doc, ".") + "."
}

// sentence capitalises s and ends it with a period.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return s
}

// JSONValue converts an evaluated value (marks dropped) to the JSON-like
// value executors receive: string, float64, bool, []any, map[string]any,
// or nil for null.
func JSONValue(v cty.Value) (any, error) {
	v, _ = v.UnmarkDeep()
	if v.IsNull() {
		return nil, nil
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return nil, err
	}
	var x any
	err = json.Unmarshal(b, &x)
	return x, err
}
