package lang

import (
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// EnvVarPrefix prefixes environment variables that set spec variables:
// INFERCRANE_VAR_runs=5 sets var.runs.
const EnvVarPrefix = "INFERCRANE_VAR_"

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type"}, {Name: "default"}, {Name: "description"}, {Name: "sensitive"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "condition", Required: true}, {Name: "error_message", Required: true},
	},
}

// variableDecl is a variable block being loaded.
type variableDecl struct {
	v           *Variable
	hasDefault  bool
	validations []*hcl.Block
	// valueRange is where the current value came from.
	valueRange hcl.Range
}

// declareVariable decodes a variable block's type, default and settings.
func (l *loader) declareVariable(b *hcl.Block) {
	name := b.Labels[0]
	d := &decl{kind: "var", name: name, block: b}
	before := len(l.decls)
	l.add(d, b.LabelRanges[0])
	if len(l.decls) == before {
		return
	}
	v := &Variable{Name: name, Type: cty.DynamicPseudoType, Value: cty.NullVal(cty.DynamicPseudoType), DeclRange: b.DefRange}
	vd := &variableDecl{v: v}
	l.cfg.Variables[name] = v
	l.varDecls[name] = vd

	content, diags := b.Body.Content(variableSchema)
	l.diags = append(l.diags, withHints(diags, "A variable block", variableSchema)...)
	if a, ok := content.Attributes["type"]; ok {
		ty, d := typeexpr.TypeConstraint(a.Expr)
		l.diags = append(l.diags, d...)
		if !d.HasErrors() {
			v.Type = ty
		}
	}
	if a, ok := content.Attributes["description"]; ok {
		v.Description = l.constString(a)
	}
	if a, ok := content.Attributes["sensitive"]; ok {
		val, d := a.Expr.Value(nil)
		if d.HasErrors() || val.Type() != cty.Bool || val.IsNull() {
			l.diags = append(l.diags, errorf(a.Expr.Range(), "Invalid sensitive", "sensitive must be true or false."))
		} else {
			v.Sensitive = val.True()
		}
	}
	if a, ok := content.Attributes["default"]; ok {
		val, d := a.Expr.Value(&hcl.EvalContext{Functions: l.functions})
		if d.HasErrors() {
			l.diags = append(l.diags, d...)
			l.diags = append(l.diags, errorf(a.Expr.Range(), "Invalid default value",
				"A variable's default must be a constant: it cannot refer to other variables, locals or blocks."))
		} else if cv, err := convert.Convert(val, v.Type); err != nil {
			l.diags = append(l.diags, errorf(a.Expr.Range(), "Invalid default value for variable",
				"The default does not match the variable's type %s: %s.", typeexpr.TypeString(v.Type), err))
			v.Value = cty.UnknownVal(v.Type)
			vd.hasDefault = true
		} else {
			v.Value = cv
			vd.hasDefault = true
			vd.valueRange = a.Expr.Range()
		}
	}
	vd.validations = content.Blocks
}

// constString evaluates a constant string attribute.
func (l *loader) constString(a *hcl.Attribute) string {
	val, d := a.Expr.Value(&hcl.EvalContext{Functions: l.functions})
	if d.HasErrors() || val.IsNull() || !val.IsWhollyKnown() {
		l.diags = append(l.diags, errorf(a.Expr.Range(), "Invalid "+a.Name, "%s must be a constant string.", a.Name))
		return ""
	}
	s, err := convert.Convert(val, cty.String)
	if err != nil {
		l.diags = append(l.diags, errorf(a.Expr.Range(), "Invalid "+a.Name, "%s must be a string.", a.Name))
		return ""
	}
	return s.AsString()
}

// loadVariables applies, from lowest to highest precedence, defaults, the
// environment, *.auto.vars.hcl files, -var-file files and -var flags, then
// checks required variables and validation rules.
func (l *loader) loadVariables(autoVars []source) {
	for _, kv := range l.opts.Environ {
		k, raw, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvVarPrefix) {
			continue
		}
		name := strings.TrimPrefix(k, EnvVarPrefix)
		if vd, ok := l.varDecls[name]; ok { // unknown names are ignored: the environment outlives specs
			l.setRaw(vd, raw, "environment variable "+k)
		}
	}
	for _, s := range autoVars {
		l.cfg.Files[s.name] = s.src
		l.cfg.VarFiles = append(l.cfg.VarFiles, s.name)
		l.varFile(s.name, s.src)
	}
	for _, p := range l.opts.VarFiles {
		src, err := os.ReadFile(p)
		if err != nil {
			l.diags = append(l.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read variable file",
				Detail: fmt.Sprintf("%v. Check the -var-file path.", err)})
			continue
		}
		l.cfg.Files[p] = src
		l.cfg.VarFiles = append(l.cfg.VarFiles, p)
		l.varFile(p, src)
	}
	for _, kv := range l.opts.Vars {
		name, raw, ok := strings.Cut(kv, "=")
		if !ok {
			l.diags = append(l.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -var option",
				Detail: fmt.Sprintf("The -var option %q has no '='. Write -var NAME=VALUE, for example -var runs=5.", kv)})
			continue
		}
		vd, ok := l.varDecls[name]
		if !ok {
			l.diags = append(l.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value for undeclared variable",
				Detail: fmt.Sprintf("-var sets %q, but the spec declares no variable of that name.%s Declare it with a variable block, or fix the name.",
					name, didYouMean(name, sortedKeys(l.varDecls)))})
			continue
		}
		l.setRaw(vd, raw, "-var "+name)
	}
	for _, name := range sortedKeys(l.varDecls) {
		vd := l.varDecls[name]
		if vd.v.Value.IsNull() && !vd.hasDefault && vd.valueRange == (hcl.Range{}) {
			l.diags = append(l.diags, errorf(vd.v.DeclRange, "No value for required variable",
				"The variable %q has no default and was not set. Set it with -var %s=VALUE, in a *.auto.vars.hcl file, with -var-file, or with the environment variable %s%s.",
				name, name, EnvVarPrefix, name))
			vd.v.Value = cty.UnknownVal(vd.v.Type)
		}
		l.varValues[name] = vd.v.Value
		if vd.v.Sensitive {
			l.cfg.Secrets = compactSecrets(append(l.cfg.Secrets, leafStrings(vd.v.Value)...))
			l.varValues[name] = vd.v.Value.Mark(SensitiveMark)
		}
	}
	for _, name := range sortedKeys(l.varDecls) {
		l.validateVariable(l.varDecls[name])
	}
}

// setRaw sets a variable from a command-line or environment string: taken
// literally for string variables, parsed as an HCL expression otherwise.
func (l *loader) setRaw(vd *variableDecl, raw, origin string) {
	if vd.v.Sensitive {
		l.cfg.Secrets = append(l.cfg.Secrets, raw)
	}
	rng := hcl.Range{Filename: valueSourcePrefix + vd.v.Name + ">", Start: hcl.InitialPos, End: hcl.Pos{Line: 1, Column: 1 + len(raw), Byte: len(raw)}}
	var val cty.Value
	if vd.v.Type == cty.String {
		val = cty.StringVal(raw)
	} else {
		expr, d := hclsyntax.ParseExpression([]byte(raw), rng.Filename, hcl.InitialPos)
		if !d.HasErrors() {
			d = append(d, hugeLiterals(expr)...)
		}
		if !d.HasErrors() && len(expr.Variables()) == 0 {
			v, d2 := expr.Value(&hcl.EvalContext{Functions: l.functions})
			d = append(d, d2...)
			val = v
		}
		switch {
		case !d.HasErrors() && val != cty.NilVal:
		case vd.v.Type == cty.DynamicPseudoType:
			val = cty.StringVal(raw)
		default:
			shown := fmt.Sprintf("%q", raw)
			if vd.v.Sensitive {
				shown = "(sensitive)"
			}
			l.diags = append(l.diags, errorf(rng, "Invalid value for variable",
				"The value %s for var.%s (from %s) is not a valid %s. Lists and maps use HCL syntax; quote them for your shell, for example -var 'tags=[\"a\",\"b\"]'.",
				shown, vd.v.Name, origin, typeexpr.TypeString(vd.v.Type)))
			return
		}
	}
	l.assign(vd, val, rng, origin)
}

// assign converts val to the variable's type and stores it. The value of a
// sensitive variable is listed for redaction even when it does not fit the
// type, since the diagnostic's snippet may show it.
func (l *loader) assign(vd *variableDecl, val cty.Value, rng hcl.Range, origin string) {
	if vd.v.Sensitive {
		l.cfg.Secrets = append(l.cfg.Secrets, leafStrings(val)...)
	}
	if hugeNumber(val) != nil {
		l.diags = append(l.diags, errorf(rng, "Invalid value for variable",
			"The value for var.%s from %s holds a number beyond the numbers a spec can use (about ±1e308, and every attribute has a smaller bound: docs/language/bounds.md).", vd.v.Name, origin))
		return
	}
	cv, err := convert.Convert(val, vd.v.Type)
	if err != nil {
		reason := err.Error()
		if vd.v.Sensitive && strings.ContainsAny(reason, "\"'`") {
			// The conversion error names a key or element of the value
			// (element "KEY": ...): not for a sensitive one.
			reason = "the reason is not shown, since it quotes part of a sensitive value"
		}
		l.diags = append(l.diags, errorf(rng, "Invalid value for variable",
			"The value for var.%s from %s does not match its type %s: %s.", vd.v.Name, origin, typeexpr.TypeString(vd.v.Type), reason))
		return
	}
	vd.v.Value = cv
	vd.valueRange = rng
}

// varFile reads NAME = VALUE assignments from a variable file.
func (l *loader) varFile(name string, src []byte) {
	var f *hcl.File
	var d hcl.Diagnostics
	ctx := &hcl.EvalContext{Functions: l.functions}
	if strings.HasSuffix(name, ".json") {
		// A JSON variable file holds values, not expressions (as
		// Terraform's .tfvars.json): strings are not templates.
		f, d = hcljson.Parse(src, name)
		ctx = nil
	} else {
		f, d = hclsyntax.ParseConfig(src, name, hcl.InitialPos)
		if body, ok := f.Body.(*hclsyntax.Body); ok && !d.HasErrors() {
			d = append(d, hugeLiterals(body)...)
		}
	}
	scrubDetails(d, src, name, l.varDecls)
	l.diags = append(l.diags, d...)
	if d.HasErrors() {
		return
	}
	attrs, d := f.Body.JustAttributes()
	scrubDetails(d, src, name, l.varDecls)
	l.diags = append(l.diags, d...)
	for _, a := range sortedAttrs(attrs) {
		vd, ok := l.varDecls[a.Name]
		if !ok {
			l.diags = append(l.diags, errorf(a.NameRange, "Value for undeclared variable",
				"The file sets %q, but the spec declares no variable of that name.%s Declare it with a variable block, or remove the line.",
				a.Name, didYouMean(a.Name, sortedKeys(l.varDecls))))
			continue
		}
		val, d := a.Expr.Value(ctx)
		if d.HasErrors() {
			scrubDetails(d, src, name, l.varDecls)
			l.diags = append(l.diags, d...)
			continue
		}
		l.assign(vd, val, a.Expr.Range(), name)
	}
}

// validateVariable runs a variable's validation blocks against its value.
func (l *loader) validateVariable(vd *variableDecl) {
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(l.varValues)}, Functions: l.functions}
	for _, b := range vd.validations {
		content, d := b.Body.Content(validationSchema)
		l.diags = append(l.diags, d...)
		condAttr, ok1 := content.Attributes["condition"]
		msgAttr, ok2 := content.Attributes["error_message"]
		if !ok1 || !ok2 {
			continue
		}
		msg := l.constString(msgAttr)
		for _, t := range condAttr.Expr.Variables() {
			if t.RootName() != "var" {
				l.diags = append(l.diags, errorf(t.SourceRange(), "Invalid reference in variable validation",
					"A validation condition may only refer to variables (var.NAME)."))
				return
			}
		}
		if !vd.v.Value.IsWhollyKnown() {
			continue
		}
		cond, d := condAttr.Expr.Value(ctx)
		l.diags = append(l.diags, d...)
		if d.HasErrors() {
			continue
		}
		cond, _ = cond.UnmarkDeep()
		cond, err := convert.Convert(cond, cty.Bool)
		if err != nil || cond.IsNull() {
			l.diags = append(l.diags, errorf(condAttr.Expr.Range(), "Invalid validation condition",
				"The condition must be true or false."))
			continue
		}
		if !cond.IsKnown() || cond.True() {
			continue
		}
		rng := vd.valueRange
		if rng == (hcl.Range{}) {
			rng = vd.v.DeclRange
		}
		l.diags = append(l.diags, errorf(rng, "Invalid value for variable",
			"%s\n\nThis was checked by the validation rule at %s (var.%s).", msg, condAttr.Expr.Range(), vd.v.Name))
	}
}
