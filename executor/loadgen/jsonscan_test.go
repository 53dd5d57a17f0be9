package loadgen

import (
	"math"
	"testing"
)

// The JSON walker's integers saturate instead of wrapping, on 32-bit
// builds too (the bound was once 1<<40, which did not compile for
// linux/386; `make cross` runs this test there).
func TestJSONIntSaturates(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"42", 42},
		{"-7", -7},
		{"12.5", 12},
		{"2147483647", math.MaxInt32},
		{"99999999999999999999999999", 0}, // saturated: checked below
	} {
		s := &jscan{b: []byte(c.in)}
		got, ok := s.int()
		if !ok {
			t.Fatalf("%s: not read", c.in)
		}
		if c.want == 0 {
			if got < math.MaxInt/10 {
				t.Errorf("%s: %d, want saturation near %d", c.in, got, math.MaxInt)
			}
			continue
		}
		if got != c.want {
			t.Errorf("%s: %d, want %d", c.in, got, c.want)
		}
	}
}
