package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
)

// addBenchCommands registers the commands of this file (called by setupCommands).
func addBenchCommands() {
	register(&command{
		Name:     "bench",
		Synopsis: "Benchmark one OpenAI-compatible server with the built-in load generator",
		Run: func(env *cliEnv, args []string) int {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return benchCmd(ctx, env, args)
		},
	})
}

// benchFlags holds the flags of bench that are not loadgen.Config fields.
type benchFlags struct {
	records   string
	result    string
	asJSON    bool
	noStream  bool
	apiKeyEnv string
	wait      time.Duration
	duration  time.Duration
	grace     time.Duration
	timeout   time.Duration
	rampUp    time.Duration
	place     placement
	warmupFor time.Duration
	gauges    time.Duration
	config    string
	// seedDrawn: no --seed was given, and the run draws its own.
	seedDrawn bool
}

// benchOutputFlags are the bench flags that may go with --config: they say
// where the load goes and where results go, not what load to generate (the
// server is not part of the load).
var benchOutputFlags = map[string]bool{"config": true, "url": true, "records": true, "result": true, "json": true,
	"api-key-env": true, "wait": true, "cpus": true, "sched-slice": true, "nice": true, "server-gauges": true}

func benchCmd(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "bench", usageDoc{
		Usage: "infercrane bench --url URL --model M --input-tokens N --output-tokens N\n" +
			"       (--concurrency C | --request-rate R [--arrival poisson|gamma|constant]) --requests N [flags]",
		About: "Runs one benchmark against an OpenAI-compatible server and prints its metrics.",
		Examples: []string{
			"infercrane bench --url http://127.0.0.1:8000 --model sim --input-tokens 256 --output-tokens 64 --concurrency 4 --requests 32",
			"infercrane bench --url $URL --model Qwen/Qwen3-0.6B --input-tokens 1024 --output-tokens 128 --request-rate 4 --requests 64 --json",
			"infercrane bench --url $URL --model m --input-tokens 128 --output-tokens 32 --concurrency 2 --requests 8 --records run.jsonl --wait 2m",
		},
	})
	var cfg loadgen.Config
	var bf benchFlags
	fs.StringVar(&cfg.BaseURL, "url", "", "server base URL, e.g. http://127.0.0.1:8000 (required)")
	fs.StringVar(&cfg.Model, "model", "", "served model name (required)")
	fs.StringVar(&cfg.API, "api", "chat", "API: chat (/v1/chat/completions) or completions (/v1/completions)")
	fs.IntVar(&cfg.InputTokens, "input-tokens", 0, "prompt length in tokens, chat template included (calibrated with /tokenize)")
	fs.IntVar(&cfg.OutputTokens, "output-tokens", 0, "output length in tokens (max_tokens with ignore_eos)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 0, "closed loop: requests in flight; with --request-rate: a cap on them")
	fs.Float64Var(&cfg.RequestRate, "request-rate", 0, "open loop: requests per second")
	fs.StringVar(&cfg.Arrival, "arrival", "poisson", "open-loop arrivals: constant, poisson or gamma")
	fs.Float64Var(&cfg.Burstiness, "burstiness", 1, "gamma arrivals: shape (1 is Poisson, below 1 burstier)")
	fs.IntVar(&cfg.Requests, "requests", 0, "measured requests (with --duration: an upper bound)")
	fs.IntVar(&cfg.Warmup, "warmup", 1, "warmup requests, run first and excluded from statistics (vllm bench also sends one)")
	fs.DurationVar(&bf.warmupFor, "warmup-duration", 0, "warm up for this long instead (with --warmup: whichever ends first)")
	fs.Int64Var(&cfg.Seed, "seed", 0, "seed of prompts and arrival schedules (default: drawn for the run, so that no two runs send the same prompts, which a server's prefix cache would serve; the result records it)")
	fs.StringVar(&cfg.TraceFile, "trace", "", "replay a JSONL trace of {timestamp_ms,input_tokens,output_tokens}")
	fs.Float64Var(&cfg.TimeScale, "time-scale", 1, "trace replay: multiply gaps by this (0.5 replays twice as fast)")
	fs.BoolVar(&cfg.H2C, "h2c", false, "speak HTTP/2 over cleartext (prior knowledge) instead of HTTP/1.1")
	fs.DurationVar(&bf.duration, "duration", 0, "stop sending after this long instead of after --requests")
	fs.DurationVar(&bf.grace, "grace", 30*time.Second, "with --duration: how long to wait for requests in flight")
	fs.DurationVar(&bf.timeout, "timeout", 10*time.Minute, "per-request timeout")
	fs.DurationVar(&bf.rampUp, "ramp-up", 0, "closed loop: start the workers evenly over this time")
	fs.outFileVar(&bf.records, "records", "", "write per-request records (JSONL) to this file")
	fs.outFileVar(&bf.result, "result", "", "write the whole result (summary, server view, calibrations, and the records unless --records takes them) as one JSON document to this file (- for stdout, instead of the table)")
	fs.BoolVar(&bf.asJSON, "json", false, "print the summary as JSON (the same document metrics --json prints)")
	fs.BoolVar(&bf.noStream, "no-stream", false, "ask for whole answers instead of streams (no ttft, tpot or itl)")
	fs.StringVar(&bf.apiKeyEnv, "api-key-env", "", "name of an environment variable holding a bearer token to send")
	fs.DurationVar(&bf.wait, "wait", 0, "first wait up to this long for GET /health to answer 200 (GET /v1/models on servers without /health)")
	bf.place.register(fs.FlagSet, "run the load generator on these CPUs only (taskset -c syntax, e.g. 2-3); GOMAXPROCS follows unless set")
	fs.DurationVar(&bf.gauges, "server-gauges", 0, "sample the server's gauges (running and waiting requests, KV-cache usage) from /metrics every D over the run, for --result's server_series and server_metrics (0: off)")
	fs.StringVar(&bf.config, "config", "", "read every load setting from this JSON file (a loadgen config, the typed message the modal executor sends; - for stdin); only --url and the output and placement flags may go with it")
	sloFlags(fs.FlagSet, &cfg.SLO)
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q; every setting is a flag", pos[0])
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if bf.config != "" {
		for name := range set {
			if !benchOutputFlags[name] {
				return fs.usageError("--%s cannot be combined with --config: the config file holds every load setting", name)
			}
		}
		c, err := loadgen.ReadConfigFile(bf.config, env.Stdin)
		if err != nil {
			return fs.usageError("--config %s: %v", bf.config, err)
		}
		if set["url"] {
			c.BaseURL = cfg.BaseURL
		}
		return runBench(ctx, env, c, bf)
	}
	if !set["seed"] {
		// Two runs with one seed send the same prompts, and vLLM's prefix
		// cache (on by default) then serves the second run's: a fixed
		// default would measure the cache from the second run on.
		cfg.Seed, bf.seedDrawn = rand.Int64N(1<<31), true
	}
	cfg.Streaming = !bf.noStream
	cfg.WarmupDurationMs = bf.warmupFor.Milliseconds()
	if bf.warmupFor > 0 && !set["warmup"] {
		cfg.Warmup = 0 // bounded by time only
	}
	cfg.DurationMs, cfg.GraceMs = bf.duration.Milliseconds(), bf.grace.Milliseconds()
	cfg.TimeoutMs, cfg.RampUpMs = bf.timeout.Milliseconds(), bf.rampUp.Milliseconds()
	if bf.grace == 0 {
		cfg.GraceMs = 1 // zero means the default in loadgen; the user asked for none
	}
	if (set["arrival"] || set["burstiness"]) && cfg.RequestRate == 0 {
		name := "--arrival"
		if !set["arrival"] {
			name = "--burstiness"
		}
		return fs.usageError("%s needs --request-rate (it shapes an open-loop schedule)", name)
	}
	return runBench(ctx, env, cfg, bf)
}

// runBench runs the load cfg describes and writes its results as bf says.
func runBench(ctx context.Context, env *cliEnv, cfg loadgen.Config, bf benchFlags) int {
	if bf.apiKeyEnv != "" {
		if cfg.APIKey = env.Getenv(bf.apiKeyEnv); cfg.APIKey == "" {
			fmt.Fprintf(env.Stderr, "infercrane bench: environment variable %s is empty; export the token there or drop --api-key-env\n", bf.apiKeyEnv)
			return 2
		}
	}
	if code := bf.place.apply(env, "infercrane bench"); code != 0 {
		return code
	}
	if bf.wait > 0 {
		if err := waitReady(ctx, cfg.BaseURL, cfg.APIKey, bf.wait); err != nil {
			fmt.Fprintf(env.Stderr, "infercrane bench: %v\n", hinted(err))
			return 1
		}
	}
	prog := newProgressLine(env.Stderr)
	// Records are kept in memory only when --result must carry them (no
	// --records file to take them): otherwise they are streamed to
	// --records (or dropped) as they finish, so memory stays flat however
	// many requests the run makes.
	keep := bf.result != "" && bf.records == ""
	opts := []loadgen.Option{loadgen.WithProgress(prog.update, prog.every)}
	if bf.gauges > 0 {
		opts = append(opts, loadgen.WithServerGauges(bf.gauges))
	}
	res, err, werr := loadgen.RunRecorded(ctx, cfg, bf.records, keep, opts...)
	prog.finish()
	if res == nil {
		fmt.Fprintf(env.Stderr, "infercrane bench: %v\n", hinted(err))
		return 1
	}
	res.Prompts.Drawn = bf.seedDrawn
	code := 0
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane bench: interrupted (%v); the summary covers the requests that finished\n", err)
		code = 1
	}
	if werr != nil {
		fmt.Fprintf(env.Stderr, "infercrane bench: %v\n", werr)
		code = 1
	}
	if bf.result != "" {
		if werr := loadgen.WriteResultFile(bf.result, env.Stdout, res); werr != nil {
			fmt.Fprintf(env.Stderr, "infercrane bench: %v\n", werr)
			code = 1
		}
		if bf.result == "-" {
			return code
		}
	}
	if bf.asJSON {
		if c := writeSummaryJSON(env, res.Summary); c != 0 {
			return c
		}
		return code
	}
	for _, c := range res.Calibrations {
		if c.Method == loadgen.CalibrateTokenize {
			fmt.Fprintf(env.Stdout, "Prompts:                 %d tokens = %d words (calibrated with /tokenize, %d calls)\n", c.TargetTokens, c.Words, c.Calls)
		} else {
			fmt.Fprintf(env.Stdout, "Prompts:                 %d tokens ~ %d words (approximate: the server has no /tokenize)\n", c.TargetTokens, c.Words)
		}
		if len(res.Calibrations) > 3 {
			fmt.Fprintf(env.Stdout, "                         (and %d more prompt lengths)\n", len(res.Calibrations)-1)
			break
		}
	}
	fmt.Fprintf(env.Stdout, "Prompt seed:             %d (%s)\n", res.Prompts.Seed, res.Prompts.Repeats())
	writeSummaryTable(env.Stdout, res.Summary)
	writeServerView(env.Stdout, &res.Summary, res.ServerView)
	return code
}

// waitReady polls GET /health until it answers 200 (vLLM answers 503 or
// nothing while loading), or GET /v1/models for servers without /health,
// until limit passes.
func waitReady(ctx context.Context, base, apiKey string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	base = strings.TrimRight(base, "/")
	path, last := "/health", ""
	for {
		status, err := getStatus(ctx, base+path, apiKey)
		switch {
		case err != nil:
			last = err.Error()
		case status == http.StatusOK:
			return nil
		case status == http.StatusNotFound && path == "/health":
			path = "/v1/models"
			continue
		default:
			last = fmt.Sprintf("GET %s: HTTP %d", path, status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the server at %s was not ready after %v (last: %s); start it or raise --wait", base, limit, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// getStatus returns the status of GET url.
func getStatus(ctx context.Context, url, apiKey string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// progressLine renders loadgen progress on stderr: one line rewritten in
// place on a terminal, a plain line every few seconds otherwise.
type progressLine struct {
	w     io.Writer
	tty   bool
	every time.Duration
	wrote bool
}

func newProgressLine(w io.Writer) *progressLine {
	p := &progressLine{w: w, every: 5 * time.Second}
	if _, ok := terminalOf(w); ok {
		p.tty, p.every = true, 250*time.Millisecond
	}
	return p
}

func (p *progressLine) update(pr loadgen.Progress) {
	line := pr.String()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.wrote = true
		return
	}
	fmt.Fprintln(p.w, line)
}

func (p *progressLine) finish() {
	if p.tty && p.wrote {
		fmt.Fprintln(p.w)
	}
}
