package loadgen

import (
	"math"
	"sort"

	"github.com/infercrane/infercrane/planner/load"
)

// Percentile returns the q-th percentile (q in [0, 100]) of sorted, an
// ascending slice, by linear interpolation between the closest ranks
// (numpy.percentile's default); it is load.Percentile, which the estimator
// uses too, so predicted and measured percentiles are the same statistic.
func Percentile(sorted []float64, q float64) float64 { return load.Percentile(sorted, q) }

// newDist summarises values (in any order; it is sorted in place). The
// standard deviation is the population one (numpy's default, ddof=0). An
// empty input gives the zero Dist with Count 0.
func newDist(values []float64) Dist {
	n := len(values)
	if n == 0 {
		return Dist{}
	}
	sort.Float64s(values)
	var sum float64
	for _, v := range values {
		sum += v
	}
	mean := sum / float64(n)
	var ss float64
	for _, v := range values {
		d := v - mean
		ss += d * d
	}
	return Dist{
		Count: n,
		Mean:  mean,
		Std:   math.Sqrt(ss / float64(n)),
		Min:   values[0],
		Max:   values[n-1],
		P50:   Percentile(values, 50),
		P90:   Percentile(values, 90),
		P95:   Percentile(values, 95),
		P99:   Percentile(values, 99),
	}
}
