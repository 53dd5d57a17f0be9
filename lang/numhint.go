package lang

import (
	"strconv"
	"strings"
	"time"
)

// numberFix says how to write s, a string given where a number belongs, as
// the number it means: "3.9k" is 3900 (HCL numbers have no k/M/G
// suffixes), "1,000" is 1000, and a duration ("2s", "500ms") is its
// milliseconds when unit is "ms" and otherwise is said to need the
// attribute's own unit. It returns "" when s means no number.
func numberFix(s, unit string) string {
	t := strings.TrimSpace(s)
	if t == "" {
		return ""
	}
	if d, err := time.ParseDuration(t); err == nil {
		if unit == "ms" {
			return "write " + formatNumber(float64(d)/float64(time.Millisecond)) + ", in ms (no quotes, no unit)"
		}
		return "write the number without quotes or a unit, in the attribute's own unit"
	}
	mult := 1.0
	switch t[len(t)-1] {
	case 'k', 'K':
		mult = 1e3
	case 'M':
		mult = 1e6
	case 'G':
		mult = 1e9
	}
	if mult != 1 {
		t = t[:len(t)-1]
	}
	t = strings.ReplaceAll(strings.ReplaceAll(t, ",", ""), "_", "")
	x, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return ""
	}
	return "write " + formatNumber(x*mult) + " (a number, without quotes or suffixes)"
}

// formatNumber writes x the shortest way HCL reads back.
func formatNumber(x float64) string {
	return strconv.FormatFloat(x, 'f', -1, 64)
}
