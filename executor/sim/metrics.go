package sim

import (
	"fmt"
	"io"
	"math"
	"sync/atomic"
)

// vLLM's histogram buckets (seconds) for the metrics the engine exports.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	// latenessBuckets resolve the constant mode's emission error.
	latenessBuckets = []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3}
	e2eBuckets      = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// histogram is a Prometheus histogram with fixed buckets. It takes no lock:
// the engine observes every token of every stream (two histograms per
// token), and with a mutex a stream goroutine that the OS preempted while
// holding it stalled every other stream behind it, on a busy machine for a
// whole time slice. Counters are atomic; a scrape during observations may
// see a sum a few observations ahead of or behind the counts, never a
// count that disagrees with the buckets.
type histogram struct {
	buckets []float64
	// counts[i] counts observations in bucket i (not cumulative); the
	// last, one past the buckets, those above every bound.
	counts  []atomic.Uint64
	sumBits atomic.Uint64 // math.Float64bits of the sum
}

func newHistogram(b []float64) *histogram {
	return &histogram{buckets: b, counts: make([]atomic.Uint64, len(b)+1)}
}

func (h *histogram) observe(v float64) {
	i := 0
	for i < len(h.buckets) && v > h.buckets[i] {
		i++
	}
	h.counts[i].Add(1)
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// snapshot returns the per-bucket counts (the last: above every bound),
// their total and the sum.
func (h *histogram) snapshot() (counts []uint64, count uint64, sum float64) {
	counts = make([]uint64, len(h.counts))
	for i := range h.counts {
		counts[i] = h.counts[i].Load()
		count += counts[i]
	}
	return counts, count, math.Float64frombits(h.sumBits.Load())
}

func (h *histogram) write(w io.Writer, name, help, labels string) {
	counts, count, sum := h.snapshot()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum uint64
	for i, le := range h.buckets {
		cum += counts[i]
		fmt.Fprintf(w, "%s_bucket{%s,le=\"%s\"} %d\n", name, labels, promFloat(le), cum)
	}
	fmt.Fprintf(w, "%s_bucket{%s,le=\"+Inf\"} %d\n", name, labels, count)
	fmt.Fprintf(w, "%s_sum{%s} %s\n", name, labels, promFloat(sum))
	fmt.Fprintf(w, "%s_count{%s} %d\n", name, labels, count)
}

func promFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return fmt.Sprintf("%g", v)
}

// metrics are the engine's Prometheus series, named as vLLM names them.
type metrics struct {
	promptTokens     atomic.Int64
	generationTokens atomic.Int64
	successLength    atomic.Int64
	successStop      atomic.Int64
	// prefixQueries and prefixHits count prompt tokens looked up in the
	// prefix cache and those it served (vLLM's prefix-cache counters).
	prefixQueries, prefixHits atomic.Int64
	preemptions               atomic.Int64
	// timelineResets counts model-mode steps that started more than maxLag
	// behind the simulated timeline (a machine too busy, or a Speedup too
	// high, for the engine to keep time); figures measured then run slow.
	timelineResets atomic.Int64
	// lateSteps counts model-mode steps that ended over 1 ms after their
	// due time.
	lateSteps atomic.Int64
	steps     atomic.Int64
	ttft      *histogram
	e2e       *histogram
	// queue and prefill are, in model mode, a request's time queued in the
	// engine until its first schedule and from then to its first token
	// (vLLM's request_queue_time and request_prefill_time).
	queue, prefill *histogram
	// lateness is, in constant mode, how long after its due time each
	// token's flush returned, and in model mode how long after its due time
	// each step ended: the engine's own timing error.
	lateness *histogram
	// decode holds the inter-token and time-per-output-token histograms.
	decode *decodeMetrics
}

func newMetrics() *metrics {
	return &metrics{ttft: newHistogram(ttftBuckets), e2e: newHistogram(e2eBuckets), lateness: newHistogram(latenessBuckets),
		queue: newHistogram(e2eBuckets), prefill: newHistogram(e2eBuckets),
		decode: newDecodeMetrics()}
}

// write renders the Prometheus text exposition format.
func (m *metrics) write(w io.Writer, model string, running, waiting int, kvUsage float64) {
	labels := fmt.Sprintf("engine=\"0\",model_name=%q", model)
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} %s\n", name, help, name, name, labels, promFloat(v))
	}
	counter := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s{%s} %d\n", name, help, name, name, labels, v)
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", float64(running))
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", float64(waiting))
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", kvUsage)
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", m.promptTokens.Load())
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.", m.generationTokens.Load())
	counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", m.preemptions.Load())
	counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", m.prefixQueries.Load())
	counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", m.prefixHits.Load())
	fmt.Fprintf(w, "# HELP vllm:request_success_total Count of successfully processed requests.\n# TYPE vllm:request_success_total counter\n")
	fmt.Fprintf(w, "vllm:request_success_total{%s,finished_reason=\"length\"} %d\n", labels, m.successLength.Load())
	fmt.Fprintf(w, "vllm:request_success_total{%s,finished_reason=\"stop\"} %d\n", labels, m.successStop.Load())
	fmt.Fprintf(w, "# HELP infercrane:sim_timeline_resets_total Model-mode steps that started over 50 ms behind the simulated timeline.\n# TYPE infercrane:sim_timeline_resets_total counter\ninfercrane:sim_timeline_resets_total{%s} %d\n", labels, m.timelineResets.Load())
	fmt.Fprintf(w, "# HELP infercrane:sim_late_steps_total Model-mode steps that ended over 1 ms after their due time (a machine too busy for the engine to keep time).\n# TYPE infercrane:sim_late_steps_total counter\ninfercrane:sim_late_steps_total{%s} %d\n", labels, m.lateSteps.Load())
	fmt.Fprintf(w, "# HELP infercrane:sim_steps_total Model-mode steps run.\n# TYPE infercrane:sim_steps_total counter\ninfercrane:sim_steps_total{%s} %d\n", labels, m.steps.Load())
	m.ttft.write(w, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", labels)
	m.e2e.write(w, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", labels)
	m.queue.write(w, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", labels)
	m.prefill.write(w, "vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", labels)
	m.decode.write(w, labels)
	m.lateness.write(w, "infercrane:sim_token_lateness_seconds", "Constant mode: time from each token's due time to the return of its flush; model mode: from each step's due end to its actual end.", labels)
}

// quantile estimates the q-quantile from the buckets: the upper bound of
// the bucket that holds it (+Inf as math.Inf(1)).
func (h *histogram) quantile(q float64) float64 {
	counts, count, _ := h.snapshot()
	if count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(count)))
	var cum uint64
	for i, le := range h.buckets {
		cum += counts[i]
		if cum >= max(rank, 1) {
			return le
		}
	}
	return math.Inf(1)
}

// above returns the number of observations and the fraction above v (at
// the resolution of the buckets: those in buckets whose upper bound
// exceeds v).
func (h *histogram) above(v float64) (uint64, float64) {
	counts, count, _ := h.snapshot()
	if count == 0 {
		return 0, 0
	}
	var within uint64
	for i, le := range h.buckets {
		if le <= v {
			within += counts[i]
		}
	}
	return count, float64(count-within) / float64(count)
}
