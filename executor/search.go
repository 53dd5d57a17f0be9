package executor

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/search"
	"github.com/infercrane/infercrane/planner/state"
)

// PointSpecFor returns run n of a searched lane: its point at load, with
// the point's concurrency or rate and request count.
func PointSpecFor(l *planner.Lane, n int, load float64) RunSpec {
	cp := *l
	cp.Inputs = planner.SearchPointInputs(l.Inputs, load)
	return RunSpecFor(&cp, n)
}

// searches holds the points of the searched lanes of one apply: those the
// state had when the apply started and those it measured since.
type searches struct {
	mu     sync.Mutex
	points map[string][]search.Point
	told   map[string]bool // lanes whose verdict was reported
}

// get returns lane l's measured points, reading the state's on first use
// (none for a rerun, which starts over).
func (s *searches) get(l *planner.Lane, snap *state.Snapshot) []search.Point {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.points == nil {
		s.points, s.told = map[string][]search.Point{}, map[string]bool{}
	}
	if pts, ok := s.points[l.ID]; ok {
		return pts
	}
	var pts []search.Point
	if rec := snap.Lanes[l.ID]; rec != nil && l.Action != planner.ActionRerun {
		pts = planner.SearchPoints(rec, l.Inputs.Search)
	}
	s.points[l.ID] = pts
	return pts
}

func (s *searches) add(id string, p search.Point) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.points[id] = append(s.points[id], p)
}

// nextPoint decides run n of a searched lane: the load to measure, or
// done when the points measured already decide the search. The points
// measured so far determine the next one, so a resumed apply measures
// exactly what an uninterrupted one would have.
func (a *applyRun) nextPoint(l *planner.Lane, n int) (load float64, done bool, err error) {
	pts := a.search.get(l, a.snap)
	spec := l.Inputs.Search
	start := 0.0
	if l.Search != nil {
		start = l.Search.Start
	}
	r := spec.Evaluate(start, pts)
	if r.Done() {
		if !a.search.announced(l.ID) {
			a.r.emit(Event{Type: EventSearchFinished, Lane: l.ID, Key: l.Key, Runs: r.Points, Message: searchVerdict(l, r)})
		}
		return 0, true, nil
	}
	if len(pts) != n-1 {
		return 0, false, fmt.Errorf("point %d of lane %s (%s) follows %d measured points, not %d; run plan and apply again", n, l.ID, l.Key, len(pts), n-1)
	}
	return r.Next, false, nil
}

// announced reports whether lane id's verdict was already reported, and
// marks it reported.
func (s *searches) announced(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.told[id]
	s.told[id] = true
	return was
}

// measured turns a committed run of a searched lane into its point.
func (a *applyRun) measured(l *planner.Lane, n int, load float64, sum loadgen.Summary) error {
	raw, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	m, err := search.MeasureFromSummary(raw)
	if err != nil {
		return err
	}
	p := l.Inputs.Search.NewPoint(load, m)
	a.search.add(l.ID, p)
	verdict := "meets every objective"
	if !p.Pass {
		verdict = fmt.Sprintf("misses %v", p.Broken)
	}
	a.r.emit(Event{Type: EventNote, Lane: l.ID, Key: l.Key, Run: n,
		Message: fmt.Sprintf("Search point %d of lane %s at %s %s: %s (ttft p95 %s, tpot p95 %s, latency p95 %s).",
			n, l.ID, fmtLoad(load), l.Inputs.Search.Unit(), verdict, fmtP95(m.TTFTP95Ms), fmtP95(m.TPOTP95Ms), fmtP95(m.LatencyP95Ms))})
	// Say at once when this point decides the search.
	if r := l.Inputs.Search.Evaluate(0, a.search.get(l, a.snap)); r.Done() && !a.search.announced(l.ID) {
		a.r.emit(Event{Type: EventSearchFinished, Lane: l.ID, Key: l.Key, Runs: r.Points, Message: searchVerdict(l, r)})
	}
	return nil
}

// searchVerdict is the sentence that ends a search.
func searchVerdict(l *planner.Lane, r search.Result) string {
	unit := l.Inputs.Search.Unit()
	switch r.Status {
	case search.StatusAboveRange:
		return fmt.Sprintf("Search of lane %s finished: every objective holds at the top of the range, capacity >= %s %s (%d points).", l.ID, fmtLoad(r.Capacity), unit, r.Points)
	case search.StatusBelowRange:
		return fmt.Sprintf("Search of lane %s finished: an objective already breaks at the bottom of the range, %s %s (%d points).", l.ID, fmtLoad(r.Upper), unit, r.Points)
	}
	upper := "unbracketed"
	if r.Upper > 0 {
		upper = "< " + fmtLoad(r.Upper)
	}
	return fmt.Sprintf("Search of lane %s finished (%s): capacity %s %s, bracket [%s, %s) after %d points.", l.ID, r.Status, fmtLoad(r.Capacity), unit, fmtLoad(r.Lower), upper, r.Points)
}

func fmtLoad(x float64) string { return fmt.Sprintf("%.4g", x) }

func fmtP95(v *float64) string {
	if v == nil || math.IsNaN(*v) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f ms", *v)
}
