package perf

import (
	"math"
	"testing"
)

func TestArrivalsMeanAndDeterminism(t *testing.T) {
	for _, kind := range []string{ArrivalConstant, ArrivalPoisson, ArrivalGamma} {
		for _, burst := range []float64{0.25, 1, 4} {
			a, err := NewArrivals(50, kind, burst, 9)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := NewArrivals(50, kind, burst, 9)
			var last int64
			const n = 20000
			for i := 0; i < n; i++ {
				x, y := a.Next(), b.Next()
				if x != y || x < last {
					t.Fatalf("%s: arrival %d: %d vs %d (previous %d)", kind, i, x, y, last)
				}
				last = x
			}
			rate := float64(n-1) / (float64(last) / 1e9)
			if math.Abs(rate-50)/50 > 0.03 {
				t.Errorf("%s burstiness %g: mean rate %g, want 50", kind, burst, rate)
			}
		}
	}
	if _, err := NewArrivals(0, ArrivalPoisson, 1, 1); err == nil {
		t.Error("a zero rate must be refused")
	}
}
