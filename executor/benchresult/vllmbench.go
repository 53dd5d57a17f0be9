package benchresult

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// parseVLLMBench reads `vllm bench serve --save-result` (and the older
// benchmarks/benchmark_serving.py, whose format it kept). Its TTFT is the
// send to the first streamed chunk, its TPOT (latency - ttft) / (output
// tokens - 1) per request, its ITL every chunk gap, its e2el our latency,
// its output_throughput total output tokens over the whole benchmark's
// duration: InferCrane's definitions (design section 5 follows them).
func parseVLLMBench(data []byte) (Result, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return Result{}, err
	}
	r := Result{Tool: ToolVLLMBench, Metrics: map[string]float64{}}
	r.Model = str(m["model_id"])
	completed, _ := num(m["completed"])
	r.Requests = round(completed)
	if r.Requests < 1 {
		return r, errors.New("vllm bench completed no request")
	}
	if failed, ok := num(m["failed"]); ok && failed > 0 {
		r.Failed = round(failed)
		r.Notes = append(r.Notes, failedNote("vllm bench", fmt.Sprintf("%d failed requests", r.Failed), r.Requests))
	}
	// Conditions recorded as --metadata KEY=VALUE (top-level strings).
	for _, k := range []string{"gpu", "gpu_type", "gpu_name", "hardware", "device", "accelerator"} {
		if g := GPUName(str(m[k])); g != "" {
			r.GPU = g
			break
		}
	}
	for _, k := range []string{"gpu_count", "num_gpus", "tp", "tensor_parallel_size"} {
		if v, ok := num(m[k]); ok && v >= 1 {
			r.GPUCount = round(v)
			break
		}
	}
	for _, k := range []string{"vllm", "vllm_version", "engine_version"} {
		if v := str(m[k]); v != "" {
			r.Engine, r.EngineVersion = "vllm", strings.TrimPrefix(v, "v")
			break
		}
	}
	for _, k := range []string{"engine", "runtime"} {
		if v := str(m[k]); v != "" {
			if e, ver, err := ParseEngine(v); err == nil {
				r.Engine, r.EngineVersion = e, ver
			}
		}
	}
	r.ToolVersion = str(m["vllm_bench_version"])
	// Lengths: the per-request arrays, else the totals' means.
	var ins, outs []int
	_ = json.Unmarshal(m["input_lens"], &ins)
	_ = json.Unmarshal(m["output_lens"], &outs)
	if len(ins) > 0 && len(ins) == len(outs) {
		for i := range ins {
			if ins[i] > 0 && outs[i] > 0 {
				r.Sizes = append(r.Sizes, Size{ins[i], outs[i]})
			}
		}
		var ttfts []float64
		if json.Unmarshal(m["ttfts"], &ttfts) == nil && len(ttfts) == len(ins) {
			for i, t := range ttfts {
				if outs[i] > 0 && t > 0 {
					r.TTFTsMs = append(r.TTFTsMs, 1000*t)
				}
			}
		}
	}
	if in, ok := num(m["total_input_tokens"]); ok && in > 0 {
		r.InputTokens = round(in / completed)
	}
	if out, ok := num(m["total_output_tokens"]); ok && out > 0 {
		r.OutputTokens = round(out / completed)
	}
	if len(r.Sizes) > 0 && (r.InputTokens == 0 || r.OutputTokens == 0) {
		var si, so int
		for _, z := range r.Sizes {
			si += z.Input
			so += z.Output
		}
		r.InputTokens, r.OutputTokens = round(float64(si)/float64(len(r.Sizes))), round(float64(so)/float64(len(r.Sizes)))
	}
	// Load: --request-rate (inf: every prompt at once) under
	// --max-concurrency.
	rate, rateOK := num(m["request_rate"])
	if c, ok := num(m["max_concurrency"]); ok && c >= 1 {
		r.Concurrency = round(c)
	}
	switch {
	case rateOK && !math.IsInf(rate, 1) && rate > 0:
		r.RequestRate = rate
		r.Arrival, r.Burstiness = "poisson", 1
		if b, ok := num(m["burstiness"]); ok && b > 0 && b != 1 {
			r.Arrival, r.Burstiness = "gamma", b
		}
	case rateOK || m["request_rate"] == nil:
		if r.Concurrency < 1 {
			r.Concurrency = r.Requests
			r.Notes = append(r.Notes, "request rate inf without --max-concurrency: every prompt sent at once, modelled as a closed loop of one stream per request")
		}
		r.Concurrency = min(r.Concurrency, r.Requests)
	}
	for _, q := range []struct{ ours, theirs string }{
		{"ttft", "ttft"}, {"tpot", "tpot"}, {"itl", "itl"}, {"latency", "e2el"},
	} {
		mean, ok := num(m["mean_"+q.theirs+"_ms"])
		put(r.Metrics, q.ours+"_mean_ms", mean, ok)
		p50, ok := num(m["p50_"+q.theirs+"_ms"])
		if !ok {
			p50, ok = num(m["median_"+q.theirs+"_ms"])
		}
		put(r.Metrics, q.ours+"_p50_ms", p50, ok)
		for _, p := range []string{"95", "99"} {
			v, ok := num(m["p"+p+"_"+q.theirs+"_ms"])
			put(r.Metrics, q.ours+"_p"+p+"_ms", v, ok)
		}
	}
	delete(r.Metrics, "itl_p95_ms")
	delete(r.Metrics, "itl_p99_ms")
	ot, ok := num(m["output_throughput"])
	put(r.Metrics, OutTput, ot, ok)
	rt, ok := num(m["request_throughput"])
	put(r.Metrics, ReqTput, rt, ok)
	r.Notes = append(r.Notes, "vllm bench's TTFT (send to the first streamed chunk), TPOT, ITL and e2el are InferCrane's ttft, tpot, itl and latency; output_throughput is its output tokens over the benchmark's duration")
	return r, nil
}
