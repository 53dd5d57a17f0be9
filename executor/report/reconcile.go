package report

import (
	"sort"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
)

// reconcileRuns sets each run's ClientVsServer, judged with a margin
// derived from the server's own spread over the lane's runs (a search's
// points ran at different loads, whose server figures differ by design, so
// each of its runs is judged alone), and sums them up; nil when no run
// could be compared. figs[i] are runs[i]'s figures.
func reconcileRuns(runs []evidence.RunEvidence, figs []runFigures, search bool) *evidence.LaneReconciliation {
	views := make([]*loadgen.ServerView, len(runs))
	for i := range runs {
		views[i] = runs[i].ServerView
	}
	margin := loadgen.LaneMargin(views)
	if search {
		margin = loadgen.DefaultMargin
	}
	sum := &evidence.LaneReconciliation{GapMs: map[string]float64{}, Margin: margin}
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
