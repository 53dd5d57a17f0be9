package loadgen

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultGaugeInterval is how often a run samples the server's gauges
// (WithServerGauges) when the executors ask for them.
const DefaultGaugeInterval = 500 * time.Millisecond

// WithServerGauges makes Run sample the server's /metrics every interval
// from its start (calibration and warmup included) to its end and once
// more after it: Result.ServerMetrics gets the last values of every vllm:*
// sample, Result.ServerSeries the SeriesMetrics gauges over the run, timed
// from Result.Started. A server without /metrics is asked once. The
// scrapes use their own connection, never one of the measured streams'.
func WithServerGauges(interval time.Duration) Option {
	return func(o *runOptions) { o.gaugeEvery = interval }
}

// SeriesMetrics are the gauges sampled over a run for the report's
// server panels (vLLM's names; gpu_cache_usage_perc is the pre-0.10 name
// of kv_cache_usage_perc).
var SeriesMetrics = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting"}

type timedSample struct {
	at     time.Time
	values map[string]float64
}

// seriesScraper scrapes a server's /metrics every interval until stopped.
type seriesScraper struct {
	cancel  context.CancelFunc
	done    chan struct{}
	samples []timedSample
}

// startSeries scrapes base's /metrics now and then every interval; a
// server without /metrics is asked once.
func startSeries(ctx context.Context, base, apiKey string, interval time.Duration) *seriesScraper {
	ctx, cancel := context.WithCancel(ctx)
	sc := &seriesScraper{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(sc.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			m := scrapeMetrics(ctx, base, apiKey)
			if m == nil && len(sc.samples) == 0 {
				return // no /metrics: do not keep asking
			}
			if m != nil {
				sc.samples = append(sc.samples, timedSample{at: time.Now(), values: m})
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return sc
}

// stop ends the scraping and returns the samples.
func (sc *seriesScraper) stop() []timedSample {
	sc.cancel()
	<-sc.done
	return sc.samples
}

// finish stops the scraping, scrapes once more (the run's end) and returns
// that scrape's values and the series timed from origin.
func (sc *seriesScraper) finish(ctx context.Context, base, apiKey string, origin time.Time) (map[string]float64, []MetricSample) {
	samples := sc.stop()
	last := scrapeMetrics(ctx, base, apiKey)
	if last != nil {
		samples = append(samples, timedSample{at: time.Now(), values: last})
	}
	return last, seriesFrom(samples, origin)
}

// seriesFrom keeps the SeriesMetrics of each sample, timed from origin.
func seriesFrom(samples []timedSample, origin time.Time) []MetricSample {
	var out []MetricSample
	for _, s := range samples {
		v := map[string]float64{}
		for _, name := range SeriesMetrics {
			if x, ok := s.values[name]; ok {
				v[name] = x
			}
		}
		if len(v) > 0 && !origin.IsZero() {
			out = append(out, MetricSample{T: s.at.Sub(origin).Seconds(), Values: v})
		}
	}
	return out
}

// scrapeMetrics reads the vllm:* samples of a server's /metrics (last value
// of each name, labels dropped); nil when the server has none.
func scrapeMetrics(ctx context.Context, base, apiKey string) map[string]float64 {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/metrics", nil)
	if err != nil {
		return nil
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	return ParseMetrics(io.LimitReader(resp.Body, 8<<20))
}

// ParseMetrics reads Prometheus text exposition and returns the samples
// whose names start with "vllm:" (and the simulated engine's own
// "infercrane:sim_" counters of its timing health), summed over label sets
// (histogram buckets are left out; _sum and _count are kept).
func ParseMetrics(r io.Reader) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "vllm:") && !strings.HasPrefix(line, "infercrane:sim_") {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if strings.HasSuffix(name, "_bucket") {
			continue
		}
		if strings.HasPrefix(rest, "{") {
			j := strings.LastIndexByte(rest, '}')
			if j < 0 {
				continue
			}
			rest = rest[j+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		out[name] += v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// MetricSample is one scrape of a server's gauges during a run.
type MetricSample struct {
	// T is the seconds since the run's load generator started (the origin
	// of its records' times).
	T float64 `json:"t"`
	// Values maps metric names (vllm:kv_cache_usage_perc, ...) to values.
	Values map[string]float64 `json:"values"`
}
