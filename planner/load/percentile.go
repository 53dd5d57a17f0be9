package load

import "math"

// Percentile returns the q-th percentile (q in [0, 100]) of sorted, an
// ascending slice, by linear interpolation between the closest ranks
// (numpy.percentile's default): with n values the rank is q/100*(n-1) and a
// fractional rank interpolates between its two neighbours. It returns NaN
// for an empty slice and clamps q to [0, 100].
func Percentile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	q = max(0, min(100, q))
	pos := q / 100 * float64(n-1)
	lo := int(math.Floor(pos))
	if lo >= n-1 {
		return sorted[n-1]
	}
	frac := pos - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}
