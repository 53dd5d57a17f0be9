package planner

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// fmtMs renders milliseconds compactly ("41.2 ms", "2.35 s").
func fmtMs(ms float64) string {
	switch {
	case ms >= 10000:
		return fmt.Sprintf("%.1f s", ms/1000)
	case ms >= 1000:
		return fmt.Sprintf("%.2f s", ms/1000)
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f ms", ms)
	default:
		return fmt.Sprintf("%.2f ms", ms)
	}
}

// fmtInt renders n with thousands separators.
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtUSD renders dollars with cents, or more digits below a cent.
func fmtUSD(x float64) string {
	switch {
	case x == 0:
		return "$0.00"
	case x < 0:
		return "-" + fmtUSD(-x)
	case x < 0.01:
		return fmt.Sprintf("$%.4f", x)
	default:
		cents := int64(math.Round(x * 100))
		return "$" + fmtInt(cents/100) + fmt.Sprintf(".%02d", cents%100)
	}
}

// fmtSignedUSD renders a cost delta with its sign.
func fmtSignedUSD(x float64) string {
	if x >= 0 {
		return "+" + fmtUSD(x)
	}
	return fmtUSD(x)
}

// fmtGPUHours renders GPU-seconds as hours.
func fmtGPUHours(sec float64) string { return fmt.Sprintf("%.2f GPU-hours", sec/3600) }

// plural returns "1 lane" or "2 lanes".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmtInt(int64(n)) + " " + word + "s"
}

// actionSymbol is the diff-style marker of an action.
func actionSymbol(a Action) string {
	switch a {
	case ActionRun:
		return "+ run"
	case ActionRerun:
		return "~ rerun"
	case ActionDrop:
		return "- drop"
	default:
		return "= noop"
	}
}

// fmtPlusMinus renders a relative half-width: "±25%".
func fmtPlusMinus(u float64) string { return fmt.Sprintf("±%.0f%%", 100*u) }
