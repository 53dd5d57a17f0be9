package loadgen

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func TestPercentileMatchesNumpy(t *testing.T) {
	// numpy.percentile([1, 2, 3, 4, 10], q) for q = 0, 25, 50, 90, 95, 99, 100
	xs := []float64{1, 2, 3, 4, 10}
	for _, c := range []struct{ q, want float64 }{
		{0, 1}, {25, 2}, {50, 3}, {90, 7.6}, {95, 8.8}, {99, 9.76}, {100, 10},
	} {
		if got := Percentile(xs, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Percentile(%v, %g) = %g, want %g", xs, c.q, got, c.want)
		}
	}
	if got := Percentile([]float64{5}, 99); got != 5 {
		t.Errorf("one value: got %g", got)
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("empty input must give NaN")
	}
}

// rec builds a successful streamed record: sent at s ms, first token at f,
// then one chunk every gap ms for n tokens.
func rec(i int, s, f, gap float64, n int) Record {
	ms := func(x float64) int64 { return int64(x * 1e6) }
	r := Record{Index: i, SentNs: ms(s), FirstTokenNs: ms(f), InputTokens: 10, PromptTokens: 10,
		MaxTokens: n, OutputTokens: n, ClientTokens: n, Status: 200}
	for k := 0; k < n; k++ {
		r.ChunkNs = append(r.ChunkNs, ms(f+float64(k)*gap))
	}
	r.LastTokenNs = r.ChunkNs[n-1]
	r.DoneNs = r.LastTokenNs + ms(1)
	return r
}

func TestComputeDefinitions(t *testing.T) {
	rs := []Record{
		{Index: 0, Warmup: true, SentNs: 0, DoneNs: 1e9, Status: 200}, // ignored
		rec(1, 0, 50, 10, 5),   // ttft 50, latency 90, tpot 10
		rec(2, 10, 110, 20, 3), // ttft 100, latency 140, tpot 20
		rec(3, 20, 60, 5, 1),   // ttft 40, latency 40, no tpot
		{Index: 4, SentNs: 30e6, DoneNs: 35e6, Status: 429, ErrorClass: FailRateLimited},
		{Index: 5, SentNs: 30e6, DoneNs: 36e6, ErrorClass: FailCancelled},
	}
	s := Compute(rs, SLO{TTFTMs: 60})
	if s.Requests != 4 || s.Succeeded != 3 || s.Failed != 1 || s.Cancelled != 1 || s.Failures[FailRateLimited] != 1 {
		t.Fatalf("counts: %+v", s)
	}
	if s.TTFTMs.Count != 3 || s.TTFTMs.P50 != 50 || s.TTFTMs.Min != 40 || s.TTFTMs.Max != 100 {
		t.Errorf("ttft: %+v", s.TTFTMs)
	}
	if s.TPOTMs.Count != 2 || s.TPOTMs.Mean != 15 {
		t.Errorf("tpot only for >= 2 tokens: %+v", s.TPOTMs)
	}
	if s.ITLMs.Count != 4+2 || s.ITLMs.Max != 20 || s.ITLMs.Min != 10 {
		t.Errorf("itl pooled: %+v", s.ITLMs)
	}
	if s.LatencyMs.P50 != 90 {
		t.Errorf("latency: %+v", s.LatencyMs)
	}
	// window: first send 0 -> last completion 151 ms (request 2 done at 150+1)
	if math.Abs(s.WindowSeconds-0.151) > 1e-9 {
		t.Errorf("window %g", s.WindowSeconds)
	}
	if want := 3 / 0.151; math.Abs(s.RequestThroughput-want) > 1e-9 {
		t.Errorf("request throughput %g want %g", s.RequestThroughput, want)
	}
	if want := 9 / 0.151; math.Abs(s.OutputTokenThroughput-want) > 1e-9 {
		t.Errorf("output throughput %g want %g", s.OutputTokenThroughput, want)
	}
	// good: ttft <= 60 -> requests 1 and 3
	if s.Good != 2 || *s.GoodFraction != 0.5 || math.Abs(*s.Goodput-2/0.151) > 1e-9 {
		t.Errorf("goodput: good %d fraction %g goodput %g", s.Good, *s.GoodFraction, *s.Goodput)
	}
	if s.DispatchDelayMs != nil || s.RequestedRate != nil {
		t.Error("closed-loop records must not produce open-loop statistics")
	}
}

func TestComputeOpenLoop(t *testing.T) {
	var rs []Record
	for i := range 5 {
		r := rec(i, float64(i*100)+2, float64(i*100)+12, 1, 2)
		r.OpenLoop, r.ScheduledNs = true, int64(i*100)*1e6
		rs = append(rs, r)
	}
	s := Compute(rs, SLO{})
	if s.DispatchDelayMs == nil || s.DispatchDelayMs.P50 != 2 {
		t.Fatalf("dispatch delay: %+v", s.DispatchDelayMs)
	}
	if s.TTFTFromScheduledMs.P50 != 12 || s.TTFTMs.P50 != 10 {
		t.Errorf("from scheduled: %+v vs %+v", s.TTFTFromScheduledMs, s.TTFTMs)
	}
	if math.Abs(*s.RequestedRate-10) > 1e-9 || math.Abs(*s.AchievedRate-10) > 1e-9 {
		t.Errorf("rates %g %g", *s.RequestedRate, *s.AchievedRate)
	}
	if s.SLO != nil || s.Good != 5 {
		t.Errorf("no SLO: every success is good: %+v", s)
	}
}

func TestComputeEmpty(t *testing.T) {
	s := Compute(nil, SLO{})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests != 0 || s.Goodput != nil || s.GoodFraction != nil {
		t.Errorf("%s", b)
	}
}

func TestRecordsRoundTripRecomputesIdentically(t *testing.T) {
	rs := []Record{rec(0, 0, 50, 10, 5), rec(1, 3, 70, 7, 9),
		{Index: 2, SentNs: 1, DoneNs: 9, Status: 400, ErrorClass: FailContextOverflow, Error: "too long"}}
	var buf bytes.Buffer
	if err := WriteRecords(&buf, rs); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRecords(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(Compute(rs, SLO{TPOTMs: 8}))
	b, _ := json.Marshal(Compute(back, SLO{TPOTMs: 8}))
	if !bytes.Equal(a, b) {
		t.Fatalf("recomputed summary differs:\n%s\n%s", a, b)
	}
	if _, err := ReadRecords(bytes.NewReader([]byte("{\"index\":1,\"bogus\":2}\n"))); err == nil {
		t.Error("unknown fields must be rejected")
	}
}
