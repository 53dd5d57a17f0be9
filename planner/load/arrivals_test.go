package load

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

// A modulated schedule follows the curve: twice the weight, twice the
// arrivals in that step, and the mean rate over whole cycles unchanged.
func TestArrivalsFollowTheCurve(t *testing.T) {
	for _, kind := range []string{ArrivalPoisson, ArrivalConstant, ArrivalGamma} {
		a, err := NewArrivals(10, kind, 0.5, 3)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Modulate([]float64{1, 3, 0, 4}, 10); err != nil {
			t.Fatal(err)
		}
		counts := make([]int, 4)
		n := 0
		for {
			s := float64(a.Next()) / 1e9
			if s >= 400 { // ten cycles of 40 s
				break
			}
			counts[int(s/10)%4]++
			n++
		}
		// 10 req/s on average: 4,000 requests, split 1:3:0:4.
		if n < 3800 || n > 4200 {
			t.Errorf("%s: %d arrivals in 400 s, want about 4,000", kind, n)
		}
		for k, want := range []float64{500, 1500, 0, 2000} {
			if got := float64(counts[k]); math.Abs(got-want) > 0.1*want+1 {
				t.Errorf("%s: step %d got %v arrivals, want about %v", kind, k, got, want)
			}
		}
	}
	a, _ := NewArrivals(1, ArrivalPoisson, 0, 1)
	for _, c := range []struct {
		w    []float64
		step float64
	}{{[]float64{0, 0}, 1}, {[]float64{1, -1}, 1}, {[]float64{1}, 0}} {
		if err := a.Modulate(c.w, c.step); err == nil {
			t.Errorf("Modulate(%v, %g) accepted", c.w, c.step)
		}
	}
}
