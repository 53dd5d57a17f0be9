package executor

import (
	"bufio"
	"context"
	"fmt"
	"github.com/infercrane/infercrane/planner/state"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
)

// RunLoad performs run r against server s with the built-in load generator,
// forwarding its progress to ReportProgress and scraping the server's
// Prometheus metrics when the run ends. apiKey is sent as a bearer token
// and never recorded. Executors whose server is reachable from this
// process (sim, endpoint, local) implement Run with it.
func RunLoad(ctx context.Context, s *Server, r RunSpec, apiKey string) (*RunResult, error) {
	cfg := r.Load
	cfg.BaseURL = s.BaseURL
	if cfg.Model == "" {
		cfg.Model = s.Model
	}
	cfg.APIKey = apiKey
	total := cfg.Requests
	progress := loadgen.WithProgress(func(p loadgen.Progress) {
		if p.Warmup {
			return
		}
		ReportProgress(ctx, Progress{Done: p.Done, Failed: p.Errors, Total: total,
			OutputTokens: p.OutputTokens, TokensPerSecond: p.TokensPerSecond, TTFTP50Ms: p.TTFTP50Ms})
	}, 250*time.Millisecond)
	opts := []loadgen.Option{progress}
	var sink *loadgen.RecordsFile
	if r.RecordsPath != "" {
		var err error
		if sink, err = loadgen.CreateRecordsFile(r.RecordsPath); err != nil {
			return nil, fmt.Errorf("write the records of run %d of lane %s: %w; make the state directory writable", r.Run, r.Lane, err)
		}
		defer sink.Abort()
		opts = append(opts, loadgen.WithRecordSink(sink.Write, filepath.Dir(r.RecordsPath)))
	}
	sc := startSeries(ctx, s.BaseURL, apiKey, seriesInterval)
	res, err := loadgen.Run(ctx, cfg, opts...)
	samples := sc.stop()
	if err != nil {
		return nil, err
	}
	out := &RunResult{Summary: res.Summary, Records: res.Records, ServerView: res.ServerView}
	if sink != nil {
		if err := sink.Close(); err != nil {
			return nil, err
		}
		out.RecordsFile = r.RecordsPath
	}
	out.ServerMetrics = scrapeMetrics(ctx, s.BaseURL, apiKey)
	if out.ServerMetrics != nil {
		samples = append(samples, timedSample{at: time.Now(), values: out.ServerMetrics})
	}
	out.ServerSeries = seriesFrom(samples, res.Started)
	return out, nil
}

// SeriesMetrics are the gauges sampled over a run for the report's
// server panels (vLLM's names; gpu_cache_usage_perc is the pre-0.10 name
// of kv_cache_usage_perc).
var SeriesMetrics = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting"}

// seriesInterval is how often a run scrapes /metrics.
const seriesInterval = 500 * time.Millisecond

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

// seriesFrom keeps the SeriesMetrics of each sample, timed from origin.
func seriesFrom(samples []timedSample, origin time.Time) []state.MetricSample {
	var out []state.MetricSample
	for _, s := range samples {
		v := map[string]float64{}
		for _, name := range SeriesMetrics {
			if x, ok := s.values[name]; ok {
				v[name] = x
			}
		}
		if len(v) > 0 && !origin.IsZero() {
			out = append(out, state.MetricSample{T: s.at.Sub(origin).Seconds(), Values: v})
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
