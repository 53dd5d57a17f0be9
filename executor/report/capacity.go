package report

import (
	"encoding/json"
	"sort"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/search"
)

// CapacityMetrics are the gate metrics of a searched lane (lane.NAME);
// lanes without a search lack them, so a gate on them is inconclusive
// there. capacity_rps is set for request_rate searches and
// capacity_concurrency for concurrency searches.
var CapacityMetrics = []string{"capacity_rps", "capacity_concurrency", "usd_per_mtok", "capacity_output_token_throughput"}

// Capacity is a searched lane's evidence of capacity at SLO: the search,
// every point it measured, the bracket it ended with, where each objective
// broke, and the price of a million output tokens at capacity.
type Capacity struct {
	Search    string     `json:"search"`
	Vary      string     `json:"vary"`
	Unit      string     `json:"unit"`
	Range     [2]float64 `json:"range"`
	SLO       search.SLO `json:"slo"`
	Goodput   float64    `json:"goodput"`
	Tolerance float64    `json:"tolerance"`
	MaxPoints int        `json:"max_points"`
	// PredictedKnee is the plan's prediction (0: none).
	PredictedKnee float64 `json:"predicted_knee"`
	// Status is converged, max_points, above_range, below_range or running
	// (the apply stopped before the search ended).
	Status string `json:"status"`
	// Capacity is the highest measured load that met every objective below
	// the lowest that missed one (0: none met them); Upper is that lowest
	// missing load (absent while none missed).
	Capacity float64  `json:"capacity"`
	Upper    *float64 `json:"upper,omitempty"`
	// Points are the measured points in the order the search ran them.
	Points []CapacityPoint `json:"points"`
	// Breaks maps each objective that some point missed to the lowest load
	// at which it was missed.
	Breaks map[string]float64 `json:"breaks"`
	// CapacityRun is the run (point) measured at Capacity (0: none).
	CapacityRun int `json:"capacity_run,omitempty"`
	// OutputTokenThroughput and RequestThroughput were measured at capacity.
	OutputTokenThroughput float64 `json:"output_token_throughput"`
	RequestThroughput     float64 `json:"request_throughput"`
	// PricePerSecond is the price of one GPU-second of the lane's GPU type
	// and GPUCount the GPUs of a deployment.
	PricePerSecond float64 `json:"price_per_second"`
	GPUCount       int     `json:"gpu_count"`
	// USDPerMTok is PricePerSecond x GPUCount / OutputTokenThroughput x 1e6:
	// what a million output tokens cost when the deployment runs at
	// capacity (absent without a capacity or a price).
	USDPerMTok *float64 `json:"usd_per_mtok,omitempty"`
	// NonMonotone lists loads that met the objectives above one that
	// missed them (noise or an unstable server); the bracket ignores them.
	NonMonotone []float64 `json:"non_monotone,omitempty"`
}

// CapacityPoint is one measured point of a search: its run, load, p95s,
// goodput, throughputs and verdict.
type CapacityPoint struct {
	Run int `json:"run"`
	search.Point
}

// Pareto is the cost-capacity frontier of one shape's searched lanes
// across models and GPUs: a lane is on the frontier when no other lane
// carries at least as much load for at most the price per token, and is
// better in one of them.
type Pareto struct {
	Profile string        `json:"profile"` // shape block name
	Vary    string        `json:"vary"`
	Unit    string        `json:"unit"`
	Lanes   []ParetoPoint `json:"lanes"`
}

// ParetoPoint is one lane of a Pareto set.
type ParetoPoint struct {
	Lane    string `json:"lane"`
	Model   string `json:"model"` // model block name
	GPU     string `json:"gpu"`   // gpu block name
	GPUType string `json:"gpu_type"`
	// Runtime is the runtime block when the screen compares several.
	Runtime    string   `json:"runtime,omitempty"`
	Capacity   float64  `json:"capacity"`
	USDPerMTok *float64 `json:"usd_per_mtok,omitempty"`
	Frontier   bool     `json:"frontier"`
}

// pointRun is a run with the load its search point measured.
type pointRun struct {
	run  int
	load float64
	sum  *loadgen.Summary
}

// buildCapacity computes a searched lane's capacity evidence from its runs
// (each a point) and returns the index into runs of the run at capacity
// (-1: none).
func buildCapacity(p *planner.Plan, l *planner.Lane, runs []pointRun) (*Capacity, int) {
	s := l.Inputs.Search
	c := &Capacity{
		Search: s.Name, Vary: s.Vary, Unit: s.Unit(), Range: [2]float64{s.Min, s.Max}, SLO: s.SLO,
		Goodput: s.Goodput, Tolerance: s.Tolerance, MaxPoints: s.MaxPoints,
		Points: []CapacityPoint{}, Breaks: map[string]float64{}, GPUCount: max(l.Inputs.GPUCount, 1),
	}
	start := 0.0
	if l.Search != nil {
		c.PredictedKnee, start = l.Search.PredictedKnee, l.Search.Start
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
		c.Points = append(c.Points, CapacityPoint{Run: r.run, Point: pt})
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

// aggregatedRuns is the number of runs the campaign's aggregate pools: its
// runs, or for a search the one point at capacity.
func (c *Campaign) aggregatedRuns() int {
	if c.Capacity != nil {
		return 1
	}
	return len(c.Runs)
}

// capacityValues are a searched lane's gate metrics.
func (c *Capacity) values() map[string]float64 {
	v := map[string]float64{"capacity_output_token_throughput": c.OutputTokenThroughput}
	if c.Vary == search.VaryConcurrency {
		v["capacity_concurrency"] = c.Capacity
	} else {
		v["capacity_rps"] = c.Capacity
	}
	if c.USDPerMTok != nil {
		v["usd_per_mtok"] = *c.USDPerMTok
	}
	return v
}

// paretoSets groups a screen's searched campaigns by shape and vary and
// marks each set's frontier (most capacity, least cost per token).
func paretoSets(models []ModelEvidence) []Pareto {
	var out []Pareto
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
				out = append(out, Pareto{Profile: c.Profile, Vary: c.Capacity.Vary, Unit: c.Capacity.Unit, Lanes: []ParetoPoint{}})
			}
			out[i].Lanes = append(out[i].Lanes, ParetoPoint{Lane: c.Lane, Model: m.Name, GPU: c.GPU, GPUType: c.GPUType, Runtime: c.Runtime,
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
func dominates(x, y ParetoPoint) bool {
	if x.USDPerMTok == nil || y.USDPerMTok == nil {
		return false
	}
	xc, yc := *x.USDPerMTok, *y.USDPerMTok
	return x.Capacity >= y.Capacity && xc <= yc && (x.Capacity > y.Capacity || xc < yc)
}
