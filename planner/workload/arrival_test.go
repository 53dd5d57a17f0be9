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
