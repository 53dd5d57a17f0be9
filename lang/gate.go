package lang

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

var gateSpecs = []attrSpec{
	{name: "condition", required: true, raw: true},
	{name: "error_message", typ: cty.String, required: true},
	{name: "min_runs", typ: cty.Number, whole: true, def: cty.NumberIntVal(0), max: MaxRuns},
	{name: "max_cv", typ: cty.Number, def: cty.NumberIntVal(0), max: 1000},
}

func (l *loader) decodeGate(d *decl, in instance, body hcl.Body, ctx *hcl.EvalContext) cty.Value {
	a, _ := l.decodeBody(d, body, ctx, gateSpecs)
	g := &Gate{
		Name: in.name, Condition: a.exprs["condition"], ErrorMessage: a.str("error_message"),
		MinRuns: int(a.int("min_runs")), MaxCV: a.float("max_cv"), DeclRange: d.block.DefRange,
	}
	if g.Condition != nil {
		rng := g.Condition.Range()
		if src, ok := l.cfg.Files[rng.Filename]; ok && rng.End.Byte <= len(src) && rng.Start.Byte <= rng.End.Byte {
			g.ConditionText = string(src[rng.Start.Byte:rng.End.Byte])
		}
		g.Metrics = laneMetricsOf(g.Condition)
		if diag := conditionType(g.Condition, l.opts.LaneMetrics); diag != nil {
			l.diags = append(l.diags, diag)
		}
	}
	l.diags = appendIf(l.diags,
		numCheck(a, "min_runs", nonNegative, "0 or more", "With fewer runs the gate is inconclusive."),
		numCheck(a, "max_cv", nonNegative, "0 or more", "It is the largest coefficient of variation of throughput across runs for a conclusive result."),
	)
	l.cfg.Gates[in.name] = g
	return ref(a, in.name)
}

// Check evaluates the gate's condition with lane bound to a lane's metrics
// (an object such as {failed = 0, ttft_p95_ms = 81.2, ...}). It returns
// whether the condition holds; diagnostics say why it could not be
// evaluated (an unknown metric name, a non-boolean result).
func (g *Gate) Check(lane cty.Value) (bool, hcl.Diagnostics) {
	if g.Condition == nil {
		return false, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Gate has no condition",
			Detail: fmt.Sprintf("gate %q has no condition to evaluate.", g.Name), Subject: g.DeclRange.Ptr()}}
	}
	ctx := &hcl.EvalContext{Functions: Functions(), Variables: map[string]cty.Value{"lane": lane}}
	v, diags := g.Condition.Value(ctx)
	if diags.HasErrors() {
		return false, Explain(diags)
	}
	b, err := convert.Convert(v, cty.Bool)
	if err != nil || b.IsNull() || !b.IsKnown() {
		return false, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid gate condition",
			Detail: fmt.Sprintf("The condition of gate %q must be true or false, got %s.", g.Name, describe(v)), Subject: g.Condition.Range().Ptr()})
	}
	return b.True(), diags
}

// laneMetricsOf lists the lane.NAME and lane.GROUP.NAME paths expr uses.
func laneMetricsOf(expr hcl.Expression) []string {
	seen := map[string]bool{}
	for _, t := range expr.Variables() {
		if t.RootName() != "lane" {
			continue
		}
		var parts []string
		for i := 1; i < len(t) && i <= 2; i++ {
			name, ok := stepAt(t, i)
			if !ok {
				break
			}
			parts = append(parts, name)
		}
		if len(parts) > 0 {
			seen[strings.Join(parts, ".")] = true
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// ParseGate rebuilds a gate from what a plan records of it (the condition
// as text), so the report evaluates exactly the gate that was planned
// without reading the spec again. The condition may refer to lane.* only.
func ParseGate(name, condition, errorMessage string, minRuns int, maxCV float64) (*Gate, hcl.Diagnostics) {
	g := &Gate{Name: name, ConditionText: condition, ErrorMessage: errorMessage, MinRuns: minRuns, MaxCV: maxCV}
	expr, diags := hclsyntax.ParseExpression([]byte(condition), "gate."+name+".condition", hcl.InitialPos)
	if diags.HasErrors() {
		return g, diags
	}
	for _, t := range expr.Variables() {
		if t.RootName() != "lane" {
			return g, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid reference in gate condition",
				Detail: fmt.Sprintf("The condition of gate %q refers to %s; a gate condition may only use lane.* metrics.", name, t.RootName()), Subject: t.SourceRange().Ptr()}}
		}
	}
	g.Condition = expr
	g.Metrics = laneMetricsOf(expr)
	return g, nil
}

// conditionType checks that a gate's condition is true or false whatever
// the lane measures, by evaluating it against a placeholder lane whose
// metrics (metrics, as Options.LaneMetrics lists them; nil: none known)
// are numbers not known yet: a number (lane.failed) or a string ("yes")
// would make every report say INCONCLUSIVE. Conditions that cannot be
// evaluated (unknown metric names, reported where the reference is
// checked) are left alone.
func conditionType(expr hcl.Expression, metrics []string) *hcl.Diagnostic {
	lane := cty.DynamicVal
	if metrics != nil {
		attrs := map[string]cty.Value{}
		groups := map[string]map[string]cty.Value{}
		for _, m := range metrics {
			if g, member, ok := strings.Cut(m, "."); ok {
				if groups[g] == nil {
					groups[g] = map[string]cty.Value{}
				}
				groups[g][member] = cty.UnknownVal(cty.Number)
				continue
			}
			attrs[m] = cty.UnknownVal(cty.Number)
		}
		for g, members := range groups {
			attrs[g] = cty.ObjectVal(members)
		}
		lane = cty.ObjectVal(attrs)
	}
	if d := stringOperand(expr); d != nil {
		return d
	}
	ctx := &hcl.EvalContext{Functions: Functions(), Variables: map[string]cty.Value{"lane": lane}}
	v, diags := expr.Value(ctx)
	for _, d := range diags {
		// A metric the report has no name for is reported where the
		// reference is checked; any other error (a string where a number
		// belongs, a call with wrong arguments) would make every lane
		// INCONCLUSIVE after its runs were paid for.
		if d.Severity != hcl.DiagError || d.Summary == "Unsupported attribute" {
			continue
		}
		rng := expr.Range()
		if d.Subject != nil {
			rng = *d.Subject
		}
		return errorf(rng, "Invalid gate condition",
			"The condition cannot be evaluated, so the report could never judge it (every lane would be INCONCLUSIVE): %s %s",
			strings.TrimSuffix(d.Summary, ".")+".", d.Detail)
	}
	if diags.HasErrors() {
		return nil
	}
	t := v.Type()
	if t == cty.Bool || t == cty.DynamicPseudoType {
		return nil
	}
	return errorf(expr.Range(), "Invalid gate condition",
		"A gate condition must be true or false, and this one is %s, so the report could never judge it (every lane would be INCONCLUSIVE). Compare the metric with a threshold, such as lane.failed == 0 or lane.ttft_p95_ms < 500.",
		describeType(v))
}

// stringOperand finds a comparison or arithmetic in a gate's condition
// with a quoted operand where the lane's metrics are numbers, such as
// lane.ttft_p95_ms <= "2s" (an error when evaluated: every lane
// INCONCLUSIVE) or lane.failed == "0" (never equal: the gate could never
// pass), and says which number to write instead.
func stringOperand(expr hcl.Expression) *hcl.Diagnostic {
	var found *hcl.Diagnostic
	_ = hclsyntax.VisitAll(asSyntax(expr), func(n hclsyntax.Node) hcl.Diagnostics {
		op, ok := n.(*hclsyntax.BinaryOpExpr)
		if !ok || found != nil || op.Op == hclsyntax.OpLogicalAnd || op.Op == hclsyntax.OpLogicalOr {
			return nil
		}
		for _, pair := range [][2]hclsyntax.Expression{{op.LHS, op.RHS}, {op.RHS, op.LHS}} {
			lit, other := pair[0], pair[1]
			s, ok := stringLiteral(lit)
			if !ok || len(laneMetricsOf(other)) == 0 {
				continue
			}
			unit := ""
			if ms := laneMetricsOf(other); strings.HasSuffix(ms[0], "_ms") {
				unit = "ms"
			}
			fix := numberFix(s, unit)
			if fix == "" {
				fix = "compare with a number, such as lane.failed == 0 or lane.ttft_p95_ms < 500"
			}
			found = errorf(lit.Range(), "Invalid gate condition",
				"The condition compares lane.%s, a number, with the string %q, so the report could never judge it (%s). Fix: %s.",
				laneMetricsOf(other)[0], s, neverJudged(op), fix)
			return nil
		}
		return nil
	})
	return found
}

// neverJudged says what a comparison with a string does to a gate.
func neverJudged(op *hclsyntax.BinaryOpExpr) string {
	if op.Op == hclsyntax.OpEqual || op.Op == hclsyntax.OpNotEqual {
		return "a number never equals a string: the gate would never pass, or always"
	}
	return "every lane would be INCONCLUSIVE"
}

// stringLiteral returns the text of a quoted string with no
// interpolation.
func stringLiteral(e hclsyntax.Expression) (string, bool) {
	t, ok := e.(*hclsyntax.TemplateExpr)
	if !ok || !t.IsStringLiteral() {
		return "", false
	}
	v, diags := t.Value(nil)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// asSyntax returns expr as a native syntax node (nil for other syntaxes:
// JSON).
func asSyntax(expr hcl.Expression) hclsyntax.Node {
	if n, ok := expr.(hclsyntax.Expression); ok {
		return n
	}
	return &hclsyntax.LiteralValueExpr{Val: cty.True}
}

// describeType names a value's type for a message ("a number", "a
// string \"yes\"").
func describeType(v cty.Value) string {
	t := v.Type()
	switch {
	case t == cty.String && v.IsKnown() && !v.IsNull():
		return fmt.Sprintf("the string %q", v.AsString())
	case t == cty.String:
		return "a string"
	case t == cty.Number:
		return "a number"
	}
	return "of type " + t.FriendlyName()
}
