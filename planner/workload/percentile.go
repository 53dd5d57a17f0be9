package workload

import (
	"math"
	"slices"
)

// Quantiles are the four percentiles a distribution reports.
var Quantiles = [4]float64{0.50, 0.90, 0.95, 0.99}

// QuantileGrid is where a profile made with Options.Quantiles sketches each
// distribution (Distribution.Quantiles): the body and both tails, and the
// four percentiles among them.
var QuantileGrid = []float64{0.01, 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99, 0.999}

// NearestRank returns sorted[clamp(ceil(q*n) - 1)], the nearest-rank
// percentile of an ascending slice (the public prior's definition).
func NearestRank(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	return sorted[rankIndex(int64(n), q)]
}

// rankIndex is clamp(ceil(q*n) - 1, 0, n-1).
func rankIndex(n int64, q float64) int64 {
	i := int64(math.Ceil(q*float64(n))) - 1
	return min(n-1, max(0, i))
}

// quantileSink collects one quantity's values and answers percentiles.
type quantileSink interface {
	Add(x float64)
	// AddAll adds every value of xs.
	AddAll(xs []float64)
	// Merge adds another sink of the same kind.
	Merge(other quantileSink)
	Count() int64
	// Percentiles returns p50, p90, p95, p99.
	Percentiles() Percentiles
	// Quantile returns the nearest-rank q-quantile.
	Quantile(q float64) float64
}

// exactSink keeps every value: percentiles are exact.
type exactSink struct {
	values []float64
	sorted bool
}

func (e *exactSink) Add(x float64)       { e.values = append(e.values, x); e.sorted = false }
func (e *exactSink) AddAll(xs []float64) { e.values = append(e.values, xs...); e.sorted = false }
func (e *exactSink) Merge(o quantileSink) {
	e.values = append(e.values, o.(*exactSink).values...)
	e.sorted = false
}
func (e *exactSink) Count() int64               { return int64(len(e.values)) }
func (e *exactSink) Percentiles() Percentiles   { return percentilesOf(e.sortedValues()) }
func (e *exactSink) Quantile(q float64) float64 { return NearestRank(e.sortedValues(), q) }

func (e *exactSink) sortedValues() []float64 {
	if !e.sorted {
		slices.Sort(e.values)
		e.sorted = true
	}
	return e.values
}

func percentilesOf(sorted []float64) Percentiles {
	return Percentiles{
		P50: NearestRank(sorted, Quantiles[0]),
		P90: NearestRank(sorted, Quantiles[1]),
		P95: NearestRank(sorted, Quantiles[2]),
		P99: NearestRank(sorted, Quantiles[3]),
	}
}
