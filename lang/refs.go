package lang

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// exprsOf lists every expression in a body, recursing into nested blocks.
// Spec files are native syntax, so bodies are *hclsyntax.Body.
func exprsOf(body hcl.Body) []namedExpr {
	b, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	var out []namedExpr
	for name, a := range b.Attributes {
		out = append(out, namedExpr{name, a.Expr})
	}
	for _, blk := range b.Blocks {
		out = append(out, exprsOf(blk.Body)...)
	}
	sortByRange(out, func(e namedExpr) hcl.Range { return e.expr.Range() })
	return out
}

// namedExpr is an attribute's name and expression.
type namedExpr struct {
	name string
	expr hcl.Expression
}

// refScope says which special roots an expression may use.
type refScope struct {
	each bool // inside a for_each block
	lane bool // a gate's condition
	// only restricts the roots (nil: any declaration kind).
	only []string
}

// collectRefs checks every reference in the declaration's expressions and
// records the addresses it depends on.
func (l *loader) collectRefs(d *decl) {
	var exprs []namedExpr
	if d.attr != nil {
		exprs = []namedExpr{{d.attr.Name, d.attr.Expr}}
	} else {
		exprs = exprsOf(d.block.Body)
	}
	seen := map[string]bool{}
	for _, e := range exprs {
		scope := refScope{each: forEachKinds[d.kind] && l.hasForEach(d)}
		if d.kind == "gate" && e.name == "condition" {
			scope = refScope{lane: true, only: []string{"lane"}}
		}
		for _, t := range e.expr.Variables() {
			dep, ok := l.checkRef(t, scope)
			if !ok {
				d.failed = true
			} else if dep != "" {
				d.refs = append(d.refs, t)
			}
			if ok && dep != "" && !seen[dep] {
				seen[dep] = true
				d.deps = append(d.deps, dep)
			}
		}
	}
}

// hasForEach reports whether a block sets for_each.
func (l *loader) hasForEach(d *decl) bool {
	b, ok := d.block.Body.(*hclsyntax.Body)
	if !ok {
		return false
	}
	_, has := b.Attributes["for_each"]
	return has
}

// checkRef validates one traversal and returns the address it depends on
// ("" for var, each and lane, which need no ordering).
func (l *loader) checkRef(t hcl.Traversal, scope refScope) (string, bool) {
	root := t.RootName()
	rng := t.SourceRange()
	if scope.only != nil && !contains(scope.only, root) {
		l.diags = append(l.diags, errorf(rng, "Invalid reference in gate condition",
			"A gate condition may refer to lane.METRIC only (it is stored in plans and evaluated after the runs); %s is not available there. Write thresholds as literal numbers.", root))
		return "", false
	}
	switch root {
	case "lane":
		if !scope.lane {
			l.diags = append(l.diags, errorf(rng, "Invalid reference to lane",
				"lane.METRIC is only available in a gate's condition, where it holds one lane's aggregate metrics."))
			return "", false
		}
		if d := checkLaneMetric(t, l.opts.LaneMetrics); d != nil {
			l.diags = append(l.diags, d)
			return "", false
		}
		return "", true
	case "each":
		if !scope.each {
			l.diags = append(l.diags, errorf(rng, "Invalid reference to each",
				"each.key and each.value are only available in a model, shape, gpu or runtime block that sets for_each."))
			return "", false
		}
		if name, ok := stepName(t); !ok || (name != "key" && name != "value") {
			l.diags = append(l.diags, errorf(rng, "Invalid reference to each",
				"Use each.key or each.value."))
			return "", false
		}
		return "", true
	}
	kind := root
	if kind != "var" && kind != "local" && !contains(blockKinds, kind) {
		l.diags = append(l.diags, errorf(rng, "Unknown reference",
			"There is nothing named %q.%s References start with var., local., trace., model., gpu., runtime., executor., shape., gate. or screen.",
			root, didYouMean(root, rootNames())))
		return "", false
	}
	name, ok := stepName(t)
	if !ok {
		l.diags = append(l.diags, errorf(rng, "Invalid reference",
			"A reference to %s must name one, like %s.NAME.", kindWord(kind), kind))
		return "", false
	}
	if _, declared := l.decls[kind+"."+name]; !declared {
		l.diags = append(l.diags, errorf(rng, fmt.Sprintf("Reference to undeclared %s", kindWord(kind)),
			"No %s named %q is declared.%s%s", kindWord(kind), name, didYouMean(name, l.names[kind]), declareHint(kind, name)))
		return "", false
	}
	if kind == "var" {
		return "", true
	}
	return kind + "." + name, true
}

func declareHint(kind, name string) string {
	switch kind {
	case "var":
		return fmt.Sprintf(" Declare it with variable %q { ... }.", name)
	case "local":
		return fmt.Sprintf(" Declare it in a locals block: locals { %s = ... }.", name)
	}
	return fmt.Sprintf(" Declare it with %s %q { ... }.", kind, name)
}

// stepName returns the attribute name after the root of t.
func stepName(t hcl.Traversal) (string, bool) {
	return stepAt(t, 1)
}

// stepAt returns the name of the i-th step of t (an attribute or a string
// index), if it has one.
func stepAt(t hcl.Traversal, i int) (string, bool) {
	if len(t) <= i {
		return "", false
	}
	switch s := t[i].(type) {
	case hcl.TraverseAttr:
		return s.Name, true
	case hcl.TraverseIndex:
		if k := s.Key; k.IsKnown() && !k.IsNull() && k.Type().FriendlyName() == "string" {
			return k.AsString(), true
		}
	}
	return "", false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// order returns the declarations in dependency order, reporting cycles by
// name. Declarations in a cycle are marked inCycle and left unevaluated.
func (l *loader) order() []*decl {
	const (
		white = iota
		grey
		black
	)
	color := map[*decl]int{}
	var out []*decl
	var stack []*decl
	var visit func(d *decl)
	visit = func(d *decl) {
		color[d] = grey
		stack = append(stack, d)
		for _, dep := range d.deps {
			next := l.decls[dep]
			if next == nil {
				continue
			}
			switch color[next] {
			case white:
				visit(next)
			case grey:
				l.reportCycle(stack, next)
			}
		}
		stack = stack[:len(stack)-1]
		color[d] = black
		out = append(out, d)
	}
	for _, d := range l.declOrder {
		if d.kind != "var" && color[d] == white {
			visit(d)
		}
	}
	return out
}

// reportCycle reports the cycle that closes at start and marks its members.
func (l *loader) reportCycle(stack []*decl, start *decl) {
	i := len(stack) - 1
	for i > 0 && stack[i] != start {
		i--
	}
	cycle := stack[i:]
	names := make([]string, 0, len(cycle)+1)
	for _, d := range cycle {
		names = append(names, d.addr())
		d.inCycle = true
	}
	names = append(names, start.addr())
	path := strings.Join(names, " -> ")
	if len(cycle) == 1 {
		l.diags = append(l.diags, errorf(start.defRange(), "Cycle in references",
			"%s refers to itself (%s), so it can never be evaluated. Replace the reference with a value.", start.addr(), path))
		return
	}
	l.diags = append(l.diags, errorf(start.defRange(), "Cycle in references",
		"%s refer to each other (%s), so none of them can be evaluated first. Replace one of the references with a value.",
		cycleMembers(cycle), path))
}

func cycleMembers(cycle []*decl) string {
	n := make([]string, len(cycle))
	for i, d := range cycle {
		n[i] = d.addr()
	}
	return strings.Join(n[:len(n)-1], ", ") + " and " + n[len(n)-1]
}

// checkInstanceKeys reports references such as model.qwen["3b"] whose key
// is not one of the for_each keys of an already evaluated block.
func (l *loader) checkInstanceKeys(d *decl) {
	for _, t := range d.refs {
		if len(t) < 3 || !forEachKinds[t.RootName()] {
			continue
		}
		name, _ := stepName(t)
		idx, ok := t[2].(hcl.TraverseIndex)
		if !ok || !idx.Key.IsKnown() || idx.Key.IsNull() || idx.Key.Type().FriendlyName() != "string" {
			continue
		}
		v := l.valueOf(t.RootName(), name)
		target := l.decls[t.RootName()+"."+name]
		if target == nil || !target.hasForEachInstances || !v.IsKnown() || !v.Type().IsObjectType() {
			continue
		}
		key := idx.Key.AsString()
		if v.Type().HasAttribute(key) {
			continue
		}
		var keys []string
		for k := range v.Type().AttributeTypes() {
			keys = append(keys, k)
		}
		keys = sortedStrings(keys)
		l.diags = append(l.diags, errorf(t.SourceRange(), fmt.Sprintf("No such %s instance", kindWord(t.RootName())),
			"%s.%s has no instance %q: its for_each keys are %s.%s",
			t.RootName(), name, key, quoteList(keys), didYouMean(key, keys)))
		d.failed = true
	}
}

// checkLaneMetric checks a lane.NAME (or lane.GROUP.NAME) traversal against
// the metric names of Options.LaneMetrics, where "failures.timeout" makes
// failures a group whose members are checked too. It returns nil when the
// name is known or no list was given.
func checkLaneMetric(t hcl.Traversal, metrics []string) *hcl.Diagnostic {
	name, ok := stepName(t)
	if !ok || metrics == nil {
		return nil
	}
	var top []string
	members := map[string][]string{}
	leaf := map[string]bool{}
	for _, m := range metrics {
		g, member, dotted := strings.Cut(m, ".")
		if _, seen := members[g]; !seen && !leaf[g] {
			top = append(top, g)
		}
		if dotted {
			members[g] = append(members[g], member)
			continue
		}
		leaf[g] = true
		if members[g] == nil {
			members[g] = []string{}
		}
	}
	rng := t.SourceRange()
	if !contains(top, name) {
		return errorf(rng, "Unknown lane metric",
			"A lane has no metric %q.%s Gate conditions can use: %s.", name, didYouMean(name, top), strings.Join(laneMetricWords(top, members), ", "))
	}
	sub := members[name]
	if leaf[name] || len(sub) == 0 {
		return nil
	}
	member, ok := stepAt(t, 2)
	if !ok {
		if len(t) == 2 {
			return errorf(rng, "Incomplete lane metric",
				"lane.%s is a group of metrics; name one, such as lane.%s.%s. Its members: %s.", name, name, sub[0], strings.Join(sub, ", "))
		}
		return nil
	}
	if !contains(sub, member) {
		return errorf(rng, "Unknown lane metric",
			"lane.%s has no member %q.%s Its members: %s.", name, member, didYouMean(member, sub), strings.Join(sub, ", "))
	}
	return nil
}

// laneMetricWords lists the top-level lane names for a message, groups as
// "failures.*".
func laneMetricWords(top []string, members map[string][]string) []string {
	out := make([]string, len(top))
	for i, n := range top {
		out[i] = n
		if len(members[n]) > 0 {
			out[i] = n + ".*"
		}
	}
	return out
}
