package report

import (
	"fmt"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/planner"
)

// MinRunsForSignificance is the fewest completed runs each side of a
// comparison needs before a ratio may be called significant. The method is
// a seeded percentile bootstrap over runs (each lane resampled
// independently, 95% interval); with fewer runs it has too few distinct
// resamples for its interval to mean anything (with 2 runs a side has only
// 3 distinct resampled means), so the ratio is reported without a verdict.
const MinRunsForSignificance = 5

// compare computes the ratios of every candidate lane over the baseline
// lane with the same shape, GPU and runtime. No baseline, no comparisons.
func compare(sc *planner.Screen, lanes []*planner.Lane, figures map[string][]runFigures, resamples int) []evidence.Comparison {
	out := []evidence.Comparison{}
	if sc.Baseline == "" {
		return out
	}
	several := len(sc.Runtimes) > 1
	base := map[[3]string]*planner.Lane{}
	for _, l := range lanes {
		if l.Model == sc.Baseline {
			base[[3]string{l.Shape, l.GPU, l.Runtime}] = l
		}
	}
	for _, l := range lanes {
		b := base[[3]string{l.Shape, l.GPU, l.Runtime}]
		if l.Model == sc.Baseline || b == nil {
			continue
		}
		c := evidence.Comparison{
			Profile: l.Shape, GPU: l.GPU,
			Candidate: l.Model, CandidateModel: l.Inputs.ModelID,
			Baseline: b.Model, BaselineModel: b.Inputs.ModelID,
			Ratios: map[string]evidence.Ratio{},
		}
		if several {
			c.Runtime = l.Runtime
		}
		cf, bf := figures[l.ID], figures[b.ID]
		for _, metric := range ratioMetrics {
			if r, ok := ratioOf(cf, bf, metric, sc.Seed, l.ID+"/"+b.ID+"/"+metric, resamples); ok {
				c.Ratios[l.Model+"_over_"+b.Model+"_"+metric] = r
			}
		}
		if len(c.Ratios) > 0 { // a side without runs has nothing to compare
			out = append(out, c)
		}
	}
	return out
}

// ratioOf is candidate over baseline of one metric with its seeded
// bootstrap interval (key seeds it) and, with enough runs each side, the
// verdict whether it differs from 1; false when either side lacks the
// metric or the baseline's is 0.
func ratioOf(cf, bf []runFigures, metric string, seed int64, key string, resamples int) (evidence.Ratio, bool) {
	cv, ok1 := statistic(cf, metric, nil)
	bv, ok2 := statistic(bf, metric, nil)
	if !ok1 || !ok2 || bv == 0 {
		return evidence.Ratio{}, false
	}
	r := evidence.Ratio{Metric: metric, Value: cv / bv, HigherIsBetter: higherIsBetter(metric)}
	if iv, ok := ratioInterval(cf, bf, metric, seed, key, resamples); ok {
		r.CI95 = &iv
		if len(cf) >= MinRunsForSignificance && len(bf) >= MinRunsForSignificance {
			r.Significant = iv.Low > 1 || iv.High < 1
		} else {
			r.Note = fmt.Sprintf("not tested for significance: %d and %d run(s); the run-level percentile bootstrap needs at least %d runs on each side", len(cf), len(bf), MinRunsForSignificance)
		}
	}
	return r, true
}
