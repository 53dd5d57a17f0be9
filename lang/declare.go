package lang

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// The named block kinds that other blocks can refer to, in evaluation
// tie-break order.
var blockKinds = []string{"trace", "model", "gpu", "runtime", "executor", "search", "shape", "gate", "screen"}

// forEachKinds may use for_each.
var forEachKinds = map[string]bool{"model": true, "shape": true, "gpu": true, "runtime": true}

var topSchema = func() *hcl.BodySchema {
	s := &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "infercrane"},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
	}}
	for _, k := range blockKinds {
		s.Blocks = append(s.Blocks, hcl.BlockHeaderSchema{Type: k, LabelNames: []string{"name"}})
	}
	return s
}()

// decl is one named declaration: a block, or one attribute of a locals block.
type decl struct {
	kind, name string
	block      *hcl.Block     // nil for locals
	attr       *hcl.Attribute // locals only
	// deps are the addresses this declaration refers to.
	deps []string
	// refs are the references behind deps.
	refs []hcl.Traversal
	// hasForEachInstances is set once for_each expanded into instances.
	hasForEachInstances bool
	// traces are the unprofiled traces this declaration depends on,
	// directly or through other declarations.
	traces map[string]bool
	// failed is set when the declaration's own references were reported,
	// so that evaluating them again stays quiet.
	failed bool
	// inCycle marks members of a reference cycle, which are not evaluated.
	inCycle bool
}

func (d *decl) addr() string { return d.kind + "." + d.name }

// defRange is where the declaration is reported: the block header or the
// local's name.
func (d *decl) defRange() hcl.Range {
	if d.block != nil {
		return d.block.DefRange
	}
	return d.attr.NameRange
}

// declare reads the top-level blocks of every file into decls, reporting
// unknown block types, invalid and duplicate names.
func (l *loader) declare(files []*hcl.File) {
	for _, f := range files {
		content, d := f.Body.Content(topSchema)
		l.diags = append(l.diags, withHints(d, "A spec", topSchema)...)
		for _, b := range content.Blocks {
			switch b.Type {
			case "infercrane":
				// handled by checkVersion
			case "variable":
				l.declareVariable(b)
			case "locals":
				attrs, d := b.Body.JustAttributes()
				l.diags = append(l.diags, d...)
				for _, a := range sortedAttrs(attrs) {
					l.add(&decl{kind: "local", name: a.Name, attr: a}, a.NameRange)
				}
			default:
				l.add(&decl{kind: b.Type, name: b.Labels[0], block: b}, b.LabelRanges[0])
			}
		}
	}
}

// add registers d unless its name is invalid or taken.
func (l *loader) add(d *decl, nameRange hcl.Range) {
	if !hclsyntax.ValidIdentifier(d.name) {
		l.diags = append(l.diags, errorf(nameRange, fmt.Sprintf("Invalid %s name", kindWord(d.kind)),
			"%q is not a valid name: names start with a letter or underscore and contain only letters, digits, underscores and dashes, so that %s.NAME can refer to them.",
			d.name, d.kind))
		return
	}
	if prev, dup := l.decls[d.addr()]; dup {
		l.diags = append(l.diags, errorf(nameRange, fmt.Sprintf("Duplicate %s %q", kindWord(d.kind), d.name),
			"A %s named %q was already declared at %s. Names must be unique within their block type; rename or remove one of them.",
			kindWord(d.kind), d.name, prev.defRange()))
		return
	}
	l.decls[d.addr()] = d
	l.declOrder = append(l.declOrder, d)
	l.names[d.kind] = append(l.names[d.kind], d.name)
}

// kindWord is how diagnostics name a kind ("local value", "model").
func kindWord(kind string) string {
	switch kind {
	case "local":
		return "local value"
	case "var":
		return "variable"
	}
	return kind
}

// sortedAttrs returns attributes in source order.
func sortedAttrs(m hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(m))
	for _, a := range m {
		out = append(out, a)
	}
	sortByRange(out, func(a *hcl.Attribute) hcl.Range { return a.Range })
	return out
}

// sortByRange sorts items by file name and start offset.
func sortByRange[T any](items []T, rng func(T) hcl.Range) {
	sort.SliceStable(items, func(i, j int) bool {
		a, b := rng(items[i]), rng(items[j])
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
}

// rootNames lists every name an expression may start with.
func rootNames() []string {
	return append([]string{"var", "local", "each", "lane"}, blockKinds...)
}

// valueOf returns the current value of a declaration (cty.DynamicVal until
// it is evaluated).
func (l *loader) valueOf(kind, name string) cty.Value {
	if v, ok := l.values[kind][name]; ok {
		return v
	}
	return cty.DynamicVal
}

// setValue records a declaration's value.
func (l *loader) setValue(kind, name string, v cty.Value) {
	if l.values[kind] == nil {
		l.values[kind] = map[string]cty.Value{}
	}
	l.values[kind][name] = v
}

// evalContext builds the context for evaluating declaration d: every
// variable, the declarations d refers to and, when given, each. References
// were checked beforehand, so nothing else can be reached.
func (l *loader) evalContext(d *decl, each cty.Value) *hcl.EvalContext {
	if l.varObject == cty.NilVal {
		l.varObject = cty.ObjectVal(l.varValues)
	}
	roots := map[string]map[string]cty.Value{"local": {}}
	for _, k := range blockKinds {
		roots[k] = map[string]cty.Value{}
	}
	for _, dep := range d.deps {
		kind, name, _ := strings.Cut(dep, ".")
		if roots[kind] != nil {
			roots[kind][name] = l.valueOf(kind, name)
		}
	}
	vars := map[string]cty.Value{"var": l.varObject}
	for k, m := range roots {
		vars[k] = cty.ObjectVal(m)
	}
	if each != cty.NilVal {
		vars["each"] = each
	}
	return &hcl.EvalContext{Variables: vars, Functions: l.functions}
}

// quoteList renders names as "a", "b" and "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) <= 1 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
