package loadgen

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// randomRecords makes n records of every kind: streamed and not, failed,
// cancelled, warm-up, open loop, with repeated values (ties).
func randomRecords(rng *rand.Rand, n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		sent := rng.Int64N(1e9)
		r := Record{Index: i, SentNs: sent, ScheduledNs: sent - rng.Int64N(1e6), InputTokens: 32, PromptTokens: 32, MaxTokens: 8}
		switch k := rng.IntN(20); {
		case k == 0:
			r.Warmup = true
		case k == 1:
			r.ErrorClass = FailCancelled
		case k < 4:
			r.ErrorClass = FailServerError
		}
		r.OpenLoop = rng.IntN(2) == 0
		r.NonStreaming = rng.IntN(10) == 0
		t := sent + 1e6*int64(rng.IntN(5)+1) // ties on purpose
		r.FirstTokenNs = t
		toks := rng.IntN(6)
		r.OutputTokens = toks
		for j := 0; j < toks; j++ {
			t += rng.Int64N(3e6)
			r.ChunkNs = append(r.ChunkNs, t)
		}
		r.LastTokenNs, r.DoneNs = t, t+rng.Int64N(1e5)
		recs[i] = r
	}
	return recs
}

// TestAccumulatorSpillingEqualsCompute: a summary whose metric values went
// through temporary files (a few values in memory at a time) is
// bit-identical to Compute's in-memory one, percentiles, means and std
// included.
func TestAccumulatorSpillingEqualsCompute(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 7, 100, 1001} {
		recs := randomRecords(rng, n)
		want := Compute(recs, SLO{TTFTMs: 3, TPOTMs: 1.5, LatencyMs: 8})
		for _, limit := range []int{5, 64} {
			a := NewAccumulator(SLO{TTFTMs: 3, TPOTMs: 1.5, LatencyMs: 8}, t.TempDir(), limit)
			for i := range recs {
				a.Add(&recs[i])
			}
			got, err := a.Summary()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("n=%d limit=%d:\n got %+v\nwant %+v", n, limit, got, want)
			}
		}
	}
}
