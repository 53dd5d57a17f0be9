package report

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/infercrane/infercrane/lang"
)

// GatesFromConfig converts the gate blocks of a loaded spec.
func GatesFromConfig(cfg *lang.Config) map[string]*GateSpec {
	out := map[string]*GateSpec{}
	if cfg == nil {
		return out
	}
	for name, g := range cfg.Gates {
		if g == nil {
			continue
		}
		gs := &GateSpec{Name: name, Condition: g.Condition, ErrorMessage: g.ErrorMessage, MinRuns: g.MinRuns, MaxCV: g.MaxCV}
		if g.Condition != nil {
			gs.ConditionText = sourceText(cfg.Files, g.Condition.Range())
		}
		out[name] = gs
	}
	return out
}

// sourceText returns the source bytes of rng, or "" when the file is not at hand.
func sourceText(files map[string][]byte, rng hcl.Range) string {
	src, ok := files[rng.Filename]
	if !ok || rng.End.Byte > len(src) || rng.Start.Byte > rng.End.Byte {
		return ""
	}
	return oneLine(string(src[rng.Start.Byte:rng.End.Byte]))
}

// GatesFromSnapshot reads the gate blocks of a spec snapshot (file name ->
// source, as a saved plan keeps it) without loading the whole spec: each
// gate's condition is kept as an expression; error_message, min_runs and
// max_cv are evaluated with the recorded variable values. Problems are
// returned as warnings naming the gate.
func GatesFromSnapshot(spec map[string]string, variables map[string]any) (map[string]*GateSpec, []string) {
	out := map[string]*GateSpec{}
	var warnings []string
	ctx := &hcl.EvalContext{Functions: lang.Functions(), Variables: map[string]cty.Value{"var": variablesValue(variables)}}
	names := make([]string, 0, len(spec))
	for n := range spec {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, fname := range names {
		if !strings.HasSuffix(fname, ".hcl") {
			continue
		}
		src := []byte(spec[fname])
		f, diags := hclsyntax.ParseConfig(src, fname, hcl.InitialPos)
		if diags.HasErrors() {
			warnings = append(warnings, fmt.Sprintf("spec snapshot %s does not parse: %s", fname, firstSummary(diags)))
			continue
		}
		body, ok := f.Body.(*hclsyntax.Body)
		if !ok {
			continue
		}
		for _, b := range body.Blocks {
			if b.Type != "gate" || len(b.Labels) != 1 {
				continue
			}
			gs := &GateSpec{Name: b.Labels[0]}
			files := map[string][]byte{fname: src}
			if a, ok := b.Body.Attributes["condition"]; ok {
				gs.Condition = a.Expr
				gs.ConditionText = sourceText(files, a.Expr.Range())
			}
			if a, ok := b.Body.Attributes["error_message"]; ok {
				if v, d := a.Expr.Value(ctx); !d.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
					gs.ErrorMessage = v.AsString()
				} else {
					gs.ErrorMessage = sourceText(files, a.Expr.Range())
				}
			}
			for attr, dst := range map[string]any{"min_runs": &gs.MinRuns, "max_cv": &gs.MaxCV} {
				a, ok := b.Body.Attributes[attr]
				if !ok {
					continue
				}
				v, d := a.Expr.Value(ctx)
				if d.HasErrors() || gocty.FromCtyValue(v, dst) != nil {
					warnings = append(warnings, fmt.Sprintf("gate %s: %s could not be evaluated from the spec snapshot; it is ignored", gs.Name, attr))
				}
			}
			out[gs.Name] = gs
		}
	}
	return out, warnings
}

// variablesValue turns recorded variable values into the `var` object.
func variablesValue(vars map[string]any) cty.Value {
	attrs := map[string]cty.Value{}
	for k, v := range vars {
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		t, err := ctyjson.ImpliedType(b)
		if err != nil {
			continue
		}
		if cv, err := ctyjson.Unmarshal(b, t); err == nil {
			attrs[k] = cv
		}
	}
	return cty.ObjectVal(attrs)
}
