package benchresult

import (
	"encoding/json"
	"errors"
	"fmt"
)

// guideDist is one of GuideLLM's distribution summaries.
type guideDist struct {
	Count       float64            `json:"count"`
	Mean        *float64           `json:"mean"`
	Median      *float64           `json:"median"`
	TotalSum    *float64           `json:"total_sum"`
	Percentiles map[string]float64 `json:"percentiles"`
}

// guideTotals is a GuideLLM benchmark's requests by outcome.
type guideTotals struct {
	Successful int `json:"successful"`
	Errored    int `json:"errored"`
	Incomplete int `json:"incomplete"`
}

// guideScheduler is GuideLLM 0.8's scheduler_state: the requests it
// created and their outcomes.
type guideScheduler struct {
	Created    int `json:"created_requests"`
	Successful int `json:"successful_requests"`
	Errored    int `json:"errored_requests"`
	Cancelled  int `json:"cancelled_requests"`
}

// guideMetric is metric name of a GuideLLM benchmark's metrics, the
// distribution over its successful requests; false when the report has
// none or holds something else under the name (GuideLLM 0.8 keeps counts,
// nulls and nested groups beside the distributions).
func guideMetric(metrics map[string]json.RawMessage, name string) (guideDist, bool) {
	var m struct {
		Successful *guideDist `json:"successful"`
	}
	if err := json.Unmarshal(metrics[name], &m); err != nil || m.Successful == nil {
		return guideDist{}, false
	}
	return *m.Successful, true
}

// putGuideDist puts a GuideLLM summary's mean, p50 (its median where it
// gives no percentiles) and p95 and p99 as ours_mean_ms and so on, its
// values times factor (1000 for seconds).
func putGuideDist(m map[string]float64, ours string, d guideDist, factor float64) {
	if v := d.Mean; v != nil {
		put(m, ours+"_mean_ms", *v*factor, true)
	}
	if v, ok := d.Percentiles["p50"]; ok {
		put(m, ours+"_p50_ms", v*factor, true)
	} else if v := d.Median; v != nil {
		put(m, ours+"_p50_ms", *v*factor, true)
	}
	for _, p := range []string{"p95", "p99"} {
		if v, ok := d.Percentiles[p]; ok {
			put(m, ours+"_"+p+"_ms", v*factor, true)
		}
	}
}

// guideRequest is one successful request of a GuideLLM 0.8 report
// (benchmarks[].requests.successful[]): the report keeps every request
// unless the run sampled them (--metrics sample_size).
type guideRequest struct {
	TTFTMs   *float64 `json:"time_to_first_token_ms"`
	ITLMs    *float64 `json:"inter_token_latency_ms"`
	LatencyS *float64 `json:"request_latency"`
	Output   *float64 `json:"output_tokens"`
}

// parseGuideLLM reads GuideLLM's report JSON: one result per benchmark
// (load point), in the layouts of GuideLLM 0.3 and 0.8. GuideLLM's
// inter_token_latency_ms of a request is (latency - ttft) / (output
// tokens - 1), our TPOT; its time_per_output_token_ms divides the whole
// latency (TTFT included) by the output tokens and is not used; its
// request_latency is in seconds. Where the report lists its requests
// (0.8), TTFT, TPOT and latency are summarised from them, since 0.8's
// inter_token_latency_ms summary weighs every token gap (a request of
// many tokens counts many times) where our TPOT weighs every request
// once; otherwise from the report's summaries.
func parseGuideLLM(data []byte) ([]Result, error) {
	var doc struct {
		Metadata   map[string]json.RawMessage `json:"metadata"`
		Benchmarks []struct {
			Duration *float64                   `json:"duration"`
			Config   map[string]json.RawMessage `json:"config"`
			Args     map[string]json.RawMessage `json:"args"`
			Metrics  map[string]json.RawMessage `json:"metrics"`
			Strategy json.RawMessage            `json:"strategy"`
			Worker   map[string]json.RawMessage `json:"worker"`
			Start    *float64                   `json:"start_time"`
			End      *float64                   `json:"end_time"`
			// RequestTotals counts the requests by outcome (0.3; 0.8 has
			// them as metrics.request_totals).
			RequestTotals *guideTotals `json:"request_totals"`
			// Scheduler counts what 0.8's scheduler created and what
			// became of it, cancelled requests included.
			Scheduler *guideScheduler `json:"scheduler_state"`
			Requests  struct {
				Successful []guideRequest `json:"successful"`
			} `json:"requests"`
		} `json:"benchmarks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Benchmarks) == 0 {
		return nil, errors.New("the GuideLLM report has no benchmarks")
	}
	version := str(doc.Metadata["guidellm_version"])
	var out []Result
	for i, b := range doc.Benchmarks {
		r := Result{Tool: ToolGuideLLM, ToolVersion: version, Metrics: map[string]float64{}, Label: fmt.Sprintf("benchmark %d", i+1)}
		var backend map[string]json.RawMessage // 0.8: config.backend.model
		_ = json.Unmarshal(b.Config["backend"], &backend)
		for _, src := range []map[string]json.RawMessage{b.Config, b.Args, backend} {
			if r.Model == "" {
				r.Model = str(src["model"])
			}
		}
		if r.Model == "" {
			r.Model = str(b.Worker["backend_model"]) // 0.3: worker.backend_model
		}
		// The strategy (0.3: args.strategy): synchronous, concurrent
		// (streams), constant or poisson (rate), throughput (everything at
		// once).
		strat := b.Strategy
		for _, alt := range []json.RawMessage{b.Config["strategy"], b.Args["strategy"]} {
			if len(strat) == 0 {
				strat = alt
			}
		}
		var s map[string]json.RawMessage
		_ = json.Unmarshal(strat, &s)
		kind := str(s["type_"])
		if kind == "" {
			kind = str(s["type"])
		}
		totals := b.RequestTotals
		if totals == nil {
			var t guideTotals
			if json.Unmarshal(b.Metrics["request_totals"], &t) == nil {
				totals = &t
			}
		}
		switch sc := b.Scheduler; {
		case sc != nil && sc.Created > sc.Successful:
			// The scheduler's own account: every request it created that
			// did not succeed (errored, cancelled or left in flight).
			r.Failed = sc.Created - sc.Successful
			r.Notes = append(r.Notes, failedNote("GuideLLM", fmt.Sprintf("%d not successful of the %d requests its scheduler created (%d errored, %d cancelled)", r.Failed, sc.Created, sc.Errored, sc.Cancelled), sc.Successful))
		case totals != nil && totals.Errored+totals.Incomplete > 0:
			r.Failed = totals.Errored + totals.Incomplete
			r.Notes = append(r.Notes, failedNote("GuideLLM", fmt.Sprintf("%d errored and %d incomplete requests", totals.Errored, totals.Incomplete), totals.Successful))
		}
		ps, pok := guideMetric(b.Metrics, "prompt_token_count")
		os_, ook := guideMetric(b.Metrics, "output_token_count")
		if pok && ook && ps.Mean != nil && os_.Mean != nil {
			r.InputTokens, r.OutputTokens = round(*ps.Mean), round(*os_.Mean)
			r.Requests = round(os_.Count)
		}
		if reqs := b.Requests.Successful; len(reqs) > 0 {
			var ttft, tpot, lat []float64
			for _, q := range reqs {
				if q.TTFTMs != nil {
					ttft = append(ttft, *q.TTFTMs)
				}
				if q.ITLMs != nil && q.Output != nil && *q.Output > 1 {
					tpot = append(tpot, *q.ITLMs)
				}
				if q.LatencyS != nil {
					lat = append(lat, *q.LatencyS*1000)
				}
			}
			putSummary(r.Metrics, "ttft", ttft)
			putSummary(r.Metrics, "tpot", tpot)
			putSummary(r.Metrics, "latency", lat)
			r.TTFTsMs = ttft
			if r.Requests > len(reqs) {
				r.Notes = append(r.Notes, fmt.Sprintf("GuideLLM kept %d of the %d successful requests (sampled): TTFT, TPOT and latency are the sample's", len(reqs), r.Requests))
			}
		} else {
			if d, ok := guideMetric(b.Metrics, "time_to_first_token_ms"); ok {
				putGuideDist(r.Metrics, "ttft", d, 1)
			}
			if d, ok := guideMetric(b.Metrics, "inter_token_latency_ms"); ok {
				putGuideDist(r.Metrics, "tpot", d, 1)
				if r.Requests > 0 && d.Count > float64(r.Requests) {
					r.Notes = append(r.Notes, "the report lists no requests and its inter_token_latency_ms summary weighs every token gap: TPOT is token-weighted, not per request")
				}
			}
			if d, ok := guideMetric(b.Metrics, "request_latency"); ok {
				putGuideDist(r.Metrics, "latency", d, 1000)
			}
		}
		dur := 0.0
		if b.Duration != nil {
			dur = *b.Duration
		} else if b.Start != nil && b.End != nil {
			dur = *b.End - *b.Start
		}
		if ook && os_.TotalSum != nil && dur > 0 {
			put(r.Metrics, OutTput, *os_.TotalSum/dur, true)
		} else if ot, ok := guideMetric(b.Metrics, "output_tokens_per_second"); ok && ot.Mean != nil {
			put(r.Metrics, OutTput, *ot.Mean, true)
		}
		switch kind {
		case "synchronous":
			r.Concurrency = 1
		case "concurrent":
			if v, ok := num(s["streams"]); ok {
				r.Concurrency = round(v)
			}
		case "constant", "poisson", "async":
			if v, ok := num(s["rate"]); ok && v > 0 {
				r.RequestRate = v
				r.Arrival = map[bool]string{true: "poisson", false: "constant"}[kind == "poisson"]
			}
			if v, ok := num(s["max_concurrency"]); ok && v >= 1 {
				r.Concurrency = round(v)
			}
			var burst bool
			if json.Unmarshal(s["initial_burst"], &burst) == nil && burst && r.RequestRate >= 1 {
				r.Notes = append(r.Notes, fmt.Sprintf("GuideLLM sent an initial burst (initial_burst): the first %d requests at once, then %s arrivals at %g a second; a plan's open loop has no such burst", int(r.RequestRate), r.Arrival, r.RequestRate))
			}
		case "throughput":
			r.Concurrency = r.Requests
			if v, ok := num(s["max_concurrency"]); ok && v >= 1 {
				r.Concurrency = round(v)
			}
		}
		r.Label += " (" + kind + ")"
		r.Notes = append(r.Notes, "GuideLLM's time_to_first_token_ms is InferCrane's ttft, its inter_token_latency_ms our tpot (its time_per_output_token_ms includes the first token and is not used), its request_latency (seconds) our latency; output throughput is its output tokens over the benchmark's duration")
		out = append(out, r)
	}
	return out, nil
}
