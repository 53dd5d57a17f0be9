package report

import (
	"sort"

	"github.com/infercrane/infercrane/executor/loadgen"
)

// LaneReconciliation sums up how a lane's client figures sat beside the
// server's own histograms over its runs (see loadgen.Reconcile); gates read
// it as lane.client_vs_server.*.
type LaneReconciliation struct {
	// Runs is how many runs could be compared.
	Runs int `json:"runs"`
	// Flagged counts the checks, over every compared run, whose client
	// figure lay outside the server's by more than the margin (either way).
	Flagged int `json:"flagged"`
	// GapMs is, by metric, the median over the compared runs of the
	// client's mean minus the server's (signed: below zero the client read
	// less than the server).
	GapMs map[string]float64 `json:"gap_ms"`
	// Margin is the margin the runs were judged with.
	Margin loadgen.Margin `json:"margin"`
}

// values are the gate metrics of r by name.
func (r *LaneReconciliation) values() map[string]float64 {
	v := map[string]float64{"flagged": float64(r.Flagged)}
	for m, g := range r.GapMs {
		v[m+"_gap_ms"] = g
	}
	return v
}

// reconcileRuns sets each run's ClientVsServer, judged with a margin
// derived from the server's own spread over the lane's runs (a search's
// points ran at different loads, whose server figures differ by design, so
// each of its runs is judged alone), and sums them up; nil when no run
// could be compared. figs[i] are runs[i]'s figures.
func reconcileRuns(runs []RunEvidence, figs []runFigures, search bool) *LaneReconciliation {
	views := make([]*loadgen.ServerView, len(runs))
	for i := range runs {
		views[i] = runs[i].ServerView
	}
	margin := loadgen.LaneMargin(views)
	if search {
		margin = loadgen.DefaultMargin
	}
	sum := &LaneReconciliation{GapMs: map[string]float64{}, Margin: margin}
	gaps := map[string][]float64{}
	for i := range runs {
		rc := loadgen.Reconcile(figs[i].summary, views[i], margin)
		runs[i].ClientVsServer = rc
		if rc == nil || !rc.Comparable {
			continue
		}
		sum.Runs++
		sum.Flagged += len(rc.Flagged)
		for _, c := range rc.Checks {
			if c.Stat == "mean" {
				gaps[c.Metric] = append(gaps[c.Metric], c.ClientMs-c.ServerMs)
			}
		}
	}
	if sum.Runs == 0 {
		return nil
	}
	for m, g := range gaps {
		sort.Float64s(g)
		n := len(g)
		sum.GapMs[m] = (g[(n-1)/2] + g[n/2]) / 2
	}
	return sum
}
