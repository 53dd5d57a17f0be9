package report

import "testing"

// Report figures carry significant digits, never an exponent: the plan
// versus measurement table once printed "1.04e+03 (781-1.3e+03)".
func TestFmtSigNeverUsesAnExponent(t *testing.T) {
	for _, c := range []struct {
		x      float64
		digits int
		want   string
	}{
		{1040.3, 3, "1040"}, {781.2, 3, "781"}, {1299.9, 3, "1300"}, {12.345, 3, "12.3"},
		{0.012345, 3, "0.0123"}, {-2.5e6, 3, "-2500000"}, {0, 3, "0"}, {99.96, 3, "100"}, {16, 4, "16"}, {12.5, 4, "12.5"},
	} {
		if got := fmtSig(c.x, c.digits); got != c.want {
			t.Errorf("fmtSig(%v, %d) = %q, want %q", c.x, c.digits, got, c.want)
		}
	}
}
