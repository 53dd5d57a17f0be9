package report

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
)

func buildFixture(t *testing.T) *evidence.Evidence {
	t.Helper()
	evs, err := BuildEvidence(fixtureInput())
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("%d documents, want 1", len(evs))
	}
	return evs[0]
}

// numpyPercentile is an independent linear-interpolation percentile.
func numpyPercentile(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	h := (float64(len(s)) - 1) * q / 100
	lo := math.Floor(h)
	hi := math.Ceil(h)
	return s[int(lo)] + (h-lo)*(s[int(hi)]-s[int(lo)])
}

// TestAggregatesRecomputedIndependently recomputes the aggregates of every
// campaign straight from the records, without loadgen.Compute or the
// package's aggregation, and compares them with the evidence.
func TestAggregatesRecomputedIndependently(t *testing.T) {
	in := fixtureInput()
	ev := buildFixture(t)
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			runs := in.Runs[c.Lane]
			var tokens, succeeded, failed int
			var window float64
			var p95ttft, p95lat, pooledTTFT []float64
			var perRunTput []float64
			for _, r := range runs {
				var first, last int64 = math.MaxInt64, 0
				var ttft, lat []float64
				runTokens := 0
				for _, rec := range r.Records {
					first = min(first, rec.SentNs)
					last = max(last, rec.DoneNs)
					if rec.ErrorClass != "" {
						failed++
						continue
					}
					succeeded++
					runTokens += rec.OutputTokens
					ttft = append(ttft, float64(rec.FirstTokenNs-rec.SentNs)/1e6)
					lat = append(lat, float64(rec.LastTokenNs-rec.SentNs)/1e6)
				}
				w := float64(last-first) / 1e9
				window += w
				tokens += runTokens
				perRunTput = append(perRunTput, float64(runTokens)/w)
				p95ttft = append(p95ttft, numpyPercentile(ttft, 95))
				p95lat = append(p95lat, numpyPercentile(lat, 95))
				pooledTTFT = append(pooledTTFT, ttft...)
			}
			mean := func(xs []float64) float64 {
				s := 0.0
				for _, x := range xs {
					s += x
				}
				return s / float64(len(xs))
			}
			mu := mean(perRunTput)
			ss := 0.0
			for _, x := range perRunTput {
				ss += (x - mu) * (x - mu)
			}
			wantCV := math.Sqrt(ss/float64(len(perRunTput)-1)) / mu
			a := c.Aggregate
			check := func(name string, got, want float64) {
				t.Helper()
				if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Errorf("%s %s: evidence %v, recomputed %v", c.Lane, name, got, want)
				}
			}
			check("succeeded", float64(a.Succeeded), float64(succeeded))
			check("failed", float64(a.Failed), float64(failed))
			check("output_token_throughput", a.OutputTokenThroughput, float64(tokens)/window)
			check("request_throughput", a.RequestThroughput, float64(succeeded)/window)
			check("ttft_p95_ms", *a.TTFTP95Ms, mean(p95ttft))
			check("latency_p95_ms", *a.LatencyP95Ms, mean(p95lat))
			check("pooled.ttft_p99_ms", *c.Pooled.TTFTP99Ms, numpyPercentile(pooledTTFT, 99))
			check("cv.output_token_throughput", c.CoefficientOfVariation["output_token_throughput"], wantCV)
		}
	}
}

func TestBuildEvidenceShape(t *testing.T) {
	ev := buildFixture(t)
	if ev.SchemaVersion != evidence.SchemaVersion || ev.EvidenceClass != "simulated-screen" {
		t.Errorf("schema %q class %q", ev.SchemaVersion, ev.EvidenceClass)
	}
	if len(ev.Models) != 2 || ev.Models[0].Name != "small" || len(ev.Models[0].Campaigns[0].Runs) != 3 {
		t.Fatalf("models: %+v", ev.Models)
	}
	small := ev.Models[0].Campaigns[0]
	if small.Aggregate.Failures[loadgen.FailServerError] != 3 {
		t.Errorf("failures by class: %v", small.Aggregate.Failures)
	}
	if small.Aggregate.Goodput == nil || small.Aggregate.GoodFraction == nil {
		t.Error("SLO set but no goodput/good_fraction")
	}
	iv, ok := small.ConfidenceIntervals.Intervals["output_token_throughput"]
	if !ok || !(iv.Low <= small.Aggregate.OutputTokenThroughput && small.Aggregate.OutputTokenThroughput <= iv.High) {
		t.Errorf("throughput %v outside its interval %+v", small.Aggregate.OutputTokenThroughput, iv)
	}
	if len(ev.Comparisons) != 1 {
		t.Fatalf("comparisons: %+v", ev.Comparisons)
	}
	r := ev.Comparisons[0].Ratios["small_over_big_output_token_throughput"]
	if r.Value <= 1 || r.CI95 == nil || r.Significant || !strings.Contains(r.Note, "needs at least 5 runs on each side") {
		t.Errorf("3 runs a side are too few to call anything significant, got %+v", r)
	}
	if len(ev.Preflight.Findings) != 1 {
		t.Errorf("preflight of the screen: %+v", ev.Preflight.Findings)
	}
	got := map[string]string{}
	for _, g := range small.Gates {
		got[g.Gate] = g.Status
	}
	want := map[string]string{"clean": evidence.StatusFail, "fast": evidence.StatusPass, "stable": evidence.StatusPass}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("gate %s on small: %s, want %s", k, got[k], v)
		}
	}
	if ev.GateSummary.ExitCode != evidence.ExitFail {
		t.Errorf("exit code %d, want %d", ev.GateSummary.ExitCode, evidence.ExitFail)
	}
	d, _ := evidence.Digest(ev)
	if d != ev.Digest {
		t.Errorf("digest %s, recomputed %s", ev.Digest, d)
	}
}

// TestBuildEvidenceDeterministic: the same input gives the same bytes.
func TestBuildEvidenceDeterministic(t *testing.T) {
	a, _ := json.Marshal(buildFixture(t))
	b, _ := json.Marshal(buildFixture(t))
	if string(a) != string(b) {
		t.Fatal("two builds of the same input differ")
	}
}

// TestTimeSeriesInFlight: requests in flight never exceed what the records
// say overlapped, and fall to zero at the end.
func TestTimeSeriesInFlight(t *testing.T) {
	// Closed loop at concurrency 2: each request starts when one finishes.
	var recs []loadgen.Record
	for i := 0; i < 10; i++ {
		slot := int64(i / 2)
		recs = append(recs, loadgen.Record{SentNs: slot * 1e6, DoneNs: (slot + 1) * 1e6, LastTokenNs: (slot + 1) * 1e6, OutputTokens: 3, ChunkNs: []int64{slot*1e6 + 1e5, slot*1e6 + 5e5, (slot + 1) * 1e6}})
	}
	inflight, tokens := timeSeries(recs)
	if len(inflight) != plotBins+1 || len(tokens) != plotBins {
		t.Fatalf("%d/%d points", len(inflight), len(tokens))
	}
	for _, p := range inflight[:plotBins] {
		if p[1] != 2 {
			t.Fatalf("in flight %v at %vs, want 2 throughout", p[1], p[0])
		}
	}
	if last := inflight[plotBins]; last[1] != 0 || last[0] != 0.005 {
		t.Errorf("last point %v, want 0 in flight at 0.005 s", last)
	}
	var total float64
	for _, p := range tokens {
		total += p[1] * 0.005 / plotBins
	}
	if math.Abs(total-30) > 1e-9 {
		t.Errorf("tokens/s integrate to %v tokens, want 30", total)
	}
}

// TestDigestPinned pins the digest of the fixture's evidence: a change of
// the canonicalisation, the schema or any figure shows here.
func TestDigestPinned(t *testing.T) {
	const want = "sha256:fbe58e0376225fb150730c82e8dd5c7d99978fe6161f8ecd444ceaddaec6ff46"
	if got := buildFixture(t).Digest; got != want {
		t.Errorf("digest %s, pinned %s; if the evidence changed on purpose, update the pin (and the golden files)", got, want)
	}
}

// TestLaneWithoutRuns: an apply interrupted before a lane ran still gives
// a document (every format renders), with the lane's gates inconclusive
// and no comparison with it.
func TestLaneWithoutRuns(t *testing.T) {
	in := fixtureInput()
	delete(in.Runs, "aaaa1111")
	evs, err := BuildEvidence(in)
	if err != nil {
		t.Fatal(err)
	}
	ev := evs[0]
	small := ev.Models[0].Campaigns[0]
	if len(small.Runs) != 0 || small.Aggregate.TTFTP95Ms != nil || len(small.CoefficientOfVariation) != 0 {
		t.Errorf("empty lane has figures: %+v", small.Aggregate)
	}
	for _, g := range small.Gates {
		if g.Status != evidence.StatusInconclusive {
			t.Errorf("gate %s on a lane without runs: %s", g.Gate, g.Status)
		}
	}
	if len(ev.Comparisons) != 0 {
		t.Errorf("comparisons: %+v", ev.Comparisons)
	}
	var md, page strings.Builder
	if err := WriteMarkdown(&md, ev); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, ev, screenRecords(&in, ev)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| Org/Small-0.6B | chat | L40S | 0 of 3 | 0.0 | – | – | – | 0 |") {
		t.Errorf("Markdown row of the empty lane:\n%s", md.String())
	}
}

// TestBootstrapProperties: identical runs give a zero-width interval at the
// point estimate and a CV of 0; two lanes with the same records compare as
// 1.0 and not significant; the same seed gives the same intervals.
func TestBootstrapProperties(t *testing.T) {
	in := fixtureInput()
	same := makeRecords(20, 16, 40, 5, 0.1, nil)
	for _, id := range []string{"aaaa1111", "bbbb2222"} {
		for i := range in.Runs[id] {
			in.Runs[id][i].Records = same
		}
	}
	ev, err := BuildEvidence(in)
	if err != nil {
		t.Fatal(err)
	}
	c := ev[0].Models[0].Campaigns[0]
	iv := c.ConfidenceIntervals.Intervals["output_token_throughput"]
	if iv.Low != iv.High || math.Abs(iv.Low-c.Aggregate.OutputTokenThroughput) > 1e-9 {
		t.Errorf("identical runs: interval %+v around %v", iv, c.Aggregate.OutputTokenThroughput)
	}
	if c.CoefficientOfVariation["output_token_throughput"] != 0 {
		t.Errorf("identical runs: cv %v", c.CoefficientOfVariation["output_token_throughput"])
	}
	for k, r := range ev[0].Comparisons[0].Ratios {
		if math.Abs(r.Value-1) > 1e-12 || r.Significant {
			t.Errorf("%s between identical lanes: %+v", k, r)
		}
	}
	// Different runs: intervals contain the estimate and are reproducible.
	a, _ := BuildEvidence(fixtureInput())
	b, _ := BuildEvidence(fixtureInput())
	ca, cb := a[0].Models[0].Campaigns[0], b[0].Models[0].Campaigns[0]
	for m, iv := range ca.ConfidenceIntervals.Intervals {
		if iv != cb.ConfidenceIntervals.Intervals[m] {
			t.Errorf("%s: %+v then %+v with the same seed", m, iv, cb.ConfidenceIntervals.Intervals[m])
		}
		if iv.Low > iv.High {
			t.Errorf("%s: interval %+v upside down", m, iv)
		}
	}
}

// TestSignificanceNeedsRuns: a clear difference is significant with 5 runs
// a side and never with 2, whatever the interval says.
func TestSignificanceNeedsRuns(t *testing.T) {
	for _, tc := range []struct {
		runs int
		want bool
	}{{2, false}, {4, false}, {5, true}} {
		evs, err := BuildEvidence(fixtureInputRuns(20, 16, tc.runs))
		if err != nil {
			t.Fatal(err)
		}
		r := evs[0].Comparisons[0].Ratios["small_over_big_output_token_throughput"]
		if r.CI95 == nil || r.CI95.Low <= 1 {
			t.Fatalf("%d runs: the fixture's difference should be clear, interval %+v", tc.runs, r.CI95)
		}
		if r.Significant != tc.want || (r.Note == "") == !tc.want {
			t.Errorf("%d runs: significant %v note %q, want significant %v", tc.runs, r.Significant, r.Note, tc.want)
		}
	}
}

// Each open-loop campaign records its arrival process in full, defaults
// spelt out (a gamma schedule's burstiness 1, the poisson kind), with its
// arrival curve: a reader (and calibrate) rebuilds the schedule the load
// generator sent from the evidence alone. A closed loop records none, so
// the evidence of closed loops is byte for byte what it was
// (TestDigestPinned, the golden files).
func TestEvidenceRecordsArrivalProcess(t *testing.T) {
	in := fixtureInput()
	small, big := &in.Plan.Lanes[0].Inputs, &in.Plan.Lanes[1].Inputs
	small.RequestRate, small.Arrival = 10, "gamma"
	big.RequestRate, big.ArrivalCurve, big.ArrivalCurveStepSeconds = 8, []float64{1, 3}, 2
	evs, err := BuildEvidence(in)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*evidence.ArrivalProcess{}
	for _, m := range evs[0].Models {
		got[m.Name] = m.Campaigns[0].Workload.ArrivalProcess
	}
	if p := got["small"]; p == nil || p.Kind != "gamma" || p.Burstiness != 1 || p.Curve != nil {
		t.Errorf("gamma lane: %+v, want kind gamma, burstiness 1, no curve", p)
	}
	if p := got["big"]; p == nil || p.Kind != "poisson" || p.Burstiness != 0 || p.Curve == nil || p.Curve.StepSeconds != 2 || len(p.Curve.Rates) != 2 || p.Curve.Rates[1] != 3 {
		t.Errorf("curve lane: %+v, want kind poisson and the curve [1 3] of 2 s steps", p)
	}
	b, _ := json.Marshal(evs[0])
	if !strings.Contains(string(b), `"arrival_process":{"kind":"gamma","burstiness":1}`) || !strings.Contains(string(b), `"arrival_process":{"kind":"poisson","curve":{"step_seconds":2,"rates":[1,3]}}`) {
		t.Errorf("the JSON does not record the arrival processes: %s", b)
	}
	if b, _ := json.Marshal(buildFixture(t)); strings.Contains(string(b), "arrival_process") {
		t.Error("a closed loop records an arrival process")
	}
}
