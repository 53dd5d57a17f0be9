package planner

import (
	"fmt"
	"math"
	"strings"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/load"
	"github.com/infercrane/infercrane/planner/perf"
	"github.com/infercrane/infercrane/planner/search"
	"github.com/infercrane/infercrane/planner/state"
)

// LaneSearch is a capacity search's part of a lane: the knee the
// performance model predicts, the points it expects the search to run and
// their cost, and what the state already measured.
type LaneSearch struct {
	// Unit is the load's unit ("req/s" or "streams").
	Unit string `json:"unit"`
	// PredictedKnee is the largest load the model says meets every
	// objective (0: no prediction, or the bottom of the range already fails).
	PredictedKnee float64 `json:"predicted_knee"`
	// Start is the load of the first point: the predicted knee within the
	// range, or the range's geometric middle without a prediction.
	Start float64 `json:"start"`
	// Expected are the points still to run as the model predicts them
	// (after the points done); ExpectedResult is where they end.
	Expected       []PlannedPoint `json:"expected_points"`
	ExpectedResult search.Result  `json:"expected_result"`
	// Done are the points the state has measured, in order; Result is
	// the search's answer from them (nil before the first point).
	Done   []search.Point `json:"points_done,omitempty"`
	Result *search.Result `json:"result,omitempty"`
	// MaxGPUSeconds and MaxCostUSD bound the search: every point left up
	// to max_points at the cost of the dearest expected point.
	MaxGPUSeconds float64 `json:"max_gpu_seconds"`
	MaxCostUSD    float64 `json:"max_cost_usd"`
}

// PlannedPoint is one point the search expects to run, with the model's
// prediction of it and its cost.
type PlannedPoint struct {
	Load         float64  `json:"load"`
	Requests     int      `json:"requests"`
	Pass         bool     `json:"pass"`
	Broken       []string `json:"broken,omitempty"`
	TTFTP95Ms    float64  `json:"ttft_p95_ms"`
	TPOTP95Ms    float64  `json:"tpot_p95_ms"`
	LatencyP95Ms float64  `json:"latency_p95_ms"`
	LatencyP50Ms float64  `json:"latency_p50_ms"`
	RunSeconds   float64  `json:"run_seconds"`
	GPUSeconds   float64  `json:"gpu_seconds"`
	CostUSD      float64  `json:"cost_usd"`
}

// laneSearch picks the search block a lane runs: its shape's, else its
// screen's; nil for none.
func laneSearch(cfg *lang.Config, screen *lang.Screen, shape *lang.Shape) *lang.Search {
	name := shape.Search
	if name == "" {
		name = screen.Search
	}
	if name == "" {
		return nil
	}
	return cfg.Searches[name]
}

// searchSpec resolves a search block for the lane's inputs.
func searchSpec(s *lang.Search) *search.Spec {
	return &search.Spec{
		Name: s.Name, Vary: s.Vary, Min: s.Min, Max: s.Max,
		SLO:     search.SLO{TTFTP95Ms: s.SLO.TTFTP95Ms, TPOTP95Ms: s.SLO.TPOTP95Ms, LatencyP95Ms: s.SLO.LatencyP95Ms},
		Goodput: s.Goodput, Tolerance: s.Tolerance, MaxPoints: s.MaxPoints,
		Requests: s.Requests, DurationSeconds: s.Duration.Seconds(),
	}
}

// searchInputs rewrites a searched lane's load: the search sets the
// concurrency or rate of each point and its request count, so the shape's
// own load does not enter the lane's identity.
func searchInputs(in *LaneInputs, s *search.Spec) {
	in.Search = s
	in.Concurrency, in.RequestRate, in.Requests, in.Warmup, in.WarmupSeconds = 1, 0, s.Requests, 0, 0
	if s.Vary == search.VaryConcurrency {
		in.Arrival, in.Burstiness, in.ArrivalCurve, in.ArrivalCurveStepSeconds = "", 0, nil, 0
	} else if in.Arrival == "" {
		in.Arrival = "poisson"
	}
	// Goodput counts the requests that meet the search's objectives.
	in.SLOTTFTMs, in.SLOTPOTMs, in.SLOLatencyMs = s.SLO.TTFTP95Ms, s.SLO.TPOTP95Ms, s.SLO.LatencyP95Ms
}

// Predictor is what a capacity search asks of the performance model: how a
// lane behaves at one load, and how long a point of n requests takes.
type Predictor interface {
	Predict(load float64, requests int) (search.Measure, float64)
}

// perfPredictor answers from the lane's performance model (perf.Lane): a
// virtual-time run of the continuous-batching scheduler with the load
// generator's closed loop or seeded arrivals, so queueing beyond the batch
// or KV capacity shows in the predicted p95s as it does on a server.
// Predictions are cached by load.
//
// A lane on the simulated engine with speedup s runs the same model s
// times faster, so the predictor answers for the model at load/s (a rate;
// a concurrency is unchanged) with times divided by s.
type perfPredictor struct {
	lane    *perf.Lane
	in      LaneInputs
	spec    *search.Spec
	speedup float64
	cache   map[float64]prediction
}

type prediction struct {
	m    search.Measure
	secs float64
}

func newPredictor(l *lanePlan) *perfPredictor {
	return &perfPredictor{lane: l.Perf, in: l.Inputs, spec: l.Inputs.Search, speedup: SimSpeedup(l.Lane), cache: map[float64]prediction{}}
}

// SimSpeedup is the time compression of a lane on the simulated engine in
// model timing, read from its resolved executor settings; 1 on other
// executors and in constant timing. A format 1 plan's lane has no settings:
// its executor_config is read instead, where an unset speedup was 1.
func SimSpeedup(l *Lane) float64 {
	if !l.Inputs.Capabilities.Simulated {
		return 1
	}
	settings := l.ExecutorSettings
	if settings == nil {
		settings = l.Inputs.ExecutorConfig // format_version 1
	}
	if t, ok := settings["timing"].(string); ok && t != "model" {
		return 1
	}
	if s, ok := settings["speedup"].(float64); ok && s > 0 {
		return s
	}
	return 1
}

// Predict implements Predictor.
func (p *perfPredictor) Predict(load float64, requests int) (search.Measure, float64) {
	if c, ok := p.cache[load]; ok && c.m.Requests == requests {
		return c.m, c.secs
	}
	s := max(p.speedup, 1e-9)
	model := load
	if !p.spec.Integer() {
		model /= s
	}
	m, secs := p.predict(model, requests)
	scale := func(v *float64) *float64 {
		if v == nil {
			return nil
		}
		x := *v / s
		return &x
	}
	m.TTFTP95Ms, m.TPOTP95Ms, m.LatencyP95Ms = scale(m.TTFTP95Ms), scale(m.TPOTP95Ms), scale(m.LatencyP95Ms)
	m.RequestThroughput *= s
	m.OutputTokenThroughput *= s
	m.WindowSeconds /= s
	m.LatencyP50Ms /= s
	m.TTFTP50Ms /= s
	m.TPOTP50Ms /= s
	m.RequestedRate *= s
	p.cache[load] = prediction{m, secs / s}
	return m, secs / s
}

// maxPredictedRequests bounds the requests of one virtual-time run of a
// predicted point, so a long point costs the plan no more than this; the
// point's duration is scaled up from it.
const maxPredictedRequests = 1000

// predict runs the model at a load in the model's own time. A point that
// sends more requests than one virtual run simulates is predicted from the
// run's first maxPredictedRequests: the run's window is the point's steady
// state (a closed loop's always; an open loop's while the server keeps
// up), its failed fraction is the point's (never the requests it did not
// simulate), and where an open loop's queue still grows at the window's
// end (served below offered) its growth is extrapolated over the requests
// not simulated: each waits longer than the one before by the same step,
// so the point's TTFT and latency p95s grow by that step times 95% of
// them.
func (p *perfPredictor) predict(load float64, requests int) (search.Measure, float64) {
	in := SearchPointInputs(p.in, load)
	in.Requests = min(requests, maxPredictedRequests)
	ld, _ := laneLoad(in, p.lane.Engine.PrefixCaching)
	st, err := p.lane.Run(ld)
	if err != nil {
		// The model refuses the load (a request that cannot fit): every
		// objective is missed.
		return search.Measure{Requests: requests, Failed: requests, Saturated: true}, 0
	}
	simulated := in.Requests
	succeeded := requests
	if st.Succeeded < simulated {
		succeeded = int(math.Round(float64(requests) * float64(st.Succeeded) / float64(simulated)))
	}
	ttft, tpot, lat := st.TTFT.P95, st.TPOT.P95, st.Latency.P95
	m := search.Measure{
		Requests: requests, Succeeded: succeeded, Failed: requests - succeeded,
		TTFTP95Ms: &ttft, TPOTP95Ms: &tpot, LatencyP95Ms: &lat,
		RequestThroughput: st.RequestThroughput, OutputTokenThroughput: st.OutputTokenThroughput,
		WindowSeconds: st.WindowSeconds, LatencyP50Ms: st.Latency.P50, TTFTP50Ms: st.TTFT.P50, TPOTP50Ms: st.TPOT.P50,
	}
	if !p.spec.Integer() {
		m.RequestedRate = offeredRate(ld)
	}
	if requests > simulated && simulated > 1 {
		// The window the whole point takes at the simulated run's pace:
		// its sends (or completions) stretched to every request, plus one
		// median latency; the served rate stays the run's.
		served := (&search.Measure{Succeeded: st.Succeeded, WindowSeconds: st.WindowSeconds, LatencyP50Ms: st.Latency.P50}).ServedRate()
		span := st.WindowSeconds - st.Latency.P50/1000
		m.WindowSeconds = st.Latency.P50/1000 + span*float64(requests-1)/float64(simulated-1)
		if m.RequestedRate > 0 && served > 0 && served < m.RequestedRate {
			step := 1000 * (1/served - 1/m.RequestedRate) // ms more per request
			grow := 0.95 * float64(requests-simulated) * step
			ttft += grow
			lat += grow
		}
	}
	return m, st.DurationSeconds * float64(requests) / float64(in.Requests)
}

// offeredRate is the rate an open-loop schedule actually offers, (n-1) /
// span of the scheduled sends, as the load generator reports it.
func offeredRate(l perf.Load) float64 {
	a, err := load.NewArrivals(l.RequestRate, l.Arrival, l.Burstiness, l.Seed)
	if err != nil || l.Requests < 2 {
		return l.RequestRate
	}
	var last int64
	for i := 0; i < l.Requests; i++ {
		last = a.Next()
	}
	if last <= 0 {
		return l.RequestRate
	}
	return float64(l.Requests-1) / (float64(last) / 1e9)
}

// planSearch fills a searched lane's LaneSearch from the model's
// predictions and the points the state has. It returns the run seconds of
// the points still expected and of the dearest point.
func planSearch(l *lanePlan, pred Predictor) (expected, dearest float64) {
	s := l.Inputs.Search
	ls := l.Search
	oracle := func(load float64) search.Measure { m, _ := pred.Predict(load, s.RequestsAt(load)); return m }
	if pred != nil {
		ls.PredictedKnee = s.Knee(oracle)
		ls.Start = ls.PredictedKnee
	}
	if ls.Start <= 0 {
		ls.Start = math.Sqrt(s.Min * s.Max)
		if s.Integer() {
			ls.Start = math.Round(ls.Start)
		}
	}
	ls.Start = math.Min(math.Max(ls.Start, s.Min), s.Max)
	pts := append([]search.Point(nil), ls.Done...)
	if len(pts) > 0 {
		r := s.Evaluate(ls.Start, pts)
		ls.Result = &r
	}
	ls.Expected = []PlannedPoint{}
	if pred == nil {
		ls.ExpectedResult = s.Evaluate(ls.Start, pts)
		return 0, 0
	}
	for {
		r := s.Evaluate(ls.Start, pts)
		if r.Done() || !l.Work() {
			ls.ExpectedResult = r
			break
		}
		n := s.RequestsAt(r.Next)
		m, secs := pred.Predict(r.Next, n)
		p := s.NewPoint(r.Next, m)
		pts = append(pts, p)
		ls.Expected = append(ls.Expected, PlannedPoint{
			Load: p.Load, Requests: n, Pass: p.Pass, Broken: p.Broken,
			TTFTP95Ms: round(deref(m.TTFTP95Ms), 3), TPOTP95Ms: round(deref(m.TPOTP95Ms), 3), LatencyP95Ms: round(deref(m.LatencyP95Ms), 3),
			LatencyP50Ms: round(m.LatencyP50Ms, 3),
			RunSeconds:   round(secs, 3),
		})
		expected += secs
	}
	// The dearest point the search could run: the top of the range, or
	// beyond saturation where the server sets the pace.
	for _, load := range []float64{s.Min, s.Max, ls.Start} {
		_, secs := pred.Predict(load, s.RequestsAt(load))
		dearest = math.Max(dearest, secs)
	}
	for _, p := range ls.Expected {
		dearest = math.Max(dearest, p.RunSeconds)
	}
	return expected, dearest
}

// SearchPoints reads the points a lane's state has measured, in run order
// and without a gap from point 1.
func SearchPoints(rec *state.LaneRecord, s *search.Spec) []search.Point {
	var pts []search.Point
	for i, r := range rec.Results {
		if i >= len(rec.Completed) || rec.Completed[i] != i+1 || r.SearchLoad <= 0 {
			break
		}
		m, err := search.MeasureFromSummary(r.Summary)
		if err != nil {
			break
		}
		pts = append(pts, s.NewPoint(r.SearchLoad, m))
	}
	return pts
}

// applySearchState sets a searched lane's progress from the state: a
// search whose points already decide it is unchanged, otherwise it resumes
// after the points done.
func applySearchState(l *lanePlan, snap *state.Snapshot) {
	s := l.Inputs.Search
	l.Search = &LaneSearch{Unit: s.Unit()}
	rec := snap.Lanes[l.ID]
	if rec == nil || l.Action == ActionRerun {
		return // a new lane, or a rerun that starts over
	}
	pts := SearchPoints(rec, s)
	l.Search.Done = pts
	// Points count from 1 without a gap: the next one depends on all
	// before it, so a point after a lost one is measured again.
	l.RunsDone, l.RunsComplete = len(pts), nil
	if len(pts) == 0 {
		l.Action, l.Reason = ActionRun, "no point measured yet"
		return
	}
	// The start only matters before the first point, so any start gives
	// the same verdict here.
	r := s.Evaluate(math.Sqrt(s.Min*s.Max), pts)
	if r.Done() {
		l.Action = ActionNoop
		l.Reason = fmt.Sprintf("search finished in the state (%s after %s)", r.Status, plural(len(pts), "point"))
		return
	}
	l.Action = ActionRun
	l.Reason = fmt.Sprintf("%s of at most %d done; the search resumes", plural(len(pts), "point"), s.MaxPoints)
}

// searchChecks are the preflight findings of a searched lane.
func searchChecks(l *lanePlan, f *findings) {
	s, ls := l.Inputs.Search, l.Search
	name := fmt.Sprintf("lane %s (%s)", l.Key, l.ID)
	if s.Requests < search.SoundRequests {
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("search %q measures %d requests a point", s.Name, s.Requests),
			fmt.Sprintf("%s: a p95 over %d requests rests on the %d slowest; set requests to %d or more in search %q for a p95 that means something.",
				name, s.Requests, int(math.Ceil(0.05*float64(s.Requests))), search.SoundRequests, s.Name))
	}
	if ls == nil || !l.Estimate.Available {
		f.add(SeverityNote, l.ID, "", fmt.Sprintf("search %q has no predicted knee", s.Name),
			fmt.Sprintf("%s: without a performance estimate the search starts at %g %s, the geometric middle of the range.", name, ls.Start, ls.Unit))
		return
	}
	switch {
	case ls.PredictedKnee >= s.Max:
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("predicted capacity is above search %q's range", s.Name),
			fmt.Sprintf("%s: the model predicts every objective holds at %g %s, the top of the range, so the search will likely only say capacity >= %g. Raise the range's maximum in search %q.",
				name, s.Max, ls.Unit, s.Max, s.Name))
	case ls.PredictedKnee == 0:
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("predicted capacity is below search %q's range", s.Name),
			fmt.Sprintf("%s: the model predicts an objective already breaks at %g %s, the bottom of the range. Lower the range's minimum or loosen the slo in search %q.",
				name, s.Min, ls.Unit, s.Name))
	}
	if s.Integer() && float64(s.Requests) < 20*ls.Start {
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("search %q points are short for their concurrency", s.Name),
			fmt.Sprintf("%s: at %g streams, %d requests make each stream send %.0f; the first wave arrives together and weighs in the p95. Set requests to at least %d in search %q.",
				name, ls.Start, s.Requests, float64(s.Requests)/ls.Start, int(20*ls.Start), s.Name))
	}
	if len(ls.Expected) > 0 {
		p := ls.Expected[0]
		if p.RunSeconds < 5*p.LatencyP50Ms/1000 {
			// A request_rate point is lengthened with duration; a
			// concurrency point (which takes no duration) with requests.
			fix := fmt.Sprintf("Set duration in search %q (30s or more).", s.Name)
			if s.Integer() {
				need := s.Requests + 1
				if p.RunSeconds > 0 {
					need = max(need, int(math.Ceil(float64(p.Requests)*5*p.LatencyP50Ms/1000/p.RunSeconds)))
				}
				fix = fmt.Sprintf("Raise requests in search %q to at least %d (a concurrency point is sized by requests).", s.Name, need)
			}
			f.add(SeverityWarning, l.ID, "", fmt.Sprintf("search %q points are too short to load the server", s.Name),
				fmt.Sprintf("%s: at %.4g %s a point of %d requests lasts about %.1f s, under 5 request latencies (%.0f ms each), so the server never reaches a steady queue and the p95s describe a burst, not a load. %s",
					name, p.Load, ls.Unit, p.Requests, p.RunSeconds, p.LatencyP50Ms, fix))
		}
	}
	if ls.ExpectedResult.Status == search.StatusMaxPoints {
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("search %q may not converge in %d points", s.Name, s.MaxPoints),
			fmt.Sprintf("%s: the model expects the bracket to be wider than the tolerance %g after max_points; raise max_points or the tolerance in search %q.", name, s.Tolerance, s.Name))
	}
}

// searchLine renders a searched lane's plan for the text output.
func searchLine(l *Lane) string {
	s, ls := l.Inputs.Search, l.Search
	if s == nil || ls == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "search %q over %s [%g, %g] %s, %s, tolerance %g, at most %d points of %d+ requests",
		s.Name, s.Vary, s.Min, s.Max, ls.Unit, s.Describe(), s.Tolerance, s.MaxPoints, s.Requests)
	if ls.PredictedKnee > 0 {
		fmt.Fprintf(&b, "; predicted knee %.4g %s", ls.PredictedKnee, ls.Unit)
	}
	if len(ls.Done) > 0 {
		fmt.Fprintf(&b, "; %s done", plural(len(ls.Done), "point"))
		if ls.Result != nil {
			fmt.Fprintf(&b, " (capacity >= %.4g %s", ls.Result.Capacity, ls.Unit)
			if ls.Result.Upper > 0 {
				fmt.Fprintf(&b, ", < %.4g", ls.Result.Upper)
			}
			b.WriteString(")")
		}
	}
	if len(ls.Expected) > 0 {
		loads := make([]string, len(ls.Expected))
		for i, p := range ls.Expected {
			loads[i] = fmt.Sprintf("%.4g", p.Load)
		}
		fmt.Fprintf(&b, "; expects %s at %s, then %s",
			plural(len(ls.Expected), "point"), strings.Join(loads, ", "), ls.ExpectedResult.Status)
		if ls.MaxGPUSeconds > 0 {
			fmt.Fprintf(&b, "; at most %s GPU-s, %s", fmtGPUSeconds(ls.MaxGPUSeconds), fmtUSD(ls.MaxCostUSD))
		}
	}
	return b.String()
}

// SearchPointInputs are a searched lane's inputs for its point at load:
// that concurrency (closed loop) or that rate (open loop, uncapped), and
// the point's request count.
func SearchPointInputs(in LaneInputs, load float64) LaneInputs {
	s := in.Search
	if s == nil {
		return in
	}
	in.Requests = s.RequestsAt(load)
	if s.Integer() {
		in.Concurrency, in.RequestRate = int(math.Round(load)), 0
	} else {
		in.Concurrency, in.RequestRate = 0, load
	}
	return in
}

// estimateSearch is a searched lane's estimate: the steady state at the
// first point, and the time and cost of the points the search expects to
// run plus the lane's share (of working lanes on its deployment) of the
// start-up. The search's bound (every point up to max_points at the
// dearest point's cost) goes into LaneSearch.
func estimateSearch(l *lanePlan, working int) Estimate {
	pred := newPredictor(l)
	expected, dearest := planSearch(l, pred)
	ls := l.Search
	m, secs := pred.Predict(ls.Start, l.Inputs.Search.RequestsAt(ls.Start))
	e := Estimate{Available: true}
	e.TTFTP95Ms, e.TPOTP95Ms, e.LatencyP95Ms = deref(m.TTFTP95Ms), deref(m.TPOTP95Ms), deref(m.LatencyP95Ms)
	e.TTFTMs, e.TPOTMs, e.LatencyMs = m.TTFTP50Ms, m.TPOTP50Ms, m.LatencyP50Ms
	e.RequestThroughput, e.OutputTokenThroughput, e.RunSeconds = m.RequestThroughput, m.OutputTokenThroughput, secs
	if !l.Work() {
		return e
	}
	if deploys(l.Inputs) && working > 0 {
		e.StartupSeconds = perf.StartupSeconds(l.arch, l.hw) / float64(working)
	}
	e.WallSeconds = e.StartupSeconds + expected
	gpus := float64(l.hw.Count)
	price := 0.0
	if Billed(l.Inputs) {
		price = l.hw.GPU.PricePerSecond
		e.GPUSeconds = e.WallSeconds * gpus
		e.CostUSD = e.GPUSeconds * price
	}
	for i := range ls.Expected {
		p := &ls.Expected[i]
		if Billed(l.Inputs) {
			p.GPUSeconds = round(p.RunSeconds*gpus, 3)
			p.CostUSD = round(p.RunSeconds*gpus*price, 6)
		}
	}
	if Billed(l.Inputs) {
		left := float64(max(l.Inputs.Search.MaxPoints-len(ls.Done), 0))
		ls.MaxGPUSeconds = round((e.StartupSeconds+left*dearest)*gpus, 3)
		ls.MaxCostUSD = round(ls.MaxGPUSeconds*price, 6)
	}
	return e
}

// deref is *v, or 0 for nil.
func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// fmtGPUSeconds prints GPU-seconds without a fraction.
func fmtGPUSeconds(x float64) string { return fmt.Sprintf("%.0f", x) }
