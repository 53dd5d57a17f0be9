package report

import (
	"encoding/json"
	"sort"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/search"
)

// pointRun is a run with the load its search point measured.
type pointRun struct {
	run  int
	load float64
	sum  *loadgen.Summary
}

// buildCapacity computes a searched lane's capacity evidence from its runs
// (each a point) and returns the index into runs of the run at capacity
// (-1: none).
func buildCapacity(p *planner.Plan, l *planner.Lane, runs []pointRun) (*evidence.Capacity, int) {
	s := l.Inputs.Search
	c := &evidence.Capacity{
		Search: s.Name, Vary: s.Vary, Unit: s.Unit(), Range: [2]float64{s.Min, s.Max}, SLO: s.SLO,
		Goodput: s.Goodput, Tolerance: s.Tolerance, MaxPoints: s.MaxPoints,
		Points: []evidence.CapacityPoint{}, Breaks: map[string]float64{}, GPUCount: max(l.Inputs.GPUCount, 1),
	}
	start := 0.0
	if l.Search != nil {
		c.PredictedKnee, start = l.Search.PredictedKnee, l.Search.Start
		c.ExpectedPoints = len(l.Search.Done) + len(l.Search.Expected)
	}
	for _, a := range p.Assumptions {
		if a.GPU == l.GPU {
			c.PricePerSecond = a.PricePerSecond
		}
	}
	var pts []search.Point
	for _, r := range runs {
		raw, err := json.Marshal(r.sum)
		if err != nil {
			continue
		}
		m, err := search.MeasureFromSummary(raw)
		if err != nil {
			continue
		}
		pt := s.NewPoint(r.load, m)
		pts = append(pts, pt)
		c.Points = append(c.Points, evidence.CapacityPoint{Run: r.run, Point: pt})
	}
	res := s.Evaluate(start, pts)
	c.Status, c.Capacity, c.NonMonotone = string(res.Status), res.Capacity, res.NonMonotone
	if res.Upper > 0 {
		c.Upper = ptr(res.Upper)
	}
	c.Breaks = search.Breaks(pts)
	at := -1
	for i, pt := range pts {
		if pt.Pass && pt.Load == res.Capacity && res.Capacity > 0 {
			at = i
		}
	}
	if at >= 0 {
		cp := c.Points[at]
		c.CapacityRun = cp.Run
		c.OutputTokenThroughput, c.RequestThroughput = cp.OutputTokenThroughput, cp.RequestThroughput
		if c.PricePerSecond > 0 && cp.OutputTokenThroughput > 0 {
			c.USDPerMTok = ptr(c.PricePerSecond * float64(c.GPUCount) / cp.OutputTokenThroughput * 1e6)
		}
	}
	return c, at
}

// paretoSets groups a screen's searched campaigns by shape and vary and
// marks each set's frontier (most capacity, least cost per token).
func paretoSets(models []evidence.ModelEvidence) []evidence.Pareto {
	var out []evidence.Pareto
	index := map[string]int{}
	for _, m := range models {
		for _, c := range m.Campaigns {
			if c.Capacity == nil {
				continue
			}
			key := c.Profile + "\x00" + c.Capacity.Vary
			i, ok := index[key]
			if !ok {
				i = len(out)
				index[key] = i
				out = append(out, evidence.Pareto{Profile: c.Profile, Vary: c.Capacity.Vary, Unit: c.Capacity.Unit, Lanes: []evidence.ParetoPoint{}})
			}
			out[i].Lanes = append(out[i].Lanes, evidence.ParetoPoint{Lane: c.Lane, Model: m.Name, GPU: c.GPU, GPUType: c.GPUType, Runtime: c.Runtime,
				Capacity: c.Capacity.Capacity, USDPerMTok: c.Capacity.USDPerMTok})
		}
	}
	for i := range out {
		lanes := out[i].Lanes
		for a := range lanes {
			lanes[a].Frontier = lanes[a].USDPerMTok != nil && lanes[a].Capacity > 0
			for b := range lanes {
				if a != b && dominates(lanes[b], lanes[a]) {
					lanes[a].Frontier = false
				}
			}
		}
		sort.SliceStable(lanes, func(a, b int) bool { return lanes[a].Capacity > lanes[b].Capacity })
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Profile < out[b].Profile })
	return out
}

// dominates reports whether x carries at least y's load for at most y's
// price per token, and is strictly better in one.
func dominates(x, y evidence.ParetoPoint) bool {
	if x.USDPerMTok == nil || y.USDPerMTok == nil {
		return false
	}
	xc, yc := *x.USDPerMTok, *y.USDPerMTok
	return x.Capacity >= y.Capacity && xc <= yc && (x.Capacity > y.Capacity || xc < yc)
}
