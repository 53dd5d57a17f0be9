package workload

import "math"

// SketchRelativeError is the accuracy of the full-scan quantile sketch:
// every percentile it reports lies within this relative error of the exact
// nearest-rank value (values below sketchMinValue count as 0).
const SketchRelativeError = 0.005

// sketchMinValue is the smallest positive value kept apart from zero.
const sketchMinValue = 1e-9

// Sketch is a mergeable quantile sketch with logarithmic buckets (the
// DDSketch construction): value x > 0 lands in bucket ceil(log_gamma(x))
// with gamma = (1+a)/(1-a), and a bucket answers 2*gamma^i/(gamma+1), which
// is within relative error a of every value in it. Counts are exact and
// merging adds counts, so the result does not depend on merge order. Memory
// is one int64 per bucket: about 2,300 buckets span 1e-3..1e7 at a = 0.5%.
//
// The distribution's ends are exact: the sketch keeps the smallest and the
// largest positive value and how many times each occurred, so a quantile
// whose rank falls on them is that value (a hit ratio of exactly 1.0 is
// 1.0, not its bucket's 0.995), and a bucket's answer never lies outside
// them.
type Sketch struct {
	alpha, gamma float64
	m            *sketchMapping
	zeros        int64
	offset       int // bucket index of bins[0]
	bins         []int64
	n            int64
	// min and max are the smallest and largest value >= sketchMinValue,
	// minN and maxN how many values equal them (0: no such value).
	min, max   float64
	minN, maxN int64
}

// NewSketch returns an empty sketch with relative error alpha (0 < alpha < 1).
func NewSketch(alpha float64) *Sketch {
	g := (1 + alpha) / (1 - alpha)
	return &Sketch{alpha: alpha, gamma: g, m: mappingFor(alpha)}
}

// RelativeError is the sketch's guaranteed relative error.
func (s *Sketch) RelativeError() float64 { return s.alpha }

// Add records a non-negative value; negative values are recorded as 0.
func (s *Sketch) Add(x float64) {
	s.n++
	if !(x >= sketchMinValue) {
		s.zeros++
		return
	}
	s.ends(x, 1)
	s.inc(s.m.index(x))
}

// ends records c values x at the distribution's ends.
func (s *Sketch) ends(x float64, c int64) {
	if s.maxN == 0 {
		s.min, s.max, s.minN, s.maxN = x, x, c, c
		return
	}
	if x >= s.max {
		if x > s.max {
			s.max, s.maxN = x, 0
		}
		s.maxN += c
	}
	if x <= s.min {
		if x < s.min {
			s.min, s.minN = x, 0
		}
		s.minN += c
	}
}

// AddAll records every value of xs, as Add does one by one. It is the
// scan's inner loop, so the mapping's table lookup (index) and the bin
// increment (inc) are written out here rather than called per value.
func (s *Sketch) AddAll(xs []float64) {
	s.n += int64(len(xs))
	m := s.m
	lo, bound, boundOff, eMin, sub := m.lo, m.bound, m.boundOff, m.eMin, m.bits
	bins, offset := s.bins, s.offset
	for _, x := range xs {
		if !(x >= sketchMinValue) {
			s.zeros++
			continue
		}
		if x >= s.max || x <= s.min {
			s.ends(x, 1)
		}
		var i int
		b := math.Float64bits(x)
		if k := (int(b>>52&0x7ff)-1023-eMin)<<sub | int(b>>(52-sub))&(1<<sub-1); uint(k) < uint(len(lo)) {
			// At most one bucket boundary lies in a sub-range
			// (sketchMapping): one comparison, made without a branch,
			// which values on either side of a boundary would mispredict.
			i = int(lo[k])
			up := 0
			if x > bound[i-boundOff] {
				up = 1
			}
			i += up
		} else {
			i = m.slow(x)
		}
		if j := i - offset; uint(j) < uint(len(bins)) {
			bins[j]++
			continue
		}
		s.addBin(i, 1)
		bins, offset = s.bins, s.offset
	}
}

func (s *Sketch) inc(i int) {
	if j := i - s.offset; uint(j) < uint(len(s.bins)) {
		s.bins[j]++
		return
	}
	s.addBin(i, 1)
}

func (s *Sketch) addBin(i int, c int64) {
	if len(s.bins) == 0 {
		s.offset = i
		s.bins = make([]int64, 1, 64)
	}
	if i < s.offset {
		grow := make([]int64, s.offset-i, s.offset-i+len(s.bins))
		s.bins = append(grow, s.bins...)
		s.offset = i
	}
	for i-s.offset >= len(s.bins) {
		s.bins = append(s.bins, 0)
	}
	s.bins[i-s.offset] += c
}

// Merge adds the counts of another sketch with the same relative error.
func (s *Sketch) Merge(o quantileSink) {
	other := o.(*Sketch)
	s.n += other.n
	s.zeros += other.zeros
	if other.maxN > 0 {
		if s.maxN == 0 {
			s.min, s.max, s.minN, s.maxN = other.min, other.max, other.minN, other.maxN
		} else {
			s.ends(other.max, other.maxN)
			if other.min != other.max {
				s.ends(other.min, other.minN)
			}
		}
	}
	for j, c := range other.bins {
		if c != 0 {
			s.addBin(other.offset+j, c)
		}
	}
}

// Count is the exact number of values added.
func (s *Sketch) Count() int64 { return s.n }

// Quantile returns the nearest-rank q-quantile, within the relative error.
func (s *Sketch) Quantile(q float64) float64 {
	if s.n == 0 {
		return 0
	}
	r := rankIndex(s.n, q)
	switch {
	case r < s.zeros:
		return 0
	case r >= s.n-s.maxN:
		return s.max
	case r < s.zeros+s.minN:
		return s.min
	}
	seen := s.zeros
	j := len(s.bins) - 1
	for k, c := range s.bins {
		seen += c
		if r < seen {
			j = k
			break
		}
	}
	// The bucket's answer, kept within the exact ends: the true value is
	// between them, so this never moves the answer away from it.
	return min(s.max, max(s.min, 2*math.Pow(s.gamma, float64(s.offset+j))/(s.gamma+1)))
}

// Percentiles returns p50, p90, p95, p99.
func (s *Sketch) Percentiles() Percentiles {
	return Percentiles{P50: s.Quantile(Quantiles[0]), P90: s.Quantile(Quantiles[1]), P95: s.Quantile(Quantiles[2]), P99: s.Quantile(Quantiles[3])}
}
