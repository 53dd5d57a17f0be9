package loadgen

import (
	"github.com/infercrane/infercrane/executor/redact"

	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infercrane/infercrane/executor/clock"
	"github.com/infercrane/infercrane/planner/load"
)

// Progress is a snapshot of a running benchmark for live displays.
type Progress struct {
	// Warmup is true while warmup requests run.
	Warmup bool
	// Done counts finished requests of the current phase (succeeded, failed
	// or cancelled); Total is the phase's request count (0 when bounded by
	// duration only).
	Done, Total int
	// Errors counts failed requests of the current phase.
	Errors int
	// InFlight is the number of requests sent and not yet finished.
	InFlight int
	// TokensPerSecond is the output token rate over the last interval.
	TokensPerSecond float64
	// OutputTokens is the output tokens of the phase's finished requests.
	OutputTokens int64
	// TTFTP50Ms is the median TTFT of the phase's succeeded streamed
	// requests so far (0 before the first one).
	TTFTP50Ms float64
	// Elapsed is the time since the phase started.
	Elapsed time.Duration
}

// Result is everything a run produced. Its JSON form has the summary and
// records under the same names as executor.RunResult, so a result printed
// by a remote `bench --result -` decodes straight into one.
type Result struct {
	Summary Summary `json:"summary"`
	// Records holds every request, warmup included (flagged), in index
	// order; nil (and left out of the JSON) when the run streamed them to
	// a records file instead (WithRecordSink, RunRecorded).
	Records []Record `json:"records,omitempty"`
	// Calibrations says how prompts of each target length were sized.
	Calibrations []Calibration `json:"calibrations"`
	// Prompts says where the run's prompt texts came from, and so whether
	// another run sends the same ones.
	Prompts Prompts `json:"prompts"`
	// Started is the wall-clock time of the run's start (record times are
	// offsets from it on the monotonic clock).
	Started time.Time `json:"started"`
	// ServerView is what the server's own latency histograms recorded
	// during the measured requests (nil when it exposes none).
	ServerView *ServerView `json:"server_view,omitempty"`
	// ServerMetrics are the server's vllm:* samples at the run's end (last
	// value of each name), and ServerSeries its SeriesMetrics gauges over
	// the run, with WithServerGauges and a server that exposes /metrics.
	ServerMetrics map[string]float64 `json:"server_metrics,omitempty"`
	ServerSeries  []MetricSample     `json:"server_series,omitempty"`
}

type runOptions struct {
	progress func(Progress)
	every    time.Duration
	hc       *http.Client
	// sink, when set, receives every record instead of Result.Records
	// (see WithRecordSink); spillDir is where the summary's metric
	// values spill.
	sink     func(*Record) error
	spillDir string
	// gaugeEvery, when positive, is how often the server's gauges are
	// sampled (WithServerGauges).
	gaugeEvery time.Duration
	// stdTimer makes the open loop sleep on a time.Timer instead of the
	// precise clock: the baseline the benchmarks compare against (set by
	// the tests only).
	stdTimer bool
	// spin is how long before a request's instant the open loop wakes to
	// yield in a loop until it (dispatchSpin; the tests vary it).
	spin time.Duration
}

// dispatchSpin is the open loop's bounded spin before each send: a thread
// wakes from idle 50-150 µs after its timer here (2-vCPU VM), and waking
// 50 µs early halved the send lateness's median at 1,000 req/s (96 -> 47
// µs) and cut it by a fifth at 50 req/s, at no measurable CPU cost (the
// wake-up's own lateness eats most of the window; 100 µs cost 3% more
// CPU per request). BenchmarkOpenLoopSendLateness measures it.
const dispatchSpin = 50 * time.Microsecond

// spillLimit is how many values of each metric a run that streams its
// records keeps in memory before it spills them (512 KiB a metric).
const spillLimit = 1 << 16

// WithRecordSink makes Run hand every record to fn as it finishes (warm-up
// ones included, flagged; in completion order, Index says the send order;
// fn is called one record at a time) and keep none: Result.Records stays
// nil, and the summary is computed on the fly with each metric's values
// spilled to temporary files in spillDir ("" the system's) beyond 64 Ki
// values, so memory does not grow with the number of requests. The
// summary is the one Compute makes from the records in the order fn got
// them. An error from fn stops the run and is returned.
func WithRecordSink(fn func(*Record) error, spillDir string) Option {
	return func(o *runOptions) { o.sink, o.spillDir = fn, spillDir }
}

// Option adjusts how Run works.
type Option func(*runOptions)

// WithProgress calls fn with a Progress snapshot every interval (500 ms when
// interval is 0) and once at the end of each phase. fn runs on its own
// goroutine and must not block for long.
func WithProgress(fn func(Progress), interval time.Duration) Option {
	return func(o *runOptions) {
		o.progress = fn
		if interval > 0 {
			o.every = interval
		}
	}
}

// WithHTTPClient makes Run use hc (its transport, timeouts, TLS settings)
// instead of the tuned transport from NewTransport.
func WithHTTPClient(hc *http.Client) Option {
	return func(o *runOptions) { o.hc = hc }
}

// WithTransport makes Run use rt instead of the tuned transport.
func WithTransport(rt http.RoundTripper) Option {
	return func(o *runOptions) { o.hc = &http.Client{Transport: rt} }
}

// Run executes one benchmark run: it sizes prompts (with the server's
// /tokenize when it has one), runs the warmup requests, then the measured
// requests in closed loop (Concurrency workers), open loop (RequestRate with
// an arrival pattern, Concurrency capping requests in flight when set) or
// trace replay, stopping by count or by duration plus grace. Cancelling ctx
// stops the run; the requests cut off are recorded as cancelled and Run
// returns the partial result with ctx's error.
func Run(ctx context.Context, cfg Config, opts ...Option) (res *Result, err error) {
	o := runOptions{every: 500 * time.Millisecond, spin: dispatchSpin}
	for _, fn := range opts {
		fn(&o)
	}
	cfg, trace, err := normalize(cfg)
	if err != nil {
		return nil, err
	}
	if o.hc == nil {
		streams := cfg.Concurrency
		o.hc = &http.Client{Transport: NewTransport(streams, cfg.H2C)}
		defer o.hc.CloseIdleConnections()
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if o.gaugeEvery > 0 {
		gauges := startSeries(ctx, base, cfg.APIKey, o.gaugeEvery)
		defer func() {
			if res != nil {
				res.ServerMetrics, res.ServerSeries = gauges.finish(ctx, base, cfg.APIKey, res.Started)
			} else {
				gauges.stop()
			}
		}()
	}
	chat := cfg.API == "chat"
	cal := &calibrator{client: o.hc, base: base, model: cfg.Model, apiKey: cfg.APIKey, chat: chat,
		seed: cfg.Seed, byToken: map[int]Calibration{}}
	r := &runner{cfg: cfg, trace: trace, o: o, chat: chat, cal: cal, promptSeed: promptSeed(cfg)}
	if o.sink != nil {
		r.acc = NewAccumulator(cfg.SLO, o.spillDir, spillLimit)
	}
	prepare := r.calibrateAll
	if cfg.Workload.Active() {
		prepare = r.planWorkload
	}
	if err := prepare(ctx); err != nil {
		return nil, err
	}
	r.c = &client{hc: o.hc, url: base + endpoint(cfg.API), apiKey: cfg.APIKey, stream: cfg.Streaming, opts: cfg.Options,
		timeout: time.Duration(cfg.TimeoutMs) * time.Millisecond, red: redact.New(append([]string{cfg.APIKey}, cfg.Redact...)...)}
	res = &Result{Started: time.Now(), Prompts: Prompts{Seed: cfg.Seed, Salt: cfg.PromptSalt}}
	r.c.start = res.Started
	r.prewarm(ctx, base)
	if cfg.Warmup > 0 || cfg.WarmupDurationMs > 0 {
		r.phase(ctx, true)
	}
	// The server's histograms are read right before and right after the
	// measured requests, so their change covers those requests alone.
	before, serr := scrapeHistograms(ctx, o.hc, base, cfg.APIKey)
	if ctx.Err() == nil {
		r.phase(ctx, false)
	}
	res.Calibrations = r.calibrations()
	if o.sink != nil {
		var serr error
		if res.Summary, serr = r.acc.Summary(); serr == nil {
			serr = r.sinkErr
		}
		if serr != nil {
			return res, serr
		}
	} else {
		res.Records = r.records
		res.Summary = Compute(res.Records, cfg.SLO)
	}
	if serr == nil && before != nil && ctx.Err() == nil {
		res.ServerView, _ = serverDelta(ctx, o.hc, base, cfg.APIKey, before, res.Summary.Succeeded)
	}
	return res, ctx.Err()
}

// normalize fills defaults and rejects configurations that cannot run,
// saying what to change.
func normalize(cfg Config) (Config, []TraceEntry, error) {
	if cfg.API == "" {
		cfg.API = "chat"
	}
	if cfg.TimeoutMs == 0 {
		cfg.TimeoutMs = 10 * 60 * 1000
	}
	if cfg.GraceMs == 0 {
		cfg.GraceMs = 30 * 1000
	}
	if cfg.TimeScale == 0 {
		cfg.TimeScale = 1
	}
	var trace []TraceEntry
	switch {
	case cfg.BaseURL == "":
		return cfg, nil, fmt.Errorf("no server URL; set the base URL, e.g. http://127.0.0.1:8000")
	case !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://"):
		return cfg, nil, fmt.Errorf("server URL %q must start with http:// or https://", cfg.BaseURL)
	case cfg.Model == "":
		return cfg, nil, fmt.Errorf("no model; set the served model name")
	case cfg.API != "chat" && cfg.API != "completions":
		return cfg, nil, fmt.Errorf("api %q is not known; use chat or completions", cfg.API)
	case cfg.Concurrency < 0 || cfg.Requests < 0 || cfg.Warmup < 0 || cfg.WarmupDurationMs < 0 || cfg.DurationMs < 0 || cfg.TimeoutMs < 0 || cfg.GraceMs < 0 || cfg.RampUpMs < 0:
		return cfg, nil, fmt.Errorf("concurrency, requests, warmup, warmup duration, duration, timeout, grace and ramp-up must not be negative")
	case cfg.TimeScale < 0:
		return cfg, nil, fmt.Errorf("time scale %g must be positive (0.5 replays twice as fast)", cfg.TimeScale)
	}
	if cfg.TraceFile != "" {
		t, err := ReadTrace(cfg.TraceFile)
		if err != nil {
			return cfg, nil, err
		}
		trace = t
		if cfg.Requests == 0 || cfg.Requests > len(trace) {
			cfg.Requests = len(trace)
		}
		return cfg, trace, nil
	}
	switch {
	case cfg.InputTokens < 1 || cfg.OutputTokens < 1:
		return cfg, nil, fmt.Errorf("input and output tokens must be at least 1 (got %d and %d)", cfg.InputTokens, cfg.OutputTokens)
	case cfg.RequestRate < 0:
		return cfg, nil, fmt.Errorf("request rate %g must be positive", cfg.RequestRate)
	case cfg.RequestRate == 0 && cfg.Concurrency < 1:
		return cfg, nil, fmt.Errorf("set a concurrency (closed loop) or a request rate (open loop)")
	case cfg.Requests == 0 && cfg.DurationMs == 0:
		return cfg, nil, fmt.Errorf("set a request count or a duration to stop the run")
	}
	if cfg.RequestRate > 0 {
		if _, err := newArrivals(cfg); err != nil {
			return cfg, nil, err
		}
	}
	if err := checkWorkload(cfg); err != nil {
		return cfg, nil, fmt.Errorf("workload: %w", err)
	}
	return cfg, nil, nil
}

// runner holds one run's state.
type runner struct {
	cfg   Config
	trace []TraceEntry
	o     runOptions
	chat  bool
	cal   *calibrator
	c     *client
	// promptSeed seeds the prompts' texts: Seed salted with PromptSalt.
	promptSeed int64
	// seq and warm are a workload's drawn measured and warm-up requests
	// (nil without one); header is the chat template's tokens before the
	// user's text, which prefix prompts share anyway.
	seq, warm []load.Request
	header    int

	mu      sync.Mutex
	records []Record
	// acc, sinkErr and nstored replace records when records are streamed
	// (WithRecordSink).
	acc     *Accumulator
	sinkErr error
	nstored int
	// pending are finished records waiting for nextIndex to go out.
	pending   map[int]*Record
	nextIndex int
	// ttfts are the last ttftWindow TTFTs (ms) of the current phase's
	// succeeded streamed requests, a ring from ttftNext.
	ttfts    []float64
	ttftNext int

	// progress counters of the current phase
	done, errs, inflight, tokens atomic.Int64
}

// calibrateAll sizes the prompts of every target length the run uses.
func (r *runner) calibrateAll(ctx context.Context) error {
	if r.trace == nil {
		_, err := r.cal.calibrate(ctx, r.cfg.InputTokens)
		return err
	}
	for _, e := range r.trace[:r.cfg.Requests] {
		if _, err := r.cal.calibrate(ctx, e.InputTokens); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) calibrations() []Calibration {
	out := make([]Calibration, 0, len(r.cal.byToken))
	for _, c := range r.cal.byToken {
		out = append(out, c)
	}
	sortCalibrations(out)
	return out
}

// sizes returns the input and output tokens of measured request i.
func (r *runner) sizes(i int) (int, int) {
	if r.trace != nil {
		e := r.trace[i%len(r.trace)]
		return e.InputTokens, e.OutputTokens
	}
	return r.cfg.InputTokens, r.cfg.OutputTokens
}

// makeJob builds the request with record index index (warmup requests take
// the first indexes, measured ones follow) and the sizes of entry sizeIndex.
func (r *runner) makeJob(index, sizeIndex int, warmup bool) *job {
	if r.seq != nil {
		return r.workloadJob(index, sizeIndex, warmup)
	}
	in, out := r.sizes(sizeIndex)
	cal, _ := r.cal.calibrate(context.Background(), in) // cached by calibrateAll
	return &job{index: index, warmup: warmup, input: in, output: out,
		body: buildBody(&r.cfg, r.chat, promptText(r.promptSeed, index, cal.Words), out)}
}

// store records rec.
func (r *runner) store(rec *Record) {
	r.mu.Lock()
	if r.o.sink != nil {
		// Records go out in index order (as Result.Records has them): a
		// record that finishes before an earlier one waits, so at most
		// the requests in flight are held.
		r.nstored++
		if r.pending == nil {
			r.pending = map[int]*Record{}
		}
		cp := *rec
		r.pending[cp.Index] = &cp
		for p := r.pending[r.nextIndex]; p != nil; p = r.pending[r.nextIndex] {
			delete(r.pending, r.nextIndex)
			r.emit(p)
			r.nextIndex++
		}
	} else {
		r.records = append(r.records, *rec)
	}
	if rec.OK() && rec.FirstTokenNs > 0 && !rec.NonStreaming {
		v := float64(rec.FirstTokenNs-rec.SentNs) / 1e6
		if len(r.ttfts) < ttftWindow {
			r.ttfts = append(r.ttfts, v)
		} else {
			r.ttfts[r.ttftNext%ttftWindow] = v
		}
		r.ttftNext++
	}
	r.mu.Unlock()
	r.done.Add(1)
	if !rec.OK() && rec.ErrorClass != FailCancelled {
		r.errs.Add(1)
	}
	r.tokens.Add(int64(rec.OutputTokens))
}

// emit feeds a record to the summary and the sink (r.mu held).
func (r *runner) emit(rec *Record) {
	r.acc.Add(rec)
	if err := r.o.sink(rec); err != nil && r.sinkErr == nil {
		r.sinkErr = fmt.Errorf("write record %d: %w", rec.Index, err)
	}
}

// flushPending emits the records still waiting for an earlier index (one
// that never got a record), in index order, and starts the next phase at
// index next.
func (r *runner) flushPending(next int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := make([]int, 0, len(r.pending))
	for i := range r.pending {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		r.emit(r.pending[i])
		delete(r.pending, i)
	}
	r.nextIndex = next
}

// phase runs the warmup or the measured requests.
func (r *runner) phase(ctx context.Context, warmup bool) {
	r.done.Store(0)
	r.errs.Store(0)
	r.tokens.Store(0)
	r.mu.Lock()
	r.ttfts, r.ttftNext = nil, 0
	r.mu.Unlock()
	total := r.cfg.Requests
	if warmup {
		total = r.cfg.Warmup
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	phaseStart := time.Now()
	stopProgress := r.startProgress(warmup, total, phaseStart)
	defer stopProgress()

	// The measured phase of a duration run stops sending at the deadline and
	// cancels what is still in flight after the grace period; a warmup
	// bounded by time stops sending at its deadline and lets its requests
	// finish.
	var deadline time.Time
	if warmup && r.cfg.WarmupDurationMs > 0 {
		deadline = phaseStart.Add(time.Duration(r.cfg.WarmupDurationMs) * time.Millisecond)
	}
	if !warmup && r.cfg.DurationMs > 0 {
		deadline = phaseStart.Add(time.Duration(r.cfg.DurationMs) * time.Millisecond)
		grace := time.AfterFunc(time.Until(deadline)+time.Duration(r.cfg.GraceMs)*time.Millisecond, cancel)
		defer grace.Stop()
	}
	first := len(r.records)
	if r.o.sink != nil {
		first = r.nstored
		r.mu.Lock()
		r.nextIndex = first
		r.mu.Unlock()
	}
	open := !warmup && (r.cfg.RequestRate > 0 || r.trace != nil)
	switch {
	case open:
		r.openLoop(pctx, total, first, phaseStart, deadline)
	case r.cfg.Workload.Active() && r.cfg.Workload.Session != nil:
		workers := max(r.cfg.Concurrency, 1)
		r.sessionLoop(pctx, first, workers, warmup, deadline)
	default:
		workers := r.cfg.Concurrency
		if warmup && workers < 1 {
			// An open loop warms up in closed loop, 16 streams at most.
			workers = 16
			if total > 0 {
				workers = min(total, 16)
			}
		}
		r.closedLoop(pctx, total, first, workers, warmup, deadline)
	}
	// Keep records in index order.
	if r.o.sink == nil {
		sortRecords(r.records[first:])
	} else {
		r.flushPending(r.nstored)
	}
}

// closedLoop keeps workers requests in flight until total are sent (or the
// deadline passes). Every worker's first request is built before any is
// sent and the workers start together from a barrier, so the opening
// requests reach the server as one burst (the estimator's closed-loop
// start-up: every stream sends at once, or at its RampUpMs offset).
func (r *runner) closedLoop(ctx context.Context, total, first, workers int, warmup bool, deadline time.Time) {
	var next atomic.Int64
	var wg, ready sync.WaitGroup
	ramp := time.Duration(r.cfg.RampUpMs) * time.Millisecond
	if total > 0 {
		workers = min(workers, total)
	}
	opening := make([]*job, workers)
	for w := range opening {
		opening[w] = r.makeJob(first+w, w, warmup)
	}
	next.Store(int64(workers))
	start := make(chan struct{})
	var begin time.Time
	for w := range workers {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			ready.Done()
			<-start
			if ramp > 0 && !warmup {
				select {
				case <-time.After(time.Until(begin.Add(ramp * time.Duration(w) / time.Duration(workers)))):
				case <-ctx.Done():
					return
				}
			}
			var rec Record
			for j := opening[w]; ctx.Err() == nil; {
				if !deadline.IsZero() && !time.Now().Before(deadline) {
					return
				}
				r.inflight.Add(1)
				r.c.do(ctx, j, &rec)
				r.inflight.Add(-1)
				r.store(&rec)
				i := int(next.Add(1) - 1)
				if total > 0 && i >= total {
					return
				}
				j = r.makeJob(first+i, i, warmup)
			}
		}()
	}
	ready.Wait()
	begin = time.Now()
	close(start)
	wg.Wait()
}

// openLoop sends requests at their scheduled times, each on its own
// goroutine; a concurrency cap makes the dispatcher wait for a free slot,
// which shows up as dispatch delay. The dispatcher sleeps on a precise OS
// timer (package clock; a time.Timer wakes up to a millisecond late), and
// never sends a request before its scheduled instant.
func (r *runner) openLoop(ctx context.Context, total, first int, phaseStart time.Time, deadline time.Time) {
	var arr *load.Arrivals
	if r.trace == nil {
		arr, _ = newArrivals(r.cfg)
	}
	var slots chan struct{}
	if r.cfg.Concurrency > 0 {
		slots = make(chan struct{}, r.cfg.Concurrency)
	}
	base := r.c.since(phaseStart)
	var wg sync.WaitGroup
	var clk *clock.Clock
	if !r.o.stdTimer {
		clk = clock.New()
		defer clk.Close()
	}
	sl := clock.NewSleeper(clk)
dispatch:
	for i := 0; total == 0 || i < total; i++ {
		var at int64
		if arr != nil {
			at = arr.Next()
		} else {
			at = int64((r.trace[i].TimestampMs - r.trace[0].TimestampMs) * r.cfg.TimeScale * 1e6)
		}
		if !deadline.IsZero() && time.Duration(at) >= time.Duration(r.cfg.DurationMs)*time.Millisecond {
			break
		}
		j := r.makeJob(first+i, i, false)
		j.open, j.scheduledNs = true, base+at
		if !sl.UntilSpin(ctx, nil, phaseStart.Add(time.Duration(at)), r.o.spin) {
			break dispatch
		}
		if slots != nil {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				break dispatch
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		r.inflight.Add(1)
		go func() {
			defer wg.Done()
			var rec Record
			r.c.do(ctx, j, &rec)
			r.inflight.Add(-1)
			if slots != nil {
				<-slots
			}
			r.store(&rec)
		}()
	}
	wg.Wait()
}

// startProgress reports progress every interval until the returned func is
// called, which sends a final snapshot.
func (r *runner) startProgress(warmup bool, total int, start time.Time) func() {
	if r.o.progress == nil {
		return func() {}
	}
	stop := make(chan struct{})
	finished := make(chan struct{})
	snap := func(last *int64, lastT *time.Time) Progress {
		now := time.Now()
		tok := r.tokens.Load()
		rate := 0.0
		if dt := now.Sub(*lastT).Seconds(); dt > 0 {
			rate = float64(tok-*last) / dt
		}
		*last, *lastT = tok, now
		return Progress{Warmup: warmup, Done: int(r.done.Load()), Total: total, Errors: int(r.errs.Load()),
			InFlight: int(r.inflight.Load()), TokensPerSecond: rate, Elapsed: now.Sub(start),
			OutputTokens: tok, TTFTP50Ms: r.ttftP50()}
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(r.o.every)
		defer t.Stop()
		var last int64
		lastT := start
		for {
			select {
			case <-t.C:
				r.o.progress(snap(&last, &lastT))
			case <-stop:
				p := snap(&last, &lastT)
				p.TokensPerSecond = float64(r.tokens.Load()) / max(p.Elapsed.Seconds(), 1e-9)
				r.o.progress(p)
				return
			}
		}
	}()
	return func() {
		close(stop)
		<-finished
	}
}

// prewarm opens the connections the run will hold (one per concurrent
// stream, up to 4096) with concurrent GET /v1/models requests, so the first
// wave's TTFT does not include TCP handshakes queued behind each other.
// Failures are ignored: the run itself reports them.
func (r *runner) prewarm(ctx context.Context, base string) {
	n := min(r.cfg.Concurrency, 4096)
	if n <= 1 || r.cfg.H2C {
		return
	}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil)
			if err != nil {
				return
			}
			if r.cfg.APIKey != "" {
				req.Header.Set("Authorization", "Bearer "+r.cfg.APIKey)
			}
			if resp, err := r.c.hc.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
}

// ttftWindow bounds the TTFTs the progress median is taken over.
const ttftWindow = 4096

// ttftP50 is the median TTFT (ms) of the current phase's last (up to
// ttftWindow) succeeded streamed requests, 0 before the first.
func (r *runner) ttftP50() float64 {
	r.mu.Lock()
	v := append([]float64(nil), r.ttfts...)
	r.mu.Unlock()
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return Percentile(v, 50)
}

// newArrivals is the open loop's schedule of cfg, following its arrival
// curve when it has one.
func newArrivals(cfg Config) (*load.Arrivals, error) {
	a, err := load.NewArrivals(cfg.RequestRate, cfg.Arrival, cfg.Burstiness, cfg.Seed)
	if err != nil {
		return nil, err
	}
	if len(cfg.ArrivalCurve) > 0 {
		if err := a.Modulate(cfg.ArrivalCurve, float64(cfg.CurveStepMs)/1000); err != nil {
			return nil, err
		}
	}
	return a, nil
}
