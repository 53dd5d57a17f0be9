// Package search finds a lane's capacity at SLO: the largest load (request
// rate or concurrency) whose measured p95 latencies and goodput meet the
// objectives. It is pure: the planner drives it with the performance
// model's predictions to predict the knee and the points a search will run,
// and apply drives it with measured points, so both take the same steps.
//
// The method is bracketing from the predicted knee followed by bisection in
// log space. The first point is the predicted knee. Until one point passes
// and a higher one fails, the search steps outward from the last point by a
// factor that doubles in log space each time, starting at 1 + tolerance (so
// a good prediction is bracketed in two points and a poor one still in
// O(log) points). Once bracketed it measures the geometric mean of the
// bracket until the bracket's relative width is within the tolerance. Log
// space makes the tolerance scale-free (a 5% bracket at 0.5 req/s costs the
// same points as at 50 req/s); bisection rather than interpolation on the
// metrics, because p95 latency against load is flat and then nearly
// vertical at the knee (queueing grows like 1/(1-utilisation)), which makes
// secant or regula-falsi steps overshoot badly on noisy points.
//
// The next point depends only on the points already measured, in order, so
// a resumed search continues exactly where it stopped and never measures a
// load twice.
package search

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// What a search varies.
const (
	VaryRequestRate = "request_rate"
	VaryConcurrency = "concurrency"
)

// Varies lists the accepted values of a search's vary.
var Varies = []string{VaryRequestRate, VaryConcurrency}

// Defaults of a search block.
const (
	DefaultGoodput   = 0.95
	DefaultTolerance = 0.05
	DefaultMaxPoints = 8
	DefaultRequests  = 200
	// MinRequests is the fewest measured requests a point may have: with
	// fewer than 20 the p95 is an interpolation between the two slowest
	// requests and says nothing about the tail.
	MinRequests = 20
	// SoundRequests is the point size below which the plan warns that the
	// p95 rests on fewer than 5 requests above it.
	SoundRequests = 100
)

// SLO names, as they appear in evidence and diagnostics.
const (
	SLOTTFT    = "ttft_p95_ms"
	SLOTPOT    = "tpot_p95_ms"
	SLOLatency = "latency_p95_ms"
	SLOGoodput = "goodput"
	// SLOThroughput is the implicit objective of a request_rate search:
	// the server keeps up, serving at least KeepUp of the rate offered.
	// A short run at a rate just above saturation can still show fine
	// p95s (the queue has not grown long yet); this catches it.
	SLOThroughput = "throughput"
)

// KeepUp is the fraction of the offered rate (Measure.RequestedRate) a
// request_rate point must serve (Measure.ServedRate): about all of it below
// saturation, only what the server can above it.
const KeepUp = 0.9

// SLO are the p95 objectives; zero fields are unset.
type SLO struct {
	TTFTP95Ms    float64 `json:"ttft_p95_ms,omitempty"`
	TPOTP95Ms    float64 `json:"tpot_p95_ms,omitempty"`
	LatencyP95Ms float64 `json:"latency_p95_ms,omitempty"`
}

// Spec is a resolved search: what it varies, where, against which
// objectives, and how finely. It is part of a lane's inputs.
type Spec struct {
	Name string  `json:"name"`
	Vary string  `json:"vary"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	SLO  SLO     `json:"slo"`
	// Goodput is the fraction of a point's requests (succeeded and failed)
	// that must meet every SLO individually; 0 checks none.
	Goodput float64 `json:"goodput"`
	// Tolerance is the relative width hi/lo - 1 at which the search stops.
	Tolerance float64 `json:"tolerance"`
	MaxPoints int     `json:"max_points"`
	// Requests is the fewest measured requests of a point; DurationSeconds
	// (request_rate only) raises a point's count to rate x duration.
	Requests        int     `json:"requests"`
	DurationSeconds float64 `json:"duration_seconds,omitempty"`
}

// Integer reports whether loads are whole numbers (concurrency).
func (s Spec) Integer() bool { return s.Vary == VaryConcurrency }

// Unit is the load's unit for display ("req/s" or "streams").
func (s Spec) Unit() string {
	if s.Integer() {
		return "streams"
	}
	return "req/s"
}

// RequestsAt is the number of measured requests of a point at load.
func (s Spec) RequestsAt(load float64) int {
	n := max(s.Requests, 1)
	if s.Vary == VaryRequestRate && s.DurationSeconds > 0 {
		n = max(n, int(math.Ceil(load*s.DurationSeconds-1e-9)))
	}
	return n
}

// Measure is what one point measured (or the model predicted) at a load.
type Measure struct {
	Requests  int `json:"requests"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// P95s are nil when no request succeeded (or the API does not stream,
	// for TTFT and TPOT).
	TTFTP95Ms    *float64 `json:"ttft_p95_ms,omitempty"`
	TPOTP95Ms    *float64 `json:"tpot_p95_ms,omitempty"`
	LatencyP95Ms *float64 `json:"latency_p95_ms,omitempty"`
	// GoodFraction is the fraction of requests meeting every SLO.
	GoodFraction          *float64 `json:"good_fraction,omitempty"`
	RequestThroughput     float64  `json:"request_throughput"`
	OutputTokenThroughput float64  `json:"output_token_throughput"`
	WindowSeconds         float64  `json:"window_seconds,omitempty"`
	// RequestedRate is the rate the open-loop schedule actually offered
	// ((n-1) / span of the scheduled sends); 0 for a closed loop.
	RequestedRate float64 `json:"requested_rate,omitempty"`
	// LatencyP50Ms is the median latency: the window less it estimates
	// the span of the sends when the server keeps up.
	LatencyP50Ms float64 `json:"latency_p50_ms,omitempty"`
	// TTFTP50Ms and TPOTP50Ms are the medians the model predicts for the
	// point (0 when unknown: measured points leave them out).
	TTFTP50Ms float64 `json:"ttft_p50_ms,omitempty"`
	TPOTP50Ms float64 `json:"tpot_p50_ms,omitempty"`
	// Saturated marks a prediction whose offered load exceeds what the
	// server can serve: its queue grows without bound, so latency SLOs
	// break however loose they are.
	Saturated bool `json:"saturated,omitempty"`
}

// ServedRate is the rate at which the server took the requests: the
// succeeded requests after the first over the window less the median
// latency. When the server keeps up, latency is stationary, the last
// request's is about the median and this is the offered rate; when it
// falls behind, every request waits longer than the one before, the last
// one's latency exceeds the median and this falls below the offered rate.
// 0 when unknown.
func (m Measure) ServedRate() float64 {
	span := m.WindowSeconds - m.LatencyP50Ms/1000
	if m.Succeeded < 2 || span <= 0 {
		return 0
	}
	return float64(m.Succeeded-1) / span
}

// summaryJSON is the part of a load generator summary (loadgen.Summary's
// JSON) a search reads.
type summaryJSON struct {
	Requests              int      `json:"requests"`
	Succeeded             int      `json:"succeeded"`
	Failed                int      `json:"failed"`
	WindowSeconds         float64  `json:"window_seconds"`
	RequestThroughput     float64  `json:"request_throughput"`
	OutputTokenThroughput float64  `json:"output_token_throughput"`
	GoodFraction          *float64 `json:"good_fraction"`
	RequestedRate         *float64 `json:"requested_rate"`
	TTFT                  distJSON `json:"ttft_ms"`
	TPOT                  distJSON `json:"tpot_ms"`
	Latency               distJSON `json:"latency_ms"`
}

type distJSON struct {
	Count int     `json:"count"`
	P95   float64 `json:"p95"`
	P50   float64 `json:"p50"`
}

func (d distJSON) p95() *float64 {
	if d.Count == 0 {
		return nil
	}
	v := d.P95
	return &v
}

// MeasureFromSummary reads a run's summary as the journal keeps it (the
// load generator's summary JSON).
func MeasureFromSummary(raw []byte) (Measure, error) {
	var s summaryJSON
	if err := json.Unmarshal(raw, &s); err != nil {
		return Measure{}, fmt.Errorf("read a search point's summary: %w", err)
	}
	m := Measure{
		Requests: s.Requests, Succeeded: s.Succeeded, Failed: s.Failed,
		TTFTP95Ms: s.TTFT.p95(), TPOTP95Ms: s.TPOT.p95(), LatencyP95Ms: s.Latency.p95(),
		GoodFraction: s.GoodFraction, RequestThroughput: s.RequestThroughput,
		OutputTokenThroughput: s.OutputTokenThroughput, WindowSeconds: s.WindowSeconds,
	}
	if s.RequestedRate != nil {
		m.RequestedRate = *s.RequestedRate
	}
	m.LatencyP50Ms = s.Latency.P50
	return m, nil
}

// Point is one measured (or predicted) load with its verdict.
type Point struct {
	Load float64 `json:"load"`
	Measure
	Pass bool `json:"pass"`
	// Broken names the objectives the point missed (SLO names, goodput).
	Broken []string `json:"broken,omitempty"`
}

// Judge decides whether m meets the spec's objectives and names the ones
// it misses. A p95 that could not be measured (no request succeeded) counts
// as missed.
func (s Spec) Judge(m Measure) (bool, []string) {
	var broken []string
	check := func(name string, slo float64, v *float64) {
		if slo <= 0 {
			return
		}
		if m.Saturated || v == nil || *v > slo {
			broken = append(broken, name)
		}
	}
	check(SLOTTFT, s.SLO.TTFTP95Ms, m.TTFTP95Ms)
	check(SLOTPOT, s.SLO.TPOTP95Ms, m.TPOTP95Ms)
	check(SLOLatency, s.SLO.LatencyP95Ms, m.LatencyP95Ms)
	if s.Goodput > 0 {
		gf := m.GoodFraction
		if gf == nil && m.Succeeded+m.Failed > 0 {
			v := float64(m.Succeeded) / float64(m.Succeeded+m.Failed)
			gf = &v
		}
		if m.Saturated || gf == nil || *gf < s.Goodput-1e-12 {
			broken = append(broken, SLOGoodput)
		}
	}
	if s.Vary == VaryRequestRate && (m.Saturated || m.RequestedRate > 0 && m.ServedRate() < KeepUp*m.RequestedRate) {
		broken = append(broken, SLOThroughput)
	}
	return len(broken) == 0, broken
}

// NewPoint judges m at load.
func (s Spec) NewPoint(load float64, m Measure) Point {
	pass, broken := s.Judge(m)
	return Point{Load: load, Measure: m, Pass: pass, Broken: broken}
}

// Status is where a search stands.
type Status string

// Search statuses.
const (
	// StatusRunning: more points are due.
	StatusRunning Status = "running"
	// StatusConverged: a passing and a failing point are within the tolerance.
	StatusConverged Status = "converged"
	// StatusMaxPoints: max_points were measured before convergence.
	StatusMaxPoints Status = "max_points"
	// StatusAboveRange: the top of the range still meets every SLO.
	StatusAboveRange Status = "above_range"
	// StatusBelowRange: the bottom of the range already misses an SLO.
	StatusBelowRange Status = "below_range"
)

// Result is a search's answer so far.
type Result struct {
	Status Status `json:"status"`
	// Capacity is the highest load that passed below the lowest that
	// failed (0 when none passed): the conservative end of the bracket.
	Capacity float64 `json:"capacity"`
	// Lower and Upper bracket the true capacity; Upper is 0 while no point
	// failed.
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper,omitempty"`
	// Points is the number of points measured.
	Points int `json:"points"`
	// Next is the load of the next point while Status is running.
	Next float64 `json:"next,omitempty"`
	// NonMonotone lists passing loads above a failing one (noise or an
	// unstable server); the bracket ignores them.
	NonMonotone []float64 `json:"non_monotone,omitempty"`
}

// Done reports whether the search needs no more points.
func (r Result) Done() bool { return r.Status != StatusRunning }

// bracket finds the lowest failing load and the highest passing one below it.
func bracket(pts []Point) (lo, hi float64, odd []float64) {
	hi = math.Inf(1)
	for _, p := range pts {
		if !p.Pass && p.Load < hi {
			hi = p.Load
		}
	}
	for _, p := range pts {
		if p.Pass {
			if p.Load < hi {
				lo = math.Max(lo, p.Load)
			} else {
				odd = append(odd, p.Load)
			}
		}
	}
	sort.Float64s(odd)
	return lo, hi, odd
}

// Evaluate returns the result of the points measured so far and, while the
// search is running, the load of the next point. start is where the search
// begins (the predicted knee; the geometric middle of the range when
// there is no prediction).
func (s Spec) Evaluate(start float64, pts []Point) Result {
	lo, hi, odd := bracket(pts)
	r := Result{Capacity: lo, Lower: lo, Points: len(pts), NonMonotone: odd}
	if !math.IsInf(hi, 1) {
		r.Upper = hi
	}
	finish := func(st Status) Result { r.Status = st; return r }
	switch {
	case lo > 0 && lo >= s.Max*(1-1e-9):
		return finish(StatusAboveRange)
	case !math.IsInf(hi, 1) && hi <= s.Min*(1+1e-9):
		return finish(StatusBelowRange)
	case lo > 0 && !math.IsInf(hi, 1) && s.narrow(lo, hi):
		return finish(StatusConverged)
	case len(pts) >= s.MaxPoints:
		return finish(StatusMaxPoints)
	}
	next, ok := s.next(start, lo, hi, pts)
	if !ok {
		// No unmeasured load is left between lo and hi (whole numbers).
		return finish(StatusConverged)
	}
	r.Status, r.Next = StatusRunning, next
	return r
}

// narrow reports whether the bracket is within the tolerance.
func (s Spec) narrow(lo, hi float64) bool {
	if s.Integer() && hi-lo <= 1+1e-9 {
		return true
	}
	return hi/lo <= (1+s.Tolerance)*(1+loadPrecision)
}

// next picks the next load; false when no unmeasured load is left.
func (s Spec) next(start, lo, hi float64, pts []Point) (float64, bool) {
	if len(pts) == 0 {
		if start <= 0 || math.IsNaN(start) {
			start = math.Sqrt(s.Min * s.Max)
		}
		return s.clamp(start, 0, math.Inf(1))
	}
	delta := math.Log1p(s.Tolerance)
	step := delta * math.Pow(2, float64(len(pts)-1))
	switch {
	case lo > 0 && !math.IsInf(hi, 1):
		return s.clamp(math.Sqrt(lo*hi), lo, hi)
	case lo > 0: // every point passed: step up
		return s.clamp(lo*math.Exp(step), lo, math.Inf(1))
	default: // every point failed: step down
		return s.clamp(hi*math.Exp(-step), 0, hi)
	}
}

// clamp puts x in the range and strictly between lo and hi, rounding to a
// whole number for concurrency; false when no such load exists.
func (s Spec) clamp(x, lo, hi float64) (float64, bool) {
	x = math.Min(math.Max(x, s.Min), s.Max)
	if s.Integer() {
		x = math.Round(x)
		if x <= lo {
			x = math.Floor(lo) + 1
		}
		if x >= hi {
			x = math.Ceil(hi) - 1
		}
		if x <= lo || x >= hi || x < math.Ceil(s.Min) || x > math.Floor(s.Max) {
			return 0, false
		}
		return x, true
	}
	x = roundLoad(x)
	if x <= lo || x >= hi {
		return 0, false
	}
	return x, true
}

// loadPrecision is the relative precision of roundLoad, allowed as slack
// when comparing a bracket with the tolerance.
const loadPrecision = 1e-5

// roundLoad keeps 6 significant digits, so loads print and hash the same
// on every platform.
func roundLoad(x float64) float64 {
	if x <= 0 {
		return x
	}
	p := math.Pow10(5 - int(math.Floor(math.Log10(x))))
	return math.Round(x*p) / p
}

// Oracle answers what a lane does at a load; the planner's performance
// model is one.
type Oracle func(load float64) Measure

// Simulate runs the whole search against an oracle, from start, and returns
// its points and result: the points a search expects to run when the
// oracle is the performance model.
func (s Spec) Simulate(start float64, o Oracle) ([]Point, Result) {
	var pts []Point
	for {
		r := s.Evaluate(start, pts)
		if r.Done() {
			return pts, r
		}
		pts = append(pts, s.NewPoint(r.Next, o(r.Next)))
	}
}

// Knee is the largest load in the range the oracle says passes, found to a
// relative precision of a quarter of the tolerance (1 for concurrency),
// finer than the search can tell apart, assuming the verdict is monotone
// in the load; 0 when even the bottom of the range fails.
func (s Spec) Knee(o Oracle) float64 {
	pass := func(x float64) bool { p, _ := s.Judge(o(x)); return p }
	if pass(s.Max) {
		return s.Max
	}
	if !pass(s.Min) {
		return 0
	}
	lo, hi := s.Min, s.Max
	precision := 1 + max(s.Tolerance/4, 0.001)
	for i := 0; i < 100; i++ {
		if s.Integer() && hi-lo <= 1 || !s.Integer() && hi/lo <= precision {
			break
		}
		mid := math.Sqrt(lo * hi)
		if s.Integer() {
			mid = math.Round(mid)
			if mid <= lo || mid >= hi {
				break
			}
		}
		if pass(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if s.Integer() {
		return lo
	}
	return roundLoad(lo)
}

// Breaks returns, per objective the points break, the lowest load at which
// it broke, for "where each SLO breaks".
func Breaks(pts []Point) map[string]float64 {
	out := map[string]float64{}
	for _, p := range pts {
		for _, b := range p.Broken {
			if v, ok := out[b]; !ok || p.Load < v {
				out[b] = p.Load
			}
		}
	}
	return out
}

// Describe renders a spec's objectives briefly ("ttft p95 <= 2000 ms, goodput >= 0.95").
func (s Spec) Describe() string {
	var parts []string
	if s.SLO.TTFTP95Ms > 0 {
		parts = append(parts, fmt.Sprintf("ttft p95 <= %g ms", s.SLO.TTFTP95Ms))
	}
	if s.SLO.TPOTP95Ms > 0 {
		parts = append(parts, fmt.Sprintf("tpot p95 <= %g ms", s.SLO.TPOTP95Ms))
	}
	if s.SLO.LatencyP95Ms > 0 {
		parts = append(parts, fmt.Sprintf("latency p95 <= %g ms", s.SLO.LatencyP95Ms))
	}
	if s.Goodput > 0 {
		parts = append(parts, fmt.Sprintf("goodput >= %g", s.Goodput))
	}
	return strings.Join(parts, ", ")
}
