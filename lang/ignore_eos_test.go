package lang

import (
	"strings"
	"testing"
)

// TestIgnoreEOSDecodes: ignore_eos, declared in lang/shape and decoded
// from the declaration, is true (nil) unless a shape sets it false, and
// spelling out the default leaves it nil so the lane ID is the same.
func TestIgnoreEOSDecodes(t *testing.T) {
	for _, tc := range []struct {
		attr string
		want bool
		nil_ bool
	}{
		{"", true, true},
		{"ignore_eos = true", true, true},
		{"ignore_eos = false", false, false},
	} {
		src := strings.Replace(minimal, "requests      = 4", "requests      = 4\n  "+tc.attr, 1)
		s := mustLoad(t, src, testOptions()).Shapes["s"]
		if s.IgnoresEOS() != tc.want || (s.IgnoreEOS == nil) != tc.nil_ {
			t.Errorf("%q: IgnoresEOS %v (field %v), want %v (nil %v)", tc.attr, s.IgnoresEOS(), s.IgnoreEOS, tc.want, tc.nil_)
		}
	}
	got := loadErr(t, strings.Replace(minimal, "requests      = 4", "requests      = 4\n  ignore_eso = false", 1), testOptions())
	if !strings.Contains(got, `Did you mean "ignore_eos"?`) {
		t.Errorf("a misspelt ignore_eos: %s", got)
	}
}
