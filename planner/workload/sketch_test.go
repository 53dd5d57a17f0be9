package workload

import (
	"math"
	"math/rand/v2"
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
