package workload

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// The table lookup must give exactly the bucket of the definition,
// gamma^(i-1) < x <= gamma^i, for values spread over every decade the
// profile sees, for integers (token counts) and at the boundaries
// themselves, where an off-by-one would cost the stated accuracy.
func TestSketchMappingIsTheDefinition(t *testing.T) {
	m := mappingFor(SketchRelativeError)
	if m.lo == nil {
		t.Fatal("no lookup table for the default accuracy")
	}
	// A sub-range's values lie in its start's bucket or the next (the
	// next sub-range's start is at most one bucket on), which the
	// lookup's single comparison relies on.
	for k := 1; k < len(m.lo); k++ {
		if d := m.lo[k] - m.lo[k-1]; d < 0 || d > 1 {
			t.Fatalf("sub-ranges %d and %d start %d buckets apart", k-1, k, d)
		}
	}
	check := func(x float64) {
		t.Helper()
		i := m.index(x)
		if !(x <= math.Pow(m.gamma, float64(i)) && x > math.Pow(m.gamma, float64(i-1))) {
			t.Fatalf("index(%v) = %d: not in (gamma^%d, gamma^%d]", x, i, i-1, i)
		}
		if j := m.slow(x); j != i {
			t.Fatalf("index(%v) = %d, slow path %d", x, i, j)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 30_000 {
		check(math.Exp(r.Float64()*math.Log(1e15/sketchMinValue)) * sketchMinValue)
	}
	for x := 1.0; x < 20_000; x++ {
		check(x)
	}
	for i := -2000; i < 4000; i += 7 {
		b := math.Pow(m.gamma, float64(i))
		for _, x := range []float64{b, math.Nextafter(b, 0), math.Nextafter(b, math.Inf(1))} {
			if x >= sketchMinValue {
				check(x)
			}
		}
	}
	check(math.Ldexp(1, 70)) // beyond the table: the slow path
	// Every answer is within the stated relative error of its value.
	for range 10_000 {
		x := math.Exp(r.Float64()*30) * 1e-3
		s := NewSketch(SketchRelativeError)
		s.Add(x)
		if got := s.Quantile(0.5); math.Abs(got-x) > SketchRelativeError*x*(1+1e-12) {
			t.Fatalf("one value %v answered %v: outside %v", x, got, SketchRelativeError)
		}
	}
}

// AddAll is Add in a loop; merge order does not change the sketch.
func TestSketchAddAllAndMergeOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	vals := make([]float64, 50_000)
	for i := range vals {
		vals[i] = r.ExpFloat64() * 1000
		if i%50 == 0 {
			vals[i] = 0
		}
	}
	one, all := NewSketch(SketchRelativeError), NewSketch(SketchRelativeError)
	for _, v := range vals {
		one.Add(v)
	}
	all.AddAll(vals)
	parts := make([]*Sketch, 5)
	for i := range parts {
		parts[i] = NewSketch(SketchRelativeError)
		parts[i].AddAll(vals[i*10_000 : (i+1)*10_000])
	}
	fwd, back := NewSketch(SketchRelativeError), NewSketch(SketchRelativeError)
	for i := range parts {
		fwd.Merge(parts[i])
		back.Merge(parts[len(parts)-1-i])
	}
	for name, s := range map[string]*Sketch{"AddAll": all, "merged forward": fwd, "merged backward": back} {
		if s.n != one.n || s.zeros != one.zeros || s.Percentiles() != one.Percentiles() {
			t.Errorf("%s: n %d zeros %d %+v, want n %d zeros %d %+v", name, s.n, s.zeros, s.Percentiles(), one.n, one.zeros, one.Percentiles())
		}
	}
}

// The distribution's ends are exact: a quantile whose rank falls on the
// largest (or smallest) value is that value, not its bucket's answer (a hit
// ratio of exactly 1.0 came out as 0.995 at p90-p99); in between, answers
// stay within the relative error and never outside the ends; and the ends
// survive merging, in any order, and a shard's state.
func TestSketchKeepsExactEnds(t *testing.T) {
	s := NewSketch(SketchRelativeError)
	for i := range 1000 {
		switch {
		case i < 50:
			s.Add(0) // no hit
		case i < 100:
			s.Add(0.0123) // the smallest positive value, 5%
		case i < 880:
			s.Add(0.2 + float64(i)/2000)
		default:
			s.Add(1.0) // full hits, 12%
		}
	}
	for _, c := range []struct{ q, want float64 }{{0.03, 0}, {0.07, 0.0123}, {0.10, 0.0123}, {0.90, 1}, {0.95, 1}, {0.99, 1}, {0.999, 1}} {
		if got := s.Quantile(c.q); got != c.want {
			t.Errorf("q%v = %v, want exactly %v", c.q, got, c.want)
		}
	}
	if got := s.Quantile(0.5); math.Abs(got-0.2-500.0/2000)/(0.2+500.0/2000) > SketchRelativeError*1.0001 {
		t.Errorf("p50 %v outside the relative error", got)
	}
	// A bucket's answer is never above the largest value.
	one := NewSketch(SketchRelativeError)
	one.AddAll([]float64{0.9999, 0.9999, 0.99995})
	if got := one.Quantile(0.5); got > 0.99995 || got < 0.9999 {
		t.Errorf("p50 of 0.9999, 0.9999, 0.99995 is %v", got)
	}
	// Merged in either order and through a shard's state: the same ends.
	a, b := NewSketch(SketchRelativeError), NewSketch(SketchRelativeError)
	a.AddAll([]float64{3, 5, 5, 9})
	b.AddAll([]float64{1, 1, 9, 2})
	ab, ba := NewSketch(SketchRelativeError), NewSketch(SketchRelativeError)
	ab.Merge(a)
	ab.Merge(b)
	ba.Merge(b)
	ba.Merge(a)
	back, err := SketchFromState(ab.State())
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*Sketch{"a+b": ab, "b+a": ba, "state": back} {
		if m.min != 1 || m.minN != 2 || m.max != 9 || m.maxN != 2 || m.Quantile(0) != 1 || m.Quantile(1) != 9 {
			t.Errorf("%s: ends %v x%d, %v x%d", name, m.min, m.minN, m.max, m.maxN)
		}
	}
	// A state whose ends are not in its end buckets is refused.
	st := ab.State()
	st.Max = 100
	if _, err := SketchFromState(st); err == nil {
		t.Error("a state with its maximum outside its last bucket was accepted")
	}
}

// AddAll, which writes the mapping's lookup out inline, leaves the same
// sketch (every bucket, the ends, the zeros) as Add value by value: on
// values that grow the buckets down and up, take the mapping's slow path
// (above 2^64), are zero, negative, NaN or below sketchMinValue, and for a
// sketch too precise for the table (every value on the slow path).
func TestSketchAddAllIsAddOneByOne(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	vals := []float64{500, 3, 1e6, 1e-3, 0, -4, math.NaN(), 1e-12, 1e30, math.MaxFloat64, 2e19, 1, 1, 0.5}
	for range 20_000 {
		vals = append(vals, math.Exp(r.NormFloat64()*6))
	}
	// A sketch this precise has no table (its buckets are narrower than
	// 2^-16 of an octave); its values stay in [1, 2) to keep the buckets few.
	fine := []float64{1.5, 0, 1.25, -1, 1e-12, 1.0000001, 1.999, 1.5}
	for range 5_000 {
		fine = append(fine, 1+r.Float64())
	}
	for _, c := range []struct {
		alpha float64
		vals  []float64
	}{{SketchRelativeError, vals}, {0.05, vals}, {5e-6, fine}} {
		alpha, vals := c.alpha, c.vals
		if alpha == 5e-6 && mappingFor(alpha).lo != nil {
			t.Fatal("the precise sketch has a table")
		}
		one, all := NewSketch(alpha), NewSketch(alpha)
		for _, v := range vals {
			one.Add(v)
		}
		all.AddAll(vals[:7])
		all.AddAll(vals[7:])
		if !reflect.DeepEqual(one, all) {
			t.Errorf("alpha %g: AddAll n %d zeros %d offset %d %d bins min %v (%d) max %v (%d), Add n %d zeros %d offset %d %d bins min %v (%d) max %v (%d)", alpha,
				all.n, all.zeros, all.offset, len(all.bins), all.min, all.minN, all.max, all.maxN,
				one.n, one.zeros, one.offset, len(one.bins), one.min, one.minN, one.max, one.maxN)
		}
	}
}
