package report

import (
	"github.com/infercrane/infercrane/planner"
)

// compare computes the ratios of every candidate lane over the baseline
// lane with the same shape and GPU. No baseline, no comparisons.
func compare(sc *planner.Screen, lanes []*planner.Lane, figures map[string][]runFigures, resamples int) []Comparison {
	out := []Comparison{}
	if sc.Baseline == "" {
		return out
	}
	base := map[[2]string]*planner.Lane{}
	for _, l := range lanes {
		if l.Model == sc.Baseline {
			base[[2]string{l.Shape, l.GPU}] = l
		}
	}
	for _, l := range lanes {
		b := base[[2]string{l.Shape, l.GPU}]
		if l.Model == sc.Baseline || b == nil {
			continue
		}
		c := Comparison{
			Profile: l.Shape, GPU: l.GPU,
			Candidate: l.Model, CandidateModel: l.Inputs.ModelID,
			Baseline: b.Model, BaselineModel: b.Inputs.ModelID,
			Ratios: map[string]Ratio{},
		}
		cf, bf := figures[l.ID], figures[b.ID]
		for _, metric := range ratioMetrics {
			cv, ok1 := statistic(cf, metric, nil)
			bv, ok2 := statistic(bf, metric, nil)
			if !ok1 || !ok2 || bv == 0 {
				continue
			}
			key := l.Model + "_over_" + b.Model + "_" + metric
			r := Ratio{Metric: metric, Value: cv / bv, HigherIsBetter: higherIsBetter(metric)}
			if iv, ok := ratioInterval(cf, bf, metric, sc.Seed, l.ID+"/"+b.ID+"/"+metric, resamples); ok {
				r.CI95 = &iv
				r.Significant = iv.Low > 1 || iv.High < 1
			}
			c.Ratios[key] = r
		}
		if len(c.Ratios) > 0 { // a side without runs has nothing to compare
			out = append(out, c)
		}
	}
	return out
}
