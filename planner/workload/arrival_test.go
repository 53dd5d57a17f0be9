package workload

import "testing"

func TestWindowRatesKeepOnlyWholeWindows(t *testing.T) {
	// Times in seconds: window 0 (partial), 1, 2, 3 (partial).
	secs := []float64{0.5, 1.1, 1.2, 1.3, 2.4, 3.9}
	us := make([]int64, len(secs))
	for i, s := range secs {
		us[i] = int64(s * 1e6)
	}
	sink := &exactSink{}
	count, windows := windowRates(us, 1_000_000, sink)
	if windows != 2 || count != 4 {
		t.Fatalf("windows %d count %d, want 2 whole windows holding 4 requests", windows, count)
	}
	if p := sink.Percentiles(); p.P50 != 1 || p.P99 != 3 {
		t.Fatalf("rates %+v, want p50 1/s and p99 3/s", p)
	}
	a := newArrivalStats(func() quantileSink { return &exactSink{} })
	a.addGroup([]int64{0, 1_000_000, 2_000_000, 3_000_000})
	if a.cv() != 0 || a.gaps != 3 {
		t.Fatalf("even gaps: cv %v gaps %d, want 0 and 3", a.cv(), a.gaps)
	}
	if floorDiv(-1, 10) != -1 || floorDiv(10, 10) != 1 {
		t.Fatal("floorDiv")
	}
}

// minutes returns start times (µs) with counts[k] requests spread over
// whole minute k, starting at minute base.
func minutes(base int64, counts ...int) []int64 {
	var out []int64
	for k, n := range counts {
		for i := range n {
			out = append(out, (base+int64(k))*60_000_000+int64(i)*60_000_000/int64(n))
		}
	}
	return out
}

// The arrival curve is the per-minute rate of the group with the most
// whole minutes (the earliest on a tie), whatever the order groups and
// shards are merged in.
func TestArrivalCurveIsOrderIndependent(t *testing.T) {
	sink := func() quantileSink { return &exactSink{} }
	groups := [][]int64{
		minutes(100, 5, 60, 120, 30, 5), // 3 whole minutes: 60, 120, 30
		minutes(500, 5, 6, 12, 18, 5),   // 3 whole minutes too, later
		minutes(900, 5, 30, 5),          // 1 whole minute
	}
	var curves [][]int64
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}} {
		a := newArrivalStats(sink)
		for _, i := range order {
			b := newArrivalStats(sink)
			b.addGroup(append([]int64(nil), groups[i]...))
			a.merge(b)
		}
		curves = append(curves, a.curve)
		if a.curveStart != 101 {
			t.Errorf("order %v: curve starts at minute %d, want 101", order, a.curveStart)
		}
	}
	for _, c := range curves {
		if len(c) != 3 || c[0] != 60 || c[1] != 120 || c[2] != 30 {
			t.Fatalf("curves %v, want [60 120 30] in every order", curves)
		}
	}
	g := &groupStats{arrival: newArrivalStats(sink)}
	g.arrival.addGroup(groups[0])
	tr := g.traffic(false)
	if c := tr.ArrivalCurve; c == nil || c.WindowSeconds != 60 || c.Start != "1970-01-01T01:41:00Z" || c.Rates[1] != 2 {
		t.Fatalf("traffic curve %+v, want 60-s windows from minute 101 at 1, 2 and 0.5 req/s", c)
	}
}
