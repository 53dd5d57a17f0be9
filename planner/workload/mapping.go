package workload

import (
	"math"
	"sync"
)

// sketchMapping finds a value's sketch bucket, the smallest i with
// x <= gamma^i, without a logarithm: the float's exponent and its top
// `bits` mantissa bits name a sub-range [s, s*(1+2^-bits)) of one octave,
// lo holds the bucket of each sub-range's start, and since a sub-range is
// narrower than a bucket (2^-bits < gamma-1) at most one bucket boundary
// lies inside it, so one comparison with bound settles the bucket. The
// result is exactly the bucket of the definition (bucket boundaries are
// math.Pow(gamma, i), the same values Quantile answers from), for every
// value in the table's range; values outside it (above 2^64) take the slow
// path, which computes the same bucket with math.Log and corrects it.
type sketchMapping struct {
	gamma, logGamma float64
	bits            uint
	eMin            int
	lo              []int32   // bucket of each sub-range start
	bound           []float64 // gamma^(boundOff+j)
	boundOff        int
}

// Exponent range of the table: 2^-30 (below sketchMinValue) to 2^64.
const mappingEMin, mappingEMax = -30, 63

var (
	mappingsMu sync.Mutex
	mappings   = map[float64]*sketchMapping{}
)

// mappingFor returns the shared mapping for relative error alpha.
func mappingFor(alpha float64) *sketchMapping {
	mappingsMu.Lock()
	defer mappingsMu.Unlock()
	if m, ok := mappings[alpha]; ok {
		return m
	}
	g := (1 + alpha) / (1 - alpha)
	m := &sketchMapping{gamma: g, logGamma: math.Log(g), eMin: mappingEMin}
	m.bits = uint(math.Ceil(-math.Log2(g - 1)))
	for math.Ldexp(1, -int(m.bits)) >= g-1 {
		m.bits++
	}
	if m.bits > 16 {
		// A sketch this precise takes the slow path for every value.
		mappings[alpha] = m
		return m
	}
	sub := 1 << m.bits
	n := (mappingEMax - mappingEMin + 1) * sub
	m.lo = make([]int32, n)
	first := m.slow(math.Ldexp(1, mappingEMin))
	last := m.slow(math.Ldexp(1, mappingEMax+1)) + 1
	m.boundOff = first
	m.bound = make([]float64, last-first+1)
	for j := range m.bound {
		m.bound[j] = math.Pow(g, float64(first+j))
	}
	for k := range m.lo {
		e := mappingEMin + k/sub
		start := math.Ldexp(1+float64(k%sub)/float64(sub), e)
		m.lo[k] = int32(m.slow(start))
	}
	mappings[alpha] = m
	return m
}

// index is the bucket of x >= sketchMinValue.
func (m *sketchMapping) index(x float64) int {
	if m.lo != nil {
		b := math.Float64bits(x)
		e := int(b>>52&0x7ff) - 1023
		k := (e-m.eMin)<<m.bits | int(b>>(52-m.bits))&(1<<m.bits-1)
		if uint(k) < uint(len(m.lo)) {
			i := int(m.lo[k]) // one comparison: see sketchMapping
			if x > m.bound[i-m.boundOff] {
				i++
			}
			return i
		}
	}
	return m.slow(x)
}

// slow computes the bucket with a logarithm, corrected against the exact
// boundaries so that it agrees with index.
func (m *sketchMapping) slow(x float64) int {
	l := math.Log(x) / m.logGamma
	if math.IsInf(l, 0) || math.IsNaN(l) {
		return int(math.MaxInt32)
	}
	i := int(math.Ceil(l))
	for x > math.Pow(m.gamma, float64(i)) {
		i++
	}
	for x <= math.Pow(m.gamma, float64(i-1)) {
		i--
	}
	return i
}
