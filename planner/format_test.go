package planner

import "testing"

func TestFmtUSDRoundsToCents(t *testing.T) {
	for x, want := range map[float64]string{
		0: "$0.00", 0.004: "$0.0040", 0.28: "$0.28", 0.996: "$1.00", 1.999: "$2.00",
		1234.5: "$1,234.50", 999.996: "$1,000.00", -0.996: "-$1.00",
	} {
		if got := fmtUSD(x); got != want {
			t.Errorf("fmtUSD(%v) = %q, want %q", x, got, want)
		}
	}
}
