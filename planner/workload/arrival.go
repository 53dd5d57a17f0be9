package workload

import (
	"math"
	"math/bits"
	"slices"
)

// maxWindows bounds the windows counted for one row group (a row group
// spanning more than ~115 days of 1-second windows is summarised per minute only).
const maxWindows = 10_000_000

// arrivalStats accumulates arrival rates and inter-arrival gaps over row
// groups. Gaps and windows never cross a row-group boundary: sampled groups
// are far apart in time.
type arrivalStats struct {
	perSecond, perMinute quantileSink
	secCount, secWindows int64
	minCount, minWindows int64
	gaps                 int64
	gapSum               int64   // microseconds, exact
	gapSumSq             uint128 // microseconds squared, exact
	// curve is the per-minute request counts of one row group, the one
	// with the most whole minutes (the earliest on a tie), starting at
	// minute curveStart (unix minutes); at most maxCurve minutes.
	curve      []int64
	curveStart int64
}

// maxCurve bounds the arrival curve a profile keeps: one day of minutes.
const maxCurve = 1440

// keepCurve takes a group's per-minute counts as the curve when they are
// longer than the one kept (or as long and earlier), so the choice never
// depends on the order groups or shards are merged in.
func (a *arrivalStats) keepCurve(counts []int64, start int64) {
	if len(counts) > maxCurve {
		counts = counts[:maxCurve]
	}
	if len(counts) > len(a.curve) || (len(counts) == len(a.curve) && len(counts) > 0 && start < a.curveStart) {
		a.curve, a.curveStart = slices.Clone(counts), start
	}
}

// uint128 is an exact accumulator for sums of squares (a year of
// one-second gaps squared overflows int64).
type uint128 struct{ hi, lo uint64 }

func (u uint128) add(o uint128) uint128 {
	lo, carry := bits.Add64(u.lo, o.lo, 0)
	return uint128{u.hi + o.hi + carry, lo}
}

func square(x uint64) uint128 {
	hi, lo := bits.Mul64(x, x)
	return uint128{hi, lo}
}

func (u uint128) float() float64 { return float64(u.hi)*(1<<64) + float64(u.lo) }

func newArrivalStats(newSink func() quantileSink) *arrivalStats {
	return &arrivalStats{perSecond: newSink(), perMinute: newSink()}
}

// addGroup takes one row group's started_at times (microseconds; the slice
// is sorted in place).
func (a *arrivalStats) addGroup(starts []int64) {
	if len(starts) < 2 {
		return
	}
	slices.Sort(starts)
	starts = trimIsolated(starts)
	for i := 1; i < len(starts); i++ {
		g := starts[i] - starts[i-1]
		a.gaps++
		a.gapSum += g
		a.gapSumSq = a.gapSumSq.add(square(uint64(g)))
	}
	c, w := windowRates(starts, 1_000_000, a.perSecond)
	a.secCount += c
	a.secWindows += w
	c, w, counts := windowCounts(starts, 60_000_000, a.perMinute)
	a.minCount += c
	a.minWindows += w
	if len(counts) > 0 {
		a.keepCurve(counts, floorDiv(starts[0], 60_000_000)+1)
	}
}

// trimIsolated drops the rows at either end of a sorted group that lie
// further from the rest than the rest's own span (a clock error, a row of
// another day), as long as they are at most one in a thousand of the group
// (at least one row): one row 10 days early once spread a 10 req/s group
// over 864,498 mostly empty 1-second windows (mean 0.01 req/s, an arrival
// curve of 1,440 zeros), and one dated 1970 left no window at all. A
// group's traffic that is merely bursty (a busy minute, then a quiet hour)
// is far more than one in a thousand of its rows and is kept.
func trimIsolated(s []int64) []int64 {
	limit := max(1, len(s)/1000)
	lo, hi := 0, len(s) // the kept rows, s[lo:hi]
	for cut := true; cut && hi-lo > 2; {
		cut = false
		for k := lo + 1; k <= lo+limit && k < hi-1 && k <= limit; k++ {
			if s[k]-s[k-1] > s[hi-1]-s[k] {
				lo, cut = k, true
				break
			}
		}
		for k := hi - 1; k >= hi-limit && k > lo+1 && len(s)-k <= limit; k-- {
			if s[k]-s[k-1] > s[k-1]-s[lo] {
				hi, cut = k, true
				break
			}
		}
	}
	return s[lo:hi]
}

// windowRates counts sorted times in windows of width us microseconds,
// keeps only the windows wholly inside the span (not the first or last,
// which are partly outside it), and adds each window's rate (requests/s).
func windowRates(sorted []int64, width int64, sink quantileSink) (count, windows int64) {
	count, windows, _ = windowCounts(sorted, width, sink)
	return count, windows
}

// windowCounts is windowRates that also returns each window's count.
func windowCounts(sorted []int64, width int64, sink quantileSink) (count, windows int64, counts []int64) {
	first := floorDiv(sorted[0], width)
	last := floorDiv(sorted[len(sorted)-1], width)
	n := last - first - 1
	if n <= 0 || n > maxWindows {
		return 0, 0, nil
	}
	counts = make([]int64, n)
	for _, t := range sorted {
		w := floorDiv(t, width) - first - 1
		if w >= 0 && w < n {
			counts[w]++
		}
	}
	sec := float64(width) / 1e6
	for _, c := range counts {
		sink.Add(float64(c) / sec)
		count += c
	}
	return count, n, counts
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (a *arrivalStats) merge(o *arrivalStats) {
	a.perSecond.Merge(o.perSecond)
	a.perMinute.Merge(o.perMinute)
	a.secCount += o.secCount
	a.secWindows += o.secWindows
	a.minCount += o.minCount
	a.minWindows += o.minWindows
	a.gaps += o.gaps
	a.gapSum += o.gapSum
	a.gapSumSq = a.gapSumSq.add(o.gapSumSq)
	a.keepCurve(o.curve, o.curveStart)
}

func rateWindows(sink quantileSink, count, windows int64, sec float64) RateWindows {
	if windows == 0 {
		return RateWindows{}
	}
	p := sink.Percentiles()
	return RateWindows{Windows: windows, Mean: float64(count) / (float64(windows) * sec), P50: p.P50, P99: p.P99}
}

// cv is the coefficient of variation (population std / mean) of the gaps.
func (a *arrivalStats) cv() float64 {
	if a.gaps < 2 || a.gapSum <= 0 {
		return 0
	}
	n := float64(a.gaps)
	mean := float64(a.gapSum) / n
	v := max(0, a.gapSumSq.float()/n-mean*mean)
	return math.Sqrt(v) / mean
}
