package report

import (
	"hash/fnv"
	"math/rand/v2"
	"sort"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
)

// DefaultResamples is the number of bootstrap resamples per interval.
const DefaultResamples = 2000

// bootstrapLevel is the confidence level of every interval.
const bootstrapLevel = 0.95

// newRNG returns a generator seeded by the screen seed and a label (a lane
// ID, a comparison key), so each interval is reproducible on its own.
func newRNG(seed int64, label string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(label))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// resample fills idx with n indices drawn with replacement from [0, n).
// It reduces the PCG output itself (the modulo bias is below 1e-17 for any
// run count) so intervals do not depend on how a Go release implements IntN.
func resample(rng *rand.Rand, idx []int) {
	n := uint64(len(idx))
	for i := range idx {
		idx[i] = int(rng.Uint64() % n)
	}
}

// interval is the central bootstrapLevel interval of draws.
func interval(draws []float64) evidence.Interval {
	sort.Float64s(draws)
	tail := (1 - bootstrapLevel) / 2 * 100
	return evidence.Interval{Low: loadgen.Percentile(draws, tail), High: loadgen.Percentile(draws, 100-tail)}
}

// laneIntervals bootstraps every CV metric of a lane over its runs.
func laneIntervals(runs []runFigures, metrics []string, seed int64, lane string, resamples int) evidence.ConfidenceIntervals {
	ci := evidence.ConfidenceIntervals{
		Level:     bootstrapLevel,
		Method:    "percentile bootstrap over runs (runs resampled with replacement; aggregate recomputed by the evidence rules)",
		Resamples: resamples,
		Seed:      seed,
		Intervals: map[string]evidence.Interval{},
	}
	if len(runs) < 2 {
		ci.Note = "needs at least 2 runs"
		return ci
	}
	for _, metric := range metrics {
		if _, ok := statistic(runs, metric, nil); !ok {
			continue
		}
		rng := newRNG(seed, lane+"/"+metric)
		idx := make([]int, len(runs))
		draws := make([]float64, 0, resamples)
		for b := 0; b < resamples; b++ {
			resample(rng, idx)
			if v, ok := statistic(runs, metric, idx); ok {
				draws = append(draws, v)
			}
		}
		if len(draws) > 0 {
			ci.Intervals[metric] = interval(draws)
		}
	}
	return ci
}

// ratioInterval bootstraps candidate/baseline of metric, resampling the
// runs of each side independently. ok is false with fewer than two runs on
// either side.
func ratioInterval(cand, base []runFigures, metric string, seed int64, label string, resamples int) (evidence.Interval, bool) {
	if len(cand) < 2 || len(base) < 2 {
		return evidence.Interval{}, false
	}
	rng := newRNG(seed, label)
	ci, bi := make([]int, len(cand)), make([]int, len(base))
	draws := make([]float64, 0, resamples)
	for b := 0; b < resamples; b++ {
		resample(rng, ci)
		resample(rng, bi)
		c, ok1 := statistic(cand, metric, ci)
		d, ok2 := statistic(base, metric, bi)
		if ok1 && ok2 && d != 0 {
			draws = append(draws, c/d)
		}
	}
	if len(draws) == 0 {
		return evidence.Interval{}, false
	}
	return interval(draws), true
}
