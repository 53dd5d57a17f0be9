package lang

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
)

// closest returns up to max candidates closest to name by edit distance
// (case-insensitive), best first, omitting candidates that are too far off
// to be a plausible typo.
func closest(name string, candidates []string, limitN int) []string {
	type scored struct {
		s      string
		d      int
		prefix bool
	}
	var out []scored
	ln := strings.ToLower(name)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := levenshtein.Distance(ln, lc, nil)
		limit := max(2, len(ln)/3)
		if d <= limit || (len(ln) >= 3 && strings.Contains(lc, ln)) {
			out = append(out, scored{c, d, strings.HasPrefix(lc, ln)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].d != out[j].d {
			return out[i].d < out[j].d
		}
		if out[i].prefix != out[j].prefix {
			return out[i].prefix
		}
		return out[i].s < out[j].s
	})
	// Only the best tier: "qwen6" suggests "qwen06", not also "qwen17".
	for i := 1; i < len(out); i++ {
		if out[i].d > out[0].d {
			out = out[:i]
			break
		}
	}
	var names []string
	for i := 0; i < len(out) && i < limitN; i++ {
		names = append(names, out[i].s)
	}
	return names
}

// didYouMean renders a suggestion sentence such as ` Did you mean "qwen06"?`
// (with a leading space), or "" when nothing is close.
func didYouMean(name string, candidates []string) string {
	c := closest(name, candidates, 3)
	switch len(c) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" Did you mean %q?", c[0])
	default:
		q := make([]string, len(c))
		for i, s := range c {
			q[i] = fmt.Sprintf("%q", s)
		}
		return " Did you mean " + strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1] + "?"
	}
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sortedStrings sorts s in place and returns it.
func sortedStrings(s []string) []string {
	sort.Strings(s)
	return s
}

// DidYouMean is the suggestion sentence for name among candidates, such as
// ` Did you mean "apply"?` (with a leading space), or "" when nothing is
// close; for the CLI's command names, lane keys and the like.
func DidYouMean(name string, candidates []string) string { return didYouMean(name, candidates) }
