package lang

import (
	"github.com/zclconf/go-cty/cty"
)

// markKind is the type of the spec language's cty marks.
type markKind string

// SensitiveMark marks the value of a sensitive variable and, since cty
// carries marks through every operation and function, anything derived
// from it. Plans show a marked value as "(sensitive)".
const SensitiveMark = markKind("sensitive")

// IsSensitive reports whether v or any value inside it is marked sensitive.
func IsSensitive(v cty.Value) bool {
	if v == cty.NilVal {
		return false
	}
	_, pvm := v.UnmarkDeepWithPaths()
	for _, p := range pvm {
		if _, ok := p.Marks[SensitiveMark]; ok {
			return true
		}
	}
	return false
}

// leafStrings lists every known string and number inside v as text.
func leafStrings(v cty.Value) []string {
	v, _ = v.UnmarkDeep()
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() {
		return nil
	}
	switch {
	case v.Type() == cty.String:
		return []string{v.AsString()}
	case v.Type() == cty.Number:
		bf := v.AsBigFloat()
		if exp := bf.MantExp(nil); exp < -4096 || exp > 4096 {
			// Spelled out, such a number would take minutes and be
			// millions of digits long: no text holds it.
			return []string{numText(bf)}
		}
		return []string{bf.Text('f', -1)}
	case v.Type().IsListType() || v.Type().IsSetType() || v.Type().IsTupleType() ||
		v.Type().IsMapType() || v.Type().IsObjectType():
		var out []string
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, leafStrings(e)...)
		}
		return out
	}
	return nil
}

// compactSecrets drops repeats, keeping the first of each.
func compactSecrets(s []string) []string {
	seen := map[string]bool{}
	out := s[:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
