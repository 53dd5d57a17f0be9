package lang

import (
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang/setting"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// attrSpec declares one attribute of a block.
type attrSpec struct {
	name     string
	typ      cty.Type
	required bool
	// def is the value when the attribute is unset (cty.NilVal: null).
	def cty.Value
	// whole requires a whole number (typ must be cty.Number).
	whole bool
	// max bounds a number (or each number of a list): every numeric
	// attribute has one (TestEveryNumberIsBounded), documented in
	// docs/language/bounds.md, so no spec can ask for work or memory
	// without end. A fraction (max 1) is checked by its block's numCheck,
	// which names its lower bound too.
	max float64
	// sensitiveOK allows a value derived from a sensitive variable; the
	// marks are kept in attrs.marks. Elsewhere such a value is an error,
	// since it would end up in clear in plans and evidence.
	sensitiveOK bool
	// raw leaves the expression unevaluated (e.g. a gate's condition).
	raw bool
}

// attrs holds a block's decoded attributes.
type attrs struct {
	// vals maps every declared attribute to its converted value, its
	// default, or a typed null.
	vals  map[string]cty.Value
	exprs map[string]hcl.Expression
	set   map[string]bool
	// body is where a missing attribute is reported.
	body hcl.Range
	// order lists the attribute names as declared in the spec table.
	order []string
	// marks holds the sensitive marks of sensitiveOK attributes by path.
	marks map[string][]cty.PathValueMarks
}

// sensitiveElems reports, for each element of a list attribute in the
// order strs returns them, whether it derives from a sensitive variable;
// nil when none does.
func (a *attrs) sensitiveElems(name string) []bool {
	pvm := a.marks[name]
	if len(pvm) == 0 || !a.known(name) {
		return nil
	}
	whole := false
	idx := map[int64]bool{}
	for _, p := range pvm {
		if len(p.Path) == 0 {
			whole = true
			continue
		}
		if st, ok := p.Path[0].(cty.IndexStep); ok && st.Key.Type() == cty.Number {
			i, _ := st.Key.AsBigFloat().Int64()
			idx[i] = true
		}
	}
	var out []bool
	var i int64
	for it := a.vals[name].ElementIterator(); it.Next(); i++ {
		_, v := it.Element()
		if v.IsKnown() && !v.IsNull() {
			out = append(out, whole || idx[i])
		}
	}
	return out
}

// rangeOf returns the narrowest range for an attribute: its expression when
// set, the block otherwise.
func (a *attrs) rangeOf(name string) hcl.Range {
	if e, ok := a.exprs[name]; ok {
		return e.Range()
	}
	return a.body
}

// ranges maps every set attribute to its expression's range.
func (a *attrs) ranges() map[string]hcl.Range {
	m := make(map[string]hcl.Range, len(a.exprs))
	for k, e := range a.exprs {
		m[k] = e.Range()
	}
	return m
}

// known reports whether the attribute has a known, non-null value.
func (a *attrs) known(name string) bool {
	v := a.vals[name]
	return v != cty.NilVal && v.IsWhollyKnown() && !v.IsNull()
}

func (a *attrs) str(name string) string {
	if !a.known(name) {
		return ""
	}
	return a.vals[name].AsString()
}

func (a *attrs) boolean(name string) bool {
	return a.known(name) && a.vals[name].True()
}

func (a *attrs) float(name string) float64 {
	if !a.known(name) {
		return 0
	}
	f, _ := a.vals[name].AsBigFloat().Float64()
	return f
}

func (a *attrs) int(name string) int64 {
	if !a.known(name) {
		return 0
	}
	i, _ := a.vals[name].AsBigFloat().Int64()
	return i
}

func (a *attrs) strs(name string) []string {
	if !a.known(name) {
		return nil
	}
	var out []string
	for it := a.vals[name].ElementIterator(); it.Next(); {
		_, v := it.Element()
		if v.IsKnown() && !v.IsNull() {
			out = append(out, v.AsString())
		}
	}
	return out
}

// object returns the attributes as an object value plus extra attributes,
// the value other blocks see when they refer to this one.
func (a *attrs) object(extra map[string]cty.Value) cty.Value {
	m := make(map[string]cty.Value, len(a.vals)+len(extra))
	for k, v := range a.vals {
		if v == cty.NilVal {
			continue
		}
		m[k] = v.MarkWithPaths(a.marks[k])
	}
	for k, v := range extra {
		m[k] = v
	}
	return cty.ObjectVal(m)
}

// schemaFor turns specs and nested block types into an hcl.BodySchema.
func schemaFor(specs []attrSpec, blocks ...hcl.BlockHeaderSchema) *hcl.BodySchema {
	s := &hcl.BodySchema{Blocks: blocks}
	for _, sp := range specs {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: sp.name, Required: sp.required})
	}
	return s
}

// decodeAttrs evaluates the attributes of body (whose content was already
// extracted with schemaFor(specs)) against ctx and converts them to their
// declared types.
func decodeAttrs(content *hcl.BodyContent, body hcl.Range, specs []attrSpec, ctx *hcl.EvalContext) (*attrs, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	a := &attrs{vals: map[string]cty.Value{}, exprs: map[string]hcl.Expression{}, set: map[string]bool{}, body: body,
		marks: map[string][]cty.PathValueMarks{}}
	for _, sp := range specs {
		a.order = append(a.order, sp.name)
		attr, ok := content.Attributes[sp.name]
		if !ok {
			a.vals[sp.name] = defaultOf(sp)
			continue
		}
		a.exprs[sp.name] = attr.Expr
		if sp.raw {
			a.set[sp.name] = true
			continue
		}
		v, d := attr.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			a.vals[sp.name] = cty.UnknownVal(sp.typ)
			continue
		}
		v, marks := v.UnmarkDeepWithPaths()
		if len(marks) > 0 {
			if !sp.sensitiveOK {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Sensitive value not allowed here",
					Detail:   fmt.Sprintf("The value of %q derives from a sensitive variable. Only runtime args and executor settings may use sensitive values: plans show them as (sensitive) and apply hands the real value to the executor. Anywhere else it would be written in clear into plans and evidence; use a variable that is not sensitive.", sp.name),
					Subject:  attr.Expr.Range().Ptr(),
				})
				a.vals[sp.name] = cty.UnknownVal(sp.typ)
				continue
			}
			a.marks[sp.name] = marks
		}
		v, d = convertAttr(v, sp, attr.Expr.Range())
		diags = append(diags, d...)
		if v.IsNull() {
			if sp.required {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Missing required argument",
					Detail:   fmt.Sprintf("The argument %q is required and must not be null.", sp.name),
					Subject:  attr.Expr.Range().Ptr(),
				})
			}
			a.vals[sp.name] = defaultOf(sp)
			continue
		}
		a.vals[sp.name] = v
		a.set[sp.name] = true
	}
	return a, diags
}

func defaultOf(sp attrSpec) cty.Value {
	if sp.def != cty.NilVal {
		return sp.def
	}
	if sp.raw {
		return cty.NilVal
	}
	return cty.NullVal(sp.typ)
}

// convertAttr converts v to the spec's type, checking whole numbers.
func convertAttr(v cty.Value, sp attrSpec, rng hcl.Range) (cty.Value, hcl.Diagnostics) {
	v, _ = v.Unmark()
	cv, err := convert.Convert(v, sp.typ)
	if err != nil && sp.typ == cty.Number && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
		fix := numberFix(v.AsString(), "")
		if fix == "" {
			fix = "write a number without quotes"
		}
		return cty.UnknownVal(sp.typ), hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Incorrect attribute value type",
			Detail:   fmt.Sprintf("%s must be a number, and %q is a string. Fix: %s.", sp.name, v.AsString(), fix),
			Subject:  rng.Ptr(),
		}}
	}
	if err != nil {
		return cty.UnknownVal(sp.typ), hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Incorrect attribute value type",
			Detail:   fmt.Sprintf("Inappropriate value for attribute %q: %s.", sp.name, err),
			Subject:  rng.Ptr(),
		}}
	}
	if sp.max > 1 && cv.IsWhollyKnown() && !cv.IsNull() {
		// (A fraction, max 1, is checked with its whole range by its block.)
		if d := checkMax(sp, cv, rng); d != nil {
			return cty.UnknownVal(sp.typ), hcl.Diagnostics{d}
		}
	}
	if sp.whole && cv.IsKnown() && !cv.IsNull() {
		if d := checkWhole(sp.name, cv, rng); d != nil {
			return cty.UnknownVal(sp.typ), hcl.Diagnostics{d}
		}
	}
	return cv, nil
}

// checkWhole reports a number that is not a whole number in int64 range.
// wide64 names the whole-number attributes that may exceed 32 bits: a seed,
// and a model's parameter count (8B-parameter models are common).
var wide64 = map[string]bool{"seed": true, "params": true}

func checkWhole(name string, v cty.Value, rng hcl.Range) *hcl.Diagnostic {
	bf := v.AsBigFloat()
	if bf.IsInf() || !bf.IsInt() {
		return &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for " + name,
			Detail:   fmt.Sprintf("%s must be a whole number, got %s; round it in the expression, e.g. %s = floor(...) or ceil(...) (a trace percentile is often fractional).", name, numText(bf), name),
			Subject:  rng.Ptr(),
		}
	}
	if i, acc := bf.Int64(); acc != big.Exact || (!wide64[name] && (i > math.MaxInt32 || i < math.MinInt32)) {
		return &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for " + name,
			Detail:   fmt.Sprintf("%s is too large (%s).", name, numText(bf)),
			Subject:  rng.Ptr(),
		}
	}
	return nil
}

// Bounds shared by several attributes (docs/language/bounds.md).
const (
	// MaxTokens bounds token counts and context windows.
	MaxTokens = setting.MaxTokens
	// MaxRequests bounds the requests of a run or a search point.
	MaxRequests = setting.MaxRequests
	// MaxRuns bounds a screen's runs per lane, a gate's min_runs and a
	// search's points.
	MaxRuns = 1000
	// MaxPlanRuns bounds the runs of a whole spec (every screen's lanes
	// times its runs): plan's memory and time grow with it.
	MaxPlanRuns = 100_000
	// MaxSeconds bounds durations given in seconds (a day).
	MaxSeconds = setting.MaxSeconds
	// MaxMilliseconds bounds latencies given in milliseconds (a day).
	MaxMilliseconds = MaxSeconds * 1000
	// MaxSigma bounds a lognormal distribution's sigma (lognormal(1,
	// MaxTokens) has 9.8).
	MaxSigma = 10
	// MaxQuantiles bounds the quantiles a distribution lists (a profile
	// made with --quantiles has 10).
	MaxQuantiles = 10_000
)

// checkMax reports a number (or a list element) beyond sp.max, at the
// attribute, in microseconds whatever its size.
func checkMax(sp attrSpec, v cty.Value, rng hcl.Range) *hcl.Diagnostic {
	limit := new(big.Float).SetFloat64(sp.max)
	over := func(x cty.Value) *big.Float {
		if x.IsNull() || x.Type() != cty.Number {
			return nil
		}
		bf := x.AsBigFloat()
		if new(big.Float).Abs(bf).Cmp(limit) > 0 {
			return bf
		}
		return nil
	}
	var bad *big.Float
	if v.Type() == cty.Number {
		bad = over(v)
	} else if v.CanIterateElements() {
		for it := v.ElementIterator(); it.Next() && bad == nil; {
			_, e := it.Element()
			bad = over(e)
		}
	}
	if bad == nil {
		return nil
	}
	bound := "at most " + numText(limit)
	if bad.Sign() < 0 {
		bound = "at least -" + numText(limit)
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Invalid value for " + sp.name,
		Detail:   fmt.Sprintf("%s must be %s, got %s (the bounds are in docs/language/bounds.md).", sp.name, bound, numText(bad)),
		Subject:  rng.Ptr(),
	}
}

// numText formats a number for a message in bounded time: math/big's own
// formatting of a number such as 1e100000000 takes minutes.
func numText(bf *big.Float) string {
	if bf.IsInf() {
		if bf.Sign() < 0 {
			return "-infinity"
		}
		return "infinity"
	}
	if f, _ := bf.Float64(); !math.IsInf(f, 0) && (f != 0 || bf.Sign() == 0) {
		return strconv.FormatFloat(f, 'g', 10, 64)
	}
	mant := new(big.Float)
	exp := bf.MantExp(mant) // bf = mant × 2^exp, 0.5 <= |mant| < 1
	m, _ := mant.Float64()
	l := math.Log10(math.Abs(m)) + float64(exp)*math.Log10(2)
	e := math.Floor(l)
	return fmt.Sprintf("about %.3ge%+d", math.Copysign(math.Pow(10, l-e), m), int64(e))
}

// numCheck validates a known numeric attribute with a predicate, reporting
// "NAME must be WHAT, got V." at the attribute.
func numCheck(a *attrs, name string, ok func(float64) bool, what, hint string) *hcl.Diagnostic {
	if !a.known(name) {
		return nil
	}
	f := a.float(name)
	if ok(f) {
		return nil
	}
	detail := fmt.Sprintf("%s must be %s, got %s.", name, what, numText(a.vals[name].AsBigFloat()))
	if hint != "" {
		detail += " " + hint
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Invalid value for " + name,
		Detail:   detail,
		Subject:  a.rangeOf(name).Ptr(),
	}
}

func positive(f float64) bool    { return f > 0 }
func nonNegative(f float64) bool { return f >= 0 }
func fraction(f float64) bool    { return f > 0 && f <= 1 }

// atLeastMillisecond accepts a number of seconds the load generator can
// time: it counts durations in whole milliseconds, so a positive value
// under 0.001 would become 0 (no time bound, or an arrival curve it
// refuses at apply).
func atLeastMillisecond(f float64) bool { return f >= 0.001 }

// appendIf appends d when it is not nil.
func appendIf(diags hcl.Diagnostics, d ...*hcl.Diagnostic) hcl.Diagnostics {
	for _, x := range d {
		if x != nil {
			diags = append(diags, x)
		}
	}
	return diags
}
