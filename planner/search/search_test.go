package search

import (
	"math"
	"testing"
)

// stepOracle passes below knee and fails above it, like a server whose
// p95 TTFT crosses the SLO at knee.
func stepOracle(knee float64) Oracle {
	return func(load float64) Measure {
		v := 100.0
		if load > knee {
			v = 5000
		}
		gf := 1.0
		return Measure{Requests: 100, Succeeded: 100, TTFTP95Ms: &v, GoodFraction: &gf}
	}
}

func rateSpec() Spec {
	return Spec{Vary: VaryRequestRate, Min: 0.5, Max: 64, SLO: SLO{TTFTP95Ms: 2000}, Goodput: 0.95,
		Tolerance: 0.05, MaxPoints: 8, Requests: 100}
}

func TestSearchFindsKneeWithinTolerance(t *testing.T) {
	s := rateSpec()
	s.MaxPoints = 12
	for _, c := range []struct {
		knee, start float64
		maxPts      int
	}{
		{10, 10, 2},     // exact prediction: knee and one step up
		{10, 11.5, 6},   // prediction 15% high
		{10, 8.5, 6},    // prediction 15% low
		{10, 40, 12},    // prediction 4x high
		{3.3, 0.5, 12},  // start at the bottom
		{50, 6, 12},     // far above the prediction
		{0.7, 20, 12},   // near the bottom of the range
		{12.34, 0, 12},  // no prediction: start in the geometric middle
		{63.9, 60, 12},  // just below the top
		{2.222, 2.2, 3}, // within the tolerance of the prediction
	} {
		pts, r := s.Simulate(c.start, stepOracle(c.knee))
		if r.Status != StatusConverged {
			t.Errorf("knee %g start %g: status %s after %d points %+v", c.knee, c.start, r.Status, len(pts), loads(pts))
			continue
		}
		if len(pts) > c.maxPts {
			t.Errorf("knee %g start %g: %d points, want at most %d: %v", c.knee, c.start, len(pts), c.maxPts, loads(pts))
		}
		if r.Capacity > c.knee || r.Upper <= c.knee || r.Upper/r.Capacity > (1+s.Tolerance)*(1+loadPrecision) {
			t.Errorf("knee %g: bracket [%g, %g] does not hold it within %g", c.knee, r.Capacity, r.Upper, s.Tolerance)
		}
		seen := map[float64]bool{}
		for _, p := range pts {
			if seen[p.Load] {
				t.Errorf("knee %g: load %g measured twice: %v", c.knee, p.Load, loads(pts))
			}
			seen[p.Load] = true
		}
	}
}

func TestSearchRangeEnds(t *testing.T) {
	s := rateSpec()
	if pts, r := s.Simulate(10, stepOracle(1000)); r.Status != StatusAboveRange || r.Capacity != 64 || len(pts) > 7 {
		t.Errorf("above range: %+v after %v", r, loads(pts))
	}
	if pts, r := s.Simulate(10, stepOracle(0.1)); r.Status != StatusBelowRange || r.Capacity != 0 || len(pts) > 7 {
		t.Errorf("below range: %+v after %v", r, loads(pts))
	}
}

func TestSearchMaxPoints(t *testing.T) {
	s := rateSpec()
	s.MaxPoints, s.Tolerance = 3, 0.0001
	pts, r := s.Simulate(10, stepOracle(10.5))
	if r.Status != StatusMaxPoints || len(pts) != 3 || r.Capacity <= 10 || r.Upper != 0 {
		t.Errorf("%+v after %v", r, loads(pts))
	}
}

func TestSearchConcurrencyWholeNumbers(t *testing.T) {
	s := Spec{Vary: VaryConcurrency, Min: 1, Max: 256, SLO: SLO{TTFTP95Ms: 2000}, Tolerance: 0.05, MaxPoints: 16, Requests: 100}
	for _, knee := range []float64{1, 2, 7, 37, 100, 255} {
		for _, start := range []float64{1, 8, 64} {
			pts, r := s.Simulate(start, stepOracle(knee))
			if r.Status != StatusConverged && !(knee >= 255 && r.Status == StatusAboveRange) {
				t.Errorf("knee %g start %g: %+v after %v", knee, start, r, loads(pts))
			}
			for _, p := range pts {
				if p.Load != math.Round(p.Load) {
					t.Errorf("knee %g: fractional concurrency %g", knee, p.Load)
				}
			}
			if r.Capacity > knee || (r.Upper > 0 && r.Upper <= knee) {
				t.Errorf("knee %g start %g: bracket [%g, %g]", knee, start, r.Capacity, r.Upper)
			}
		}
	}
}

// TestSearchResumesDeterministically replays a search point by point:
// evaluating any prefix of the points gives the next point of the full run.
func TestSearchResumesDeterministically(t *testing.T) {
	s := rateSpec()
	pts, _ := s.Simulate(9, stepOracle(13.7))
	for i := range pts {
		r := s.Evaluate(9, pts[:i])
		if r.Done() || r.Next != pts[i].Load {
			t.Fatalf("after %d points the next load is %g (done %v), the full run measured %g", i, r.Next, r.Done(), pts[i].Load)
		}
	}
}

func TestJudge(t *testing.T) {
	s := rateSpec()
	s.SLO.TPOTP95Ms = 50
	v, tp, gf := 100.0, 60.0, 0.9
	ok, broken := s.Judge(Measure{TTFTP95Ms: &v, TPOTP95Ms: &tp, GoodFraction: &gf})
	if ok || len(broken) != 2 || broken[0] != SLOTPOT || broken[1] != SLOGoodput {
		t.Errorf("got %v %v", ok, broken)
	}
	if ok, broken := s.Judge(Measure{Failed: 10}); ok || len(broken) != 3 {
		t.Errorf("no successes: %v %v", ok, broken)
	}
	tp = 10
	if ok, broken := s.Judge(Measure{TTFTP95Ms: &v, TPOTP95Ms: &tp, Succeeded: 99, Failed: 1}); !ok {
		t.Errorf("99%% good without good_fraction: %v", broken)
	}
	if ok, broken := s.Judge(Measure{TTFTP95Ms: &v, TPOTP95Ms: &tp, Succeeded: 1, Saturated: true}); ok || len(broken) == 0 {
		t.Errorf("saturated passed: %v", broken)
	}
}

func TestMeasureFromSummary(t *testing.T) {
	m, err := MeasureFromSummary([]byte(`{"requests":10,"succeeded":9,"failed":1,"good_fraction":0.8,
		"ttft_ms":{"count":9,"p95":12.5},"tpot_ms":{"count":0},"latency_ms":{"count":9,"p95":99},"output_token_throughput":42}`))
	if err != nil || m.Succeeded != 9 || *m.TTFTP95Ms != 12.5 || m.TPOTP95Ms != nil || *m.LatencyP95Ms != 99 || *m.GoodFraction != 0.8 || m.OutputTokenThroughput != 42 {
		t.Fatalf("%+v %v", m, err)
	}
	if _, err := MeasureFromSummary([]byte(`{`)); err == nil {
		t.Fatal("a broken summary was read")
	}
}

func TestRequestsAt(t *testing.T) {
	s := rateSpec()
	s.DurationSeconds = 30
	if n := s.RequestsAt(2); n != 100 {
		t.Errorf("2 req/s x 30 s with a floor of 100: %d", n)
	}
	if n := s.RequestsAt(10); n != 300 {
		t.Errorf("10 req/s x 30 s: %d", n)
	}
	s.Vary = VaryConcurrency
	if n := s.RequestsAt(10); n != 100 {
		t.Errorf("concurrency ignores duration: %d", n)
	}
}

func loads(pts []Point) []float64 {
	out := make([]float64, len(pts))
	for i, p := range pts {
		out[i] = p.Load
	}
	return out
}
