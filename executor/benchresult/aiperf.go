package benchresult

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// aiperfStat is one AIPerf metric summary.
type aiperfStat struct {
	Unit string   `json:"unit"`
	Avg  *float64 `json:"avg"`
	P50  *float64 `json:"p50"`
	P90  *float64 `json:"p90"`
	P95  *float64 `json:"p95"`
	P99  *float64 `json:"p99"`
	Sum  *float64 `json:"sum"`
}

// toMs is the factor from unit to milliseconds (1 for "" and "ms").
func toMs(unit string) float64 {
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "s", "sec", "second", "seconds":
		return 1000
	case "us", "µs", "μs", "microseconds":
		return 1e-3
	case "ns", "nanoseconds":
		return 1e-6
	}
	return 1
}

// parseAIPerf reads AIPerf's profile_export_aiperf.json: metric summaries
// at the top level (0.2 and later) or under "records" (0.1). AIPerf's
// "inter_token_latency" is (latency - ttft) / (output tokens - 1), our
// TPOT; its "inter_chunk_latency" our ITL; it counts output tokens by
// re-tokenising the streamed text unless --use-server-token-count.
func parseAIPerf(data []byte) (Result, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return Result{}, err
	}
	metrics := top
	if rec, ok := top["records"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(rec, &inner) == nil && len(inner) > 0 {
			metrics = inner
		}
	}
	stat := func(name string) (aiperfStat, bool) {
		var s aiperfStat
		raw, ok := metrics[name]
		if !ok || json.Unmarshal(raw, &s) != nil {
			return s, false
		}
		return s, true
	}
	r := Result{Tool: ToolAIPerf, Metrics: map[string]float64{}}
	r.ToolVersion = str(top["aiperf_version"])
	lat := func(ours, theirs string, percentiles ...string) {
		s, ok := stat(theirs)
		if !ok {
			return
		}
		f := toMs(s.Unit)
		pick := map[string]*float64{"mean": s.Avg, "p50": s.P50, "p95": s.P95, "p99": s.P99}
		for _, p := range percentiles {
			if v := pick[p]; v != nil {
				put(r.Metrics, ours+"_"+p+"_ms", *v*f, true)
			}
		}
	}
	lat("ttft", "time_to_first_token", "mean", "p50", "p95", "p99")
	lat("tpot", "inter_token_latency", "mean", "p50", "p95", "p99")
	lat("itl", "inter_chunk_latency", "mean", "p50")
	lat("latency", "request_latency", "mean", "p50", "p95", "p99")
	if s, ok := stat("output_token_throughput"); ok && s.Avg != nil {
		put(r.Metrics, OutTput, *s.Avg, true)
	}
	if s, ok := stat("request_throughput"); ok && s.Avg != nil {
		put(r.Metrics, ReqTput, *s.Avg, true)
	}
	if s, ok := stat("input_sequence_length"); ok && s.Avg != nil {
		r.InputTokens = round(*s.Avg)
	}
	osl, oslOK := stat("output_sequence_length")
	if oslOK && osl.Avg != nil {
		r.OutputTokens = round(*osl.Avg)
	}
	// The server's own counts (usage, AIPerf 0.13 on) are InferCrane's:
	// the prompt with its chat template, the output as generated.
	if s, ok := stat("usage_prompt_tokens"); ok && s.Avg != nil && *s.Avg > 0 {
		r.InputTokens = round(*s.Avg)
	}
	if s, ok := stat("usage_completion_tokens"); ok && s.Avg != nil && *s.Avg > 0 {
		r.OutputTokens = round(*s.Avg)
		if oslOK && osl.Avg != nil && math.Abs(*osl.Avg / *s.Avg - 1) > 0.01 {
			// Its ITL divides each request's decode time by its own
			// re-tokenised count, and its output throughput counts them.
			delete(r.Metrics, TPOTMean)
			delete(r.Metrics, TPOTP50)
			delete(r.Metrics, TPOTP95)
			delete(r.Metrics, TPOTP99)
			if v, ok := r.Metrics[OutTput]; ok {
				r.Metrics[OutTput] = v * *s.Avg / *osl.Avg
			}
			r.Notes = append(r.Notes, fmt.Sprintf("AIPerf re-tokenised the output to %.2f tokens a request where the server counted %.2f: its inter_token_latency divides by its own count, so the TPOT is left out (profile_export.jsonl gives it with the server's counts), and the output throughput is scaled to the server's count", *osl.Avg, *s.Avg))
		}
	}
	if s, ok := stat("request_count"); ok && s.Avg != nil {
		r.Requests = round(*s.Avg)
	}
	// The load and model from the recorded configuration.
	var cfg struct {
		Endpoint struct {
			ModelNames []string `json:"model_names"`
		} `json:"endpoint"`
		Loadgen map[string]json.RawMessage `json:"loadgen"`
		// AIPerf 0.13: models.items[].name and a list of phases.
		Models struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
		} `json:"models"`
		Phases []map[string]json.RawMessage `json:"phases"`
		Input  struct {
			RandomSeed *int64 `json:"random_seed"`
		} `json:"input"`
	}
	_ = json.Unmarshal(top["input_config"], &cfg)
	r.Seed = cfg.Input.RandomSeed
	if len(cfg.Endpoint.ModelNames) > 0 {
		r.Model = cfg.Endpoint.ModelNames[0]
	} else if len(cfg.Models.Items) > 0 {
		r.Model = cfg.Models.Items[0].Name
	}
	if cfg.Loadgen == nil {
		cfg.Loadgen = map[string]json.RawMessage{}
	}
	for _, ph := range cfg.Phases {
		switch str(ph["kind"]) {
		case "warmup":
			if _, set := cfg.Loadgen["warmup_request_count"]; !set {
				cfg.Loadgen["warmup_request_count"] = ph["requests"]
			}
		case "profiling":
			for ours, theirs := range map[string]string{"concurrency": "concurrency", "request_count": "requests", "request_rate": "rate"} {
				if _, set := cfg.Loadgen[ours]; !set && ph[theirs] != nil {
					cfg.Loadgen[ours] = ph[theirs]
				}
			}
			if v := ph["request_rate"]; v != nil {
				cfg.Loadgen["request_rate"] = v
			}
		}
	}
	if c, ok := num(cfg.Loadgen["concurrency"]); ok && c >= 1 {
		r.Concurrency = round(c)
	}
	if v, ok := num(cfg.Loadgen["request_rate"]); ok && v > 0 && !math.IsInf(v, 1) {
		r.RequestRate, r.Arrival = v, "poisson"
	}
	if v, ok := num(cfg.Loadgen["warmup_request_count"]); ok && v > 0 {
		r.Warmup = round(v)
	}
	if r.Requests == 0 {
		if v, ok := num(cfg.Loadgen["request_count"]); ok && v > 0 {
			r.Requests = round(v)
		}
	}
	r.GPU = aiperfGPU(top["telemetry_data"])
	if r.Model == "" {
		r.Model = str(top["model"])
	}
	r.Notes = append(r.Notes, "AIPerf's time_to_first_token is InferCrane's ttft, its inter_token_latency our tpot, its inter_chunk_latency our itl, its request_latency our latency; its output token counts are its own re-tokenisation of the streamed text unless it ran with --use-server-token-count")
	return r, nil
}

// aiperfGPU is the catalog name of the GPU AIPerf's telemetry saw.
func aiperfGPU(raw json.RawMessage) string {
	var t struct {
		Endpoints map[string]struct {
			GPUs map[string]struct {
				Name string `json:"gpu_name"`
			} `json:"gpus"`
		} `json:"endpoints"`
	}
	if json.Unmarshal(raw, &t) != nil {
		return ""
	}
	for _, e := range t.Endpoints {
		for _, g := range e.GPUs {
			if n := GPUName(g.Name); n != "" {
				return n
			}
		}
	}
	return ""
}

// parseAIPerfRecords reads AIPerf's per-record JSON Lines export
// (profile_export.jsonl): each line a request's metadata, metrics and
// error. It computes the run's figures with InferCrane's definitions and
// percentiles (linear interpolation); the load is not recorded per
// record beyond the number of requests, so the concurrency is the most
// requests in flight at once.
func parseAIPerfRecords(data []byte) (Result, error) {
	r := Result{Tool: ToolAIPerf, Metrics: map[string]float64{}}
	type span struct{ start, end int64 }
	var ttft, tpot, lat []float64
	var spans []span
	var outTok float64
	var inSum, outSum, n, retokenised int
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var rec struct {
			Metadata struct {
				Phase string `json:"benchmark_phase"`
				Start *int64 `json:"request_start_ns"`
				End   *int64 `json:"request_end_ns"`
			} `json:"metadata"`
			Metrics map[string]struct {
				Value json.RawMessage `json:"value"`
				Unit  string          `json:"unit"`
			} `json:"metrics"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return r, fmt.Errorf("line %d: %v", i+1, err)
		}
		if p := rec.Metadata.Phase; p != "" && p != "profiling" {
			continue
		}
		if len(rec.Error) > 0 && string(rec.Error) != "null" {
			continue
		}
		val := func(name string) (float64, bool) {
			m, ok := rec.Metrics[name]
			if !ok {
				return 0, false
			}
			v, ok := num(m.Value)
			return v * toMs(m.Unit), ok
		}
		raw := func(name string) (float64, bool) {
			m, ok := rec.Metrics[name]
			if !ok {
				return 0, false
			}
			return num(m.Value)
		}
		n++
		if v, ok := val("time_to_first_token"); ok {
			ttft = append(ttft, v)
		}
		tpotRecorded, hasTPOT := val("inter_token_latency")
		if v, ok := val("request_latency"); ok {
			lat = append(lat, v)
		}
		// The server's counts (usage) are InferCrane's; AIPerf's own are
		// its re-tokenisation of the streamed text.
		out, outOK := raw("usage_completion_tokens")
		if !outOK || out < 1 {
			if out, outOK = raw("output_sequence_length"); !outOK {
				out, outOK = raw("output_token_count")
			}
		} else if theirs, ok := raw("output_sequence_length"); ok && theirs != out {
			retokenised++
		}
		if outOK {
			outSum += round(out)
			outTok += out
		}
		if v, ok := raw("usage_prompt_tokens"); ok && v > 0 {
			inSum += round(v)
		} else if v, ok := raw("input_sequence_length"); ok {
			inSum += round(v)
		}
		// TPOT is (latency - ttft) / (output tokens - 1) with the server's
		// count when the record has it.
		l, lok := val("request_latency")
		f, fok := val("time_to_first_token")
		switch {
		case lok && fok && outOK && out > 1:
			tpot = append(tpot, (l-f)/(out-1))
		case hasTPOT:
			tpot = append(tpot, tpotRecorded)
		}
		if s, e := rec.Metadata.Start, rec.Metadata.End; s != nil && e != nil && *e >= *s {
			spans = append(spans, span{*s, *e})
			first, last = min(first, *s), max(last, *e)
		}
	}
	if n == 0 {
		return r, errors.New("no succeeded profiling record")
	}
	r.Requests = n
	r.InputTokens, r.OutputTokens = round(float64(inSum)/float64(n)), round(float64(outSum)/float64(n))
	putSummary(r.Metrics, "ttft", ttft)
	putSummary(r.Metrics, "tpot", tpot)
	putSummary(r.Metrics, "latency", lat)
	r.TTFTsMs = ttft
	if last > first {
		window := float64(last-first) / 1e9
		put(r.Metrics, OutTput, outTok/window, true)
		put(r.Metrics, ReqTput, float64(n)/window, true)
	}
	// The most requests in flight at once.
	type ev struct {
		t int64
		d int
	}
	evs := make([]ev, 0, 2*len(spans))
	for _, s := range spans {
		evs = append(evs, ev{s.start, 1}, ev{s.end, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].t != evs[j].t {
			return evs[i].t < evs[j].t
		}
		return evs[i].d < evs[j].d
	})
	cur, peak := 0, 0
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	r.Concurrency = peak
	r.Notes = append(r.Notes, "AIPerf per-record export: figures recomputed from its records with the server's token counts where they are recorded (usage); tpot is (latency - ttft) / (output tokens - 1); the concurrency is the most requests it had in flight at once")
	if retokenised > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("AIPerf's own output count (its re-tokenisation) differs from the server's in %d of %d records; the server's is used", retokenised, n))
	}
	return r, nil
}

// putSummary puts the mean, p50, p95 and p99 of per-request figures v
// (milliseconds; sorted in place) as name_mean_ms and so on; nothing when
// v is empty.
func putSummary(m map[string]float64, name string, v []float64) {
	if len(v) == 0 {
		return
	}
	sort.Float64s(v)
	s := 0.0
	for _, x := range v {
		s += x
	}
	put(m, name+"_mean_ms", s/float64(len(v)), true)
	put(m, name+"_p50_ms", Percentile(v, 50), true)
	put(m, name+"_p95_ms", Percentile(v, 95), true)
	put(m, name+"_p99_ms", Percentile(v, 99), true)
}
