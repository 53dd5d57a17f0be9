package report

import (
	"math"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
)

// throughputMetrics are pooled across runs (total count / total window).
var throughputMetrics = []string{"output_token_throughput", "request_throughput", "total_token_throughput", "goodput"}

// percentileMetrics are averaged across runs (mean of per-run values).
var percentileMetrics = []string{
	"ttft_p50_ms", "ttft_p90_ms", "ttft_p95_ms", "ttft_p99_ms",
	"tpot_p50_ms", "tpot_p90_ms", "tpot_p95_ms", "tpot_p99_ms",
	"itl_p50_ms", "itl_p90_ms", "itl_p95_ms", "itl_p99_ms",
	"latency_p50_ms", "latency_p90_ms", "latency_p95_ms", "latency_p99_ms",
}

// ratioMetrics are compared between candidates and the baseline.
var ratioMetrics = []string{"output_token_throughput", "request_throughput", "ttft_p95_ms", "tpot_p95_ms", "latency_p95_ms"}

// higherIsBetter tells whether a larger value of metric is an improvement.
func higherIsBetter(metric string) bool {
	for _, m := range throughputMetrics {
		if m == metric {
			return true
		}
	}
	return false
}

// latenciesFrom turns a run's distributions into its percentile figures.
func latenciesFrom(s *loadgen.Summary) evidence.Latencies {
	var l evidence.Latencies
	set := func(d loadgen.Dist, p50, p90, p95, p99 **float64) {
		if d.Count == 0 {
			return
		}
		*p50, *p90, *p95, *p99 = ptr(d.P50), ptr(d.P90), ptr(d.P95), ptr(d.P99)
	}
	set(s.TTFTMs, &l.TTFTP50Ms, &l.TTFTP90Ms, &l.TTFTP95Ms, &l.TTFTP99Ms)
	set(s.TPOTMs, &l.TPOTP50Ms, &l.TPOTP90Ms, &l.TPOTP95Ms, &l.TPOTP99Ms)
	set(s.ITLMs, &l.ITLP50Ms, &l.ITLP90Ms, &l.ITLP95Ms, &l.ITLP99Ms)
	set(s.LatencyMs, &l.LatencyP50Ms, &l.LatencyP90Ms, &l.LatencyP95Ms, &l.LatencyP99Ms)
	return l
}

// runMetrics is the evidence form of one run's summary. Goodput and
// good_fraction are kept only when the lane has SLOs.
func runMetrics(s *loadgen.Summary, withSLO bool) evidence.Metrics {
	m := evidence.Metrics{
		Requests:              s.Requests,
		Succeeded:             s.Succeeded,
		Failed:                s.Failed,
		Failures:              copyCounts(s.Failures),
		Cancelled:             s.Cancelled,
		WindowSeconds:         s.WindowSeconds,
		InputTokens:           s.InputTokens,
		OutputTokens:          s.OutputTokens,
		RequestThroughput:     s.RequestThroughput,
		OutputTokenThroughput: s.OutputTokenThroughput,
		TotalTokenThroughput:  s.TotalTokenThroughput,
		Latencies:             latenciesFrom(s),
	}
	if withSLO {
		if s.Goodput != nil {
			m.Goodput = ptr(*s.Goodput)
		}
		if s.GoodFraction != nil {
			m.GoodFraction = ptr(*s.GoodFraction)
		}
	}
	return m
}

// runFigures is what aggregation and the bootstrap need of one run.
type runFigures struct {
	summary *loadgen.Summary
	// values holds every float metric of the run by name (absent: not measured).
	values map[string]float64
}

func newRunFigures(s *loadgen.Summary, withSLO bool) runFigures {
	m := runMetrics(s, withSLO)
	return runFigures{summary: s, values: m.Values()}
}

// aggregate combines runs by the design's rules: counts and tokens add up,
// throughputs pool all runs (total count / total window), latency
// percentiles are the mean of the per-run values.
func aggregate(runs []runFigures, withSLO bool) evidence.Metrics {
	m := evidence.Metrics{Failures: map[string]int{}}
	var good, judged int
	for _, r := range runs {
		s := r.summary
		m.Requests += s.Requests
		m.Succeeded += s.Succeeded
		m.Failed += s.Failed
		m.Cancelled += s.Cancelled
		for k, n := range s.Failures {
			m.Failures[k] += n
		}
		m.WindowSeconds += s.WindowSeconds
		m.InputTokens += s.InputTokens
		m.OutputTokens += s.OutputTokens
		good += s.Good
		judged += s.Succeeded + s.Failed
	}
	if m.WindowSeconds > 0 {
		m.RequestThroughput = float64(m.Succeeded) / m.WindowSeconds
		m.OutputTokenThroughput = float64(m.OutputTokens) / m.WindowSeconds
		m.TotalTokenThroughput = float64(m.InputTokens+m.OutputTokens) / m.WindowSeconds
		if withSLO {
			m.Goodput = ptr(float64(good) / m.WindowSeconds)
		}
	}
	if withSLO && judged > 0 {
		m.GoodFraction = ptr(float64(good) / float64(judged))
	}
	for name, p := range m.Latencies.Fields() {
		if v, ok := meanOf(runs, name, nil); ok {
			*p = ptr(v)
		}
	}
	return m
}

// meanOf is the mean of metric over the runs that measured it, taking the
// runs at idx (all runs when idx is nil).
func meanOf(runs []runFigures, metric string, idx []int) (float64, bool) {
	var sum float64
	n := 0
	each(runs, idx, func(r *runFigures) {
		if v, ok := r.values[metric]; ok {
			sum += v
			n++
		}
	})
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// each calls f on runs[i] for i in idx, or on every run when idx is nil.
func each(runs []runFigures, idx []int, f func(*runFigures)) {
	if idx == nil {
		for i := range runs {
			f(&runs[i])
		}
		return
	}
	for _, i := range idx {
		f(&runs[i])
	}
}

// statistic is a metric's aggregate over the runs at idx, by the same rules
// as aggregate; the bootstrap calls it on resamples.
func statistic(runs []runFigures, metric string, idx []int) (float64, bool) {
	var window, num float64
	switch metric {
	case "output_token_throughput", "request_throughput", "total_token_throughput", "goodput":
		each(runs, idx, func(r *runFigures) {
			s := r.summary
			window += s.WindowSeconds
			switch metric {
			case "output_token_throughput":
				num += float64(s.OutputTokens)
			case "request_throughput":
				num += float64(s.Succeeded)
			case "total_token_throughput":
				num += float64(s.InputTokens + s.OutputTokens)
			case "goodput":
				num += float64(s.Good)
			}
		})
		if window <= 0 {
			return 0, false
		}
		return num / window, true
	}
	return meanOf(runs, metric, idx)
}

// coefficientOfVariation is sample std (n-1) / mean of the per-run values of
// every throughput and percentile metric measured in at least two runs.
func coefficientOfVariation(runs []runFigures, withSLO bool) map[string]float64 {
	out := map[string]float64{}
	for _, metric := range append(append([]string{}, throughputMetrics...), percentileMetrics...) {
		if metric == "goodput" && !withSLO {
			continue
		}
		var xs []float64
		for _, r := range runs {
			if v, ok := r.values[metric]; ok {
				xs = append(xs, v)
			}
		}
		if cv, ok := sampleCV(xs); ok {
			out[metric] = cv
		}
	}
	return out
}

// sampleCV is the sample standard deviation (n-1) over the mean.
func sampleCV(xs []float64) (float64, bool) {
	n := len(xs)
	if n < 2 {
		return 0, false
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(n)
	if mean == 0 {
		return 0, false
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss/float64(n-1)) / math.Abs(mean), true
}

// pooledLatencies are percentiles over every request of every run: the
// records of all runs computed as one population with loadgen.Compute.
func pooledLatencies(records [][]loadgen.Record, slo loadgen.SLO) evidence.Latencies {
	var all []loadgen.Record
	for _, rs := range records {
		all = append(all, rs...)
	}
	s := loadgen.Compute(all, slo)
	return latenciesFrom(&s)
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ptr(f float64) *float64 { return &f }
