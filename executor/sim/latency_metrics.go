package sim

import (
	"io"
	"time"
)

// interTokenBuckets are vLLM 0.32's inter_token_latency bucket family
// (vllm/v1/metrics/buckets.py), shared by vllm:inter_token_latency_seconds
// and vllm:request_time_per_output_token_seconds.
var interTokenBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}

// decodeMetrics are the per-token latency histograms vLLM exports next to
// time_to_first_token and e2e_request_latency, under vLLM's names and
// buckets, so a client can reconcile its own figures with the engine's:
// the inter-token latency of every decode step of every request, and each
// finished request's time per output token, (last token - first token) /
// (output tokens - 1), for requests of two or more tokens.
type decodeMetrics struct {
	itl  *histogram
	tpot *histogram
}

func newDecodeMetrics() *decodeMetrics {
	return &decodeMetrics{itl: newHistogram(interTokenBuckets), tpot: newHistogram(interTokenBuckets)}
}

func (d *decodeMetrics) write(w io.Writer, labels string) {
	d.itl.write(w, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", labels)
	d.tpot.write(w, "vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", labels)
}

// tokenClock follows one request's token times for decodeMetrics. The
// engine calls tick when it produces token k (after the timing mode's wait,
// before the write), as vLLM stamps a step's outputs before sending them.
type tokenClock struct {
	first, last time.Time
	n           int
}

// tick records a token produced at now, observing its gap to the previous one.
func (c *tokenClock) tick(d *decodeMetrics, now time.Time) {
	if c.n == 0 {
		c.first = now
	} else {
		d.itl.observe(now.Sub(c.last).Seconds())
	}
	c.last = now
	c.n++
}

// ticks records n tokens whose times are known only at the first and the
// last (a whole answer): the n-1 gaps are observed at their mean.
func (c *tokenClock) ticks(d *decodeMetrics, first, last time.Time, n int) {
	c.first, c.last, c.n = first, last, n
	if n < 2 {
		return
	}
	gap := last.Sub(first).Seconds() / float64(n-1)
	for range n - 1 {
		d.itl.observe(gap)
	}
}

// done observes the request's time per output token.
func (c *tokenClock) done(d *decodeMetrics) {
	if c.n >= 2 {
		d.tpot.observe(c.last.Sub(c.first).Seconds() / float64(c.n-1))
	}
}
