package plugins

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/lang"
)

// SpecSchemas are the built-in executors' schemas in the spec language's
// form, each with its Validate, so that lang.Load checks executor blocks
// (types, bounds, enumerations, cross-attribute rules) at validate time.
func (r *Registry) SpecSchemas() map[string]lang.ExecutorSchema {
	out := make(map[string]lang.ExecutorSchema, len(r.Builtins))
	for _, b := range r.Builtins {
		out[b.Name] = SpecSchema(b.Name, b.Schema(), b.Validate)
	}
	return out
}

// SpecExternal finds external executor plugins for the spec language
// (lang.Options.ExternalExecutors). Nothing is started until a spec names
// a type that is not built in; then only that plugin is started, once, to
// ask for its schema.
func (r *Registry) SpecExternal() lang.ExternalExecutors { return &specExternal{r: r} }

type specExternal struct {
	r     *Registry
	found map[string]string
	// schemas are the schemas asked for so far: a spec loaded twice (the
	// planner's trace step) starts each plugin once.
	schemas map[string]lang.ExecutorSchema
}

func (x *specExternal) discover() map[string]string {
	if x.found == nil {
		x.found = x.r.Discover()
	}
	return x.found
}

// Types lists the external plugins found (a directory scan; none started).
func (x *specExternal) Types() []string { return sortedNames(x.discover()) }

// Schema starts the plugin for typ and asks for its schema.
func (x *specExternal) Schema(typ string) (lang.ExecutorSchema, error) {
	if s, ok := x.schemas[typ]; ok {
		return s, nil
	}
	path, ok := x.discover()[typ]
	if !ok {
		return lang.ExecutorSchema{}, fmt.Errorf("no %s%s binary is in $INFERCRANE_PLUGIN_DIR or $PATH", ExternalPrefix, typ)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := x.r.ExternalSchema(ctx, typ, path)
	if err != nil {
		return lang.ExecutorSchema{}, err
	}
	if x.schemas == nil {
		x.schemas = map[string]lang.ExecutorSchema{}
	}
	x.schemas[typ] = SpecSchema(typ, s, nil)
	return x.schemas[typ], nil
}

// SpecSchema converts an executor schema to the spec language's form. Its
// Check applies the schema's types, bounds and enumerations to the
// evaluated attributes, then validate (when given).
func SpecSchema(typ string, s executor.Schema, validate func(map[string]any) error) lang.ExecutorSchema {
	out := lang.ExecutorSchema{Attributes: map[string]lang.AttributeSpec{}, Capabilities: s.Capabilities}
	for _, a := range s.Attributes {
		var t cty.Type
		switch a.Type {
		case executor.AttrString, executor.AttrDuration:
			t = cty.String
		case executor.AttrNumber:
			t = cty.Number
		case executor.AttrBool:
			t = cty.Bool
		case executor.AttrStringList:
			t = cty.List(cty.String)
		case executor.AttrStringMap:
			t = cty.Map(cty.String)
		default:
			t = cty.DynamicPseudoType
		}
		out.Attributes[a.Name] = lang.AttributeSpec{Type: t, Required: a.Required, Doc: a.Doc}
	}
	out.Resolve = func(attrs map[string]any) map[string]any { return s.Resolve(attrs) }
	out.Check = func(settings map[string]any) []lang.AttrProblem {
		if err := executor.Attrs(settings).Check(typ, s); err != nil {
			return []lang.AttrProblem{problem(err)}
		}
		if validate != nil {
			if err := validate(settings); err != nil {
				return []lang.AttrProblem{problem(err)}
			}
		}
		return nil
	}
	return out
}

// problem turns a check error into a lang problem, at its attribute when
// it names one.
func problem(err error) lang.AttrProblem {
	var ae *executor.AttrError
	if errors.As(err, &ae) {
		return lang.AttrProblem{Attr: ae.Name, Detail: ae.Err.Error()}
	}
	return lang.AttrProblem{Detail: err.Error()}
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
