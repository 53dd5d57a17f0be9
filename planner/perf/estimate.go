package perf

// Estimate is a lane's predicted figures per run, read off virtual-time
// runs of the scheduler model (Lane.Run) with the load generator's
// arrival process: percentiles are the mean of the per-run values and
// throughputs pool the runs, as the evidence aggregates measurements.
// TTFTMs, TPOTMs and LatencyMs are medians (p50).
type Estimate struct {
	TTFTMs                float64 `json:"ttft_ms"`
	TTFTP95Ms             float64 `json:"ttft_p95_ms,omitempty"`
	TPOTMs                float64 `json:"tpot_ms"`
	LatencyMs             float64 `json:"latency_ms"`
	OutputTokenThroughput float64 `json:"output_token_throughput"`
	RequestThroughput     float64 `json:"request_throughput"`
	// RunSeconds is the predicted duration of one run, warmup included.
	RunSeconds   float64 `json:"run_seconds"`
	TTFTP99Ms    float64 `json:"ttft_p99_ms,omitempty"`
	TPOTP95Ms    float64 `json:"tpot_p95_ms,omitempty"`
	TPOTP99Ms    float64 `json:"tpot_p99_ms,omitempty"`
	ITLP50Ms     float64 `json:"itl_p50_ms,omitempty"`
	ITLP95Ms     float64 `json:"itl_p95_ms,omitempty"`
	ITLP99Ms     float64 `json:"itl_p99_ms,omitempty"`
	LatencyP95Ms float64 `json:"latency_p95_ms,omitempty"`
	LatencyP99Ms float64 `json:"latency_p99_ms,omitempty"`
	// Preemptions is the predicted number of preemptions per run.
	Preemptions float64 `json:"preemptions,omitempty"`
	// TTFTParts split the mean TTFT into the front end, the engine's
	// queue and the prefill (RunStats.TTFTParts), averaged over the runs.
	TTFTParts *TTFTParts `json:"ttft_parts,omitempty"`
}

// Estimate simulates runs runs of l (run i with seed l.Seed + i, as the
// executor seeds them) and summarises them. A closed loop, or an open one
// at given send times, does not depend on the seed, so it is simulated
// once.
//
// Its work is bounded whatever the load (a plan of the largest valid spec
// stays within its budget): at most maxEstimateRuns seeds are simulated,
// and of a run's warmup and measured requests each only a first part
// (simulated), their durations and preemptions scaled to the whole run
// (latencies and throughputs are those of the part).
func (s Lane) Estimate(l Load, runs int) (Estimate, error) {
	runs = min(max(runs, 1), maxEstimateRuns)
	if l.RequestRate <= 0 || len(l.Sends) > 0 {
		runs = 1
	}
	l, scale, warmupScale := simulated(l)
	var e Estimate
	var window, duration float64
	var parts TTFTParts
	var succeeded, tokens int
	for i := 0; i < runs; i++ {
		rl := l
		rl.Seed = l.Seed + int64(i)
		st, err := s.Run(rl)
		if err != nil {
			return Estimate{}, err
		}
		e.TTFTMs += st.TTFT.P50
		e.TTFTP95Ms += st.TTFT.P95
		e.TTFTP99Ms += st.TTFT.P99
		e.TPOTMs += st.TPOT.P50
		e.TPOTP95Ms += st.TPOT.P95
		e.TPOTP99Ms += st.TPOT.P99
		e.ITLP50Ms += st.ITL.P50
		e.ITLP95Ms += st.ITL.P95
		e.ITLP99Ms += st.ITL.P99
		e.LatencyMs += st.Latency.P50
		e.LatencyP95Ms += st.Latency.P95
		e.LatencyP99Ms += st.Latency.P99
		e.Preemptions += float64(st.Preemptions-st.WarmupPreemptions)*scale + float64(st.WarmupPreemptions)*warmupScale
		parts.MeanMs += st.TTFTParts.MeanMs
		parts.FrontEndMs += st.TTFTParts.FrontEndMs
		parts.QueuedMs += st.TTFTParts.QueuedMs
		parts.PrefillMs += st.TTFTParts.PrefillMs
		window += st.WindowSeconds
		duration += (st.DurationSeconds-st.WarmupEnd)*scale + st.WarmupEnd*warmupScale
		succeeded += st.Succeeded
		tokens += st.OutputTokens
	}
	n := float64(runs)
	for _, f := range []*float64{&e.TTFTMs, &e.TTFTP95Ms, &e.TTFTP99Ms, &e.TPOTMs, &e.TPOTP95Ms, &e.TPOTP99Ms,
		&e.ITLP50Ms, &e.ITLP95Ms, &e.ITLP99Ms, &e.LatencyMs, &e.LatencyP95Ms, &e.LatencyP99Ms, &e.Preemptions,
		&parts.MeanMs, &parts.FrontEndMs, &parts.QueuedMs, &parts.PrefillMs} {
		*f /= n
	}
	e.TTFTParts = &parts
	if window > 0 {
		e.RequestThroughput = float64(succeeded) / window
		e.OutputTokenThroughput = float64(tokens) / window
	}
	e.RunSeconds = duration / n
	return e, nil
}

// The bounds of Estimate's work.
const (
	maxEstimateRuns      = 5
	maxSimulatedRequests = 10_000
	// maxSimulatedTokens bounds the output tokens of the requests a
	// phase (warmup, measured) simulates: stepping through preemptions
	// when the KV cache is oversubscribed grows with them.
	maxSimulatedTokens = 10_000_000
)

// simulated returns the part of l that Estimate simulates: of the warmup
// and of the measured requests each the first ones, at most
// maxSimulatedRequests and, beyond the first, while their output tokens
// stay under maxSimulatedTokens; and the factors that scale the measured
// phase's and the warmup's duration to the whole.
func simulated(l Load) (part Load, scale, warmupScale float64) {
	n := simulatedCount(l.Requests, l.size)
	w := l
	w.Sizes = l.WarmupSizes
	nw := simulatedCount(l.Warmup, w.size)
	scale, warmupScale = 1, 1
	if n < l.Requests {
		scale = float64(l.Requests) / float64(n)
		l.Requests = n
		if len(l.Sends) > n {
			l.Sends = l.Sends[:n]
		}
	}
	if nw < l.Warmup {
		warmupScale = float64(l.Warmup) / float64(nw)
		l.Warmup = nw
	}
	return l, scale, warmupScale
}

// simulatedCount is how many of n requests a phase simulates (size(i) is
// request i's size).
func simulatedCount(n int, size func(int) RequestSize) int {
	k, tokens := 0, 0
	for k < min(n, maxSimulatedRequests) && (k == 0 || tokens < maxSimulatedTokens) {
		tokens += size(k).Output
		k++
	}
	return k
}

// Metric returns the estimate's value of a metric named as the evidence
// aggregate names it ("ttft_p95_ms", "output_token_throughput", ...), or
// as the report names a part of the TTFT the server measures
// (QueuedMeanMetric, PrefillMeanMetric: TTFTParts), and whether the
// estimate has it.
func (e Estimate) Metric(name string) (float64, bool) {
	// A switch, not a map literal: a fit asks millions of times.
	switch name {
	case "ttft_p50_ms":
		return e.TTFTMs, true
	case QueuedMeanMetric, PrefillMeanMetric:
		if e.TTFTParts == nil {
			return 0, false
		}
		if name == QueuedMeanMetric {
			return e.TTFTParts.QueuedMs, true
		}
		return e.TTFTParts.PrefillMs, true
	case "ttft_p95_ms":
		return e.TTFTP95Ms, true
	case "ttft_p99_ms":
		return e.TTFTP99Ms, true
	case "tpot_p50_ms":
		return e.TPOTMs, true
	case "tpot_p95_ms":
		return e.TPOTP95Ms, true
	case "tpot_p99_ms":
		return e.TPOTP99Ms, true
	case "itl_p50_ms":
		return e.ITLP50Ms, true
	case "itl_p95_ms":
		return e.ITLP95Ms, true
	case "itl_p99_ms":
		return e.ITLP99Ms, true
	case "latency_p50_ms":
		return e.LatencyMs, true
	case "latency_p95_ms":
		return e.LatencyP95Ms, true
	case "latency_p99_ms":
		return e.LatencyP99Ms, true
	case "output_token_throughput":
		return e.OutputTokenThroughput, true
	case "request_throughput":
		return e.RequestThroughput, true
	}
	return 0, false
}
