package planner

import (
	"math"
	"testing"
	"time"

	"github.com/infercrane/infercrane/lang"
)

// exampleCapacity loads examples/capacity-qwen with its search's duration
// and requests changed (0: as written) and plans it; it returns each lane's
// predicted knee by model and GPU ("qwen06/l40s").
func exampleCapacity(t *testing.T, duration time.Duration, requests int, slo *lang.SearchSLO, maxLoad float64) map[string]float64 {
	t.Helper()
	cfg, diags := lang.Load("../examples/capacity-qwen", lang.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, s := range cfg.Searches {
		if duration > 0 {
			s.Duration = duration
		}
		if requests > 0 {
			s.Requests = requests
		}
		if slo != nil {
			s.SLO = *slo
		}
		if maxLoad > 0 {
			s.Max = maxLoad
		}
	}
	p := build(t, cfg)
	knees := map[string]float64{}
	for _, l := range p.Lanes {
		if l.Search == nil {
			t.Fatalf("lane %s has no search", l.Key)
		}
		knees[l.Model+"/"+l.GPU] = l.Search.PredictedKnee
	}
	return knees
}

// The virtual run of a search point simulates at most maxPredictedRequests
// requests; it counted the rest as failed, so goodput collapsed above
// 0.95 x 1000 / duration req/s: both models on an L40S "had" 17.47 req/s
// even with absurdly loose SLOs, and doubling duration halved every knee.
// A knee must not move with the point's duration beyond the search's
// tolerance, and the two L40S knees differ as their models do.
func TestCapacityKneeDoesNotMoveWithDuration(t *testing.T) {
	base := exampleCapacity(t, 0, 0, nil, 0)
	longer := exampleCapacity(t, 120*time.Second, 0, nil, 0)
	for k, v := range base {
		if w := longer[k]; math.Abs(w/v-1) > 0.05+1e-9 {
			t.Errorf("%s: knee %.3g req/s at 60 s points, %.3g at 120 s: it moved with the duration", k, v, w)
		}
	}
	if a, b := base["qwen06/l40s"], base["qwen17/l40s"]; !(a > 1.1*b) {
		t.Errorf("L40S knees: Qwen3-0.6B %.4g req/s, Qwen3-1.7B %.4g: the smaller model must carry clearly more", a, b)
	}
	// With SLOs nothing but throughput can break (a range wide enough for
	// it), each knee is where the server stops keeping up: the 0.6B model's
	// above the 1.7B model's by more than the search's tolerance, both
	// above the artefact's 0.95 x 1000 / 60 s.
	loose := exampleCapacity(t, 0, 0, &lang.SearchSLO{TTFTP95Ms: 1e7, TPOTP95Ms: 1e6}, 2000)
	if a, b := loose["qwen06/l40s"], loose["qwen17/l40s"]; !(a > 1.05*b && b > 20) {
		t.Errorf("loose SLOs: L40S knees %.4g and %.4g req/s (the artefact put both at 0.95 x 1000 / 60 s)", a, b)
	}
}

// A concurrency search whose points send more requests than one virtual
// run simulates predicted that one stream already fails.
func TestConcurrencySearchWithManyRequests(t *testing.T) {
	cfg := searchFixture()
	s := cfg.Searches["capacity"]
	s.Vary, s.Min, s.Max, s.Requests, s.Duration = "concurrency", 1, 64, 2000, 0
	p := build(t, cfg)
	for _, l := range p.Lanes {
		if l.Search.PredictedKnee < 2 {
			t.Errorf("lane %s: predicted knee %g streams with 2,000 requests a point", l.Key, l.Search.PredictedKnee)
		}
	}
}

// A search lane's predicted medians are medians: they were set to the
// p95s, so the report flagged the measured TTFT p50 as -89.5% off.
func TestSearchLanePredictsMedians(t *testing.T) {
	p := build(t, searchFixture())
	for _, l := range p.Lanes {
		e := l.Estimate
		if !(e.TTFTMs > 0 && e.TTFTMs < e.TTFTP95Ms) || !(e.LatencyMs > 0 && e.LatencyMs < e.LatencyP95Ms) || !(e.TPOTMs > 0 && e.TPOTMs <= e.TPOTP95Ms) {
			t.Errorf("lane %s: p50s ttft %.2f tpot %.2f latency %.2f, p95s %.2f %.2f %.2f", l.Key, e.TTFTMs, e.TPOTMs, e.LatencyMs, e.TTFTP95Ms, e.TPOTP95Ms, e.LatencyP95Ms)
		}
	}
}
