package executor

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
)

// RunLoad performs run r against server s with the built-in load generator,
// forwarding its progress to ReportProgress and sampling the server's
// Prometheus gauges over the run (loadgen.WithServerGauges). apiKey is sent as a bearer token
// and never recorded. After a run with failed requests it probes the server
// (ProbeServer) and sets RunResult.ServerLost when it no longer answers.
// Executors whose server is reachable from this process (sim, endpoint,
// local) implement Run with it.
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
	opts = append(opts, loadgen.WithServerGauges(seriesInterval))
	res, err := loadgen.Run(ctx, cfg, opts...)
	if err != nil {
		return nil, err
	}
	out := &RunResult{Summary: res.Summary, Records: res.Records, ServerView: res.ServerView,
		ServerMetrics: res.ServerMetrics, ServerSeries: res.ServerSeries}
	// Failed requests may be the server going away (streams cut by its
	// death): ask whether it is still there, so the runner can tell a
	// measurement from an infrastructure failure.
	if res.Summary.Failed > 0 && ctx.Err() == nil {
		if perr := ProbeServer(ctx, s, apiKey); perr != nil {
			out.ServerLost = "GET /v1/models after the run: " + perr.Error()
		}
	}
	if sink != nil {
		if err := sink.Close(); err != nil {
			return nil, err
		}
		out.RecordsFile = r.RecordsPath
	}
	return out, nil
}

// seriesInterval is how often a run scrapes the server's gauges.
const seriesInterval = loadgen.DefaultGaugeInterval
