package main

import (
	"context"
	"fmt"
	"net"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/infercrane/infercrane/executor/sim"
)

// addSimCommands registers the commands of this file (called by setupCommands).
func addSimCommands() {
	register(&command{
		Name:     "sim serve",
		Synopsis: "Serve the simulated vLLM-compatible engine over HTTP",
		Run: func(env *cliEnv, args []string) int {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return simServe(ctx, env, args)
		},
	})
}

// simServe parses the flags of `sim serve`, serves until ctx ends (a signal)
// or the engine crashes by fault injection, and returns the exit code:
// 0 after a clean shutdown, 2 for bad flags or values, 1 when serving fails
// (a port taken), 3 after an injected crash.
func simServe(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "sim serve", usageDoc{
		Usage: "infercrane sim serve [flags]",
		About: "Serves the simulated vLLM-compatible engine (OpenAI chat and completions, /tokenize, /health,\n" +
			"/metrics) until SIGINT or SIGTERM. Exit status 0 after a clean shutdown, 2 bad flags,\n" +
			"1 serving failed, 3 after an injected crash (--crash-after).",
		Examples: []string{
			"infercrane sim serve --port 8000",
			"infercrane sim serve --port 0 --timing model --model-id Qwen/Qwen3-0.6B --gpu L40S",
			"infercrane sim serve --fail-rate 0.1 --fail-status 429 --seed 3",
		},
	})
	var (
		o        sim.Options
		host     = fs.String("host", "127.0.0.1", "address to listen on")
		port     = fs.Int("port", 8000, "port to listen on; 0 picks a free one (the URL is printed)")
		failAt   = fs.String("fail-at", "", "answer given requests with a status, e.g. 3=429,7=500")
		stall    = fs.String("stall", "", "pause every stream after N tokens for a duration, e.g. 10:500ms")
		seed     = fs.Int64("seed", 0, "seed of generated text and fault draws")
		failRate = fs.Float64("fail-rate", 0, "fraction of requests answered with --fail-status")
		place    placement
	)
	place.register(fs.FlagSet, "serve on these CPUs only (taskset -c syntax, e.g. 0-1), so a load generator can have the others; GOMAXPROCS follows unless set")
	fs.StringVar(&o.Model, "model", "", "served model name (default: --model-id, else \"sim\")")
	fs.IntVar(&o.MaxModelLen, "max-model-len", 8192, "context window: prompt plus output tokens")
	fs.StringVar(&o.ContextOverflow, "context-overflow", sim.ContextClamp, "prompt + max_tokens over the window: clamp (vLLM 0.32: shorten the output) or reject (older vLLM: HTTP 400)")
	fs.StringVar(&o.Version, "vllm-version", sim.DefaultVersion, "vLLM version reported by /version and in system_fingerprint")
	fs.StringVar(&o.Timing, "timing", sim.TimingConstant, "timing mode: constant or model")
	fs.DurationVar(&o.TTFT, "ttft", 50*time.Millisecond, "constant mode: time to first token")
	fs.DurationVar(&o.ITL, "itl", 5*time.Millisecond, "constant mode: inter-token latency")
	fs.StringVar(&o.ModelID, "model-id", "", "model mode: catalog model id, e.g. Qwen/Qwen3-0.6B")
	fs.StringVar(&o.GPU, "gpu", "", "model mode: catalog GPU, e.g. L40S")
	fs.IntVar(&o.GPUCount, "gpu-count", 1, "model mode: GPUs (tensor parallel)")
	fs.IntVar(&o.MaxNumSeqs, "max-num-seqs", 256, "model mode: most sequences in a batch")
	fs.IntVar(&o.MaxBatchedTokens, "max-num-batched-tokens", 8192, "model mode: token budget of one step")
	fs.Float64Var(&o.GPUMemoryUtil, "gpu-memory-utilization", 0.9, "model mode: fraction of GPU memory for weights and KV cache")
	fs.IntVar(&o.MaxWaiting, "max-waiting", 0, "model mode: waiting-queue cap; a full queue answers 503 (0: unlimited)")
	fs.Float64Var(&o.Speedup, "speedup", 1, "model mode: run simulated time this many times faster than real time")
	fs.BoolVar(&o.PrefixCaching, "enable-prefix-caching", false, "reuse cached prompt prefixes in whole KV blocks, as vLLM does")
	fs.IntVar(&o.BlockSize, "block-size", 16, "KV-cache block size in tokens (prefix caching reuses whole blocks)")
	fs.IntVar(&o.PrefixCacheBlocks, "prefix-cache-blocks", 0, "most blocks the prefix cache keeps, least recently used evicted first (0: unbounded)")
	fs.BoolVar(&o.PromptTokensDetails, "enable-prompt-tokens-details", false, "report usage.prompt_tokens_details.cached_tokens")
	fs.IntVar(&o.Faults.FailStatus, "fail-status", 503, "status of --fail-rate failures: 429, 500 or 503")
	fs.IntVar(&o.Faults.CutAfter, "cut-after", 0, "drop every streamed response after N tokens (0: off)")
	fs.DurationVar(&o.Faults.SlowStart, "slow-start", 0, "answer /health with 503 for this long after start")
	fs.IntVar(&o.Faults.CrashAfter, "crash-after", 0, "exit with status 3 when request N+1 arrives (0: off)")
	fs.Int64Var(&o.MaxBodyBytes, "max-body", 4<<20, "largest request body in bytes; a larger one is answered 413 and never held whole")
	fs.DurationVar(&o.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "cut off a client whose request headers take longer (slow loris)")
	fs.DurationVar(&o.BodyTimeout, "body-timeout", 30*time.Second, "answer 408 to a request whose body takes longer to arrive")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q; every setting is a flag", pos[0])
	}
	o.Seed = *seed
	o.Faults.FailRate = *failRate
	var err error
	if o.Faults.FailAt, err = sim.ParseFailAt(*failAt); err == nil {
		o.Faults.StallAfter, o.Faults.StallFor, err = sim.ParseStall(*stall)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane sim serve: %v\n", hinted(err))
		return 2
	}
	if *port < 0 || *port > 65535 {
		fmt.Fprintf(env.Stderr, "infercrane sim serve: port %d is out of range; use 0..65535\n", *port)
		return 2
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(env.Stderr, "infercrane sim serve: %v\n", hinted(err))
		return 2
	}
	if code := place.apply(env, "infercrane sim serve"); code != 0 {
		return code
	}
	s, err := sim.Listen(net.JoinHostPort(*host, strconv.Itoa(*port)), o)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane sim serve: %v\n", hinted(err))
		return 1
	}
	eo := s.Engine.Options()
	if eo.Timing == sim.TimingModel {
		fmt.Fprintf(env.Stderr, "infercrane sim: model %q timing=model (%s on %dx %s, max_num_seqs=%d, max_num_batched_tokens=%d, speedup=%g), max_model_len=%d\n",
			eo.Model, eo.ModelID, eo.GPUCount, eo.GPU, eo.MaxNumSeqs, eo.MaxBatchedTokens, eo.Speedup, eo.MaxModelLen)
	} else {
		fmt.Fprintf(env.Stderr, "infercrane sim: model %q timing=constant (ttft=%v, itl=%v), max_model_len=%d\n", eo.Model, eo.TTFT, eo.ITL, eo.MaxModelLen)
	}
	fmt.Fprintf(env.Stderr, "infercrane sim: vLLM %s behaviour, context overflow=%s\n", eo.Version, eo.ContextOverflow)
	fmt.Fprintf(env.Stdout, "listening on %s\n", s.URL)
	code = 0
	select {
	case <-ctx.Done():
	case <-s.Engine.Crashed():
		fmt.Fprintf(env.Stderr, "infercrane sim: crashed by fault injection (--crash-after %d)\n", eo.Faults.CrashAfter)
		code = 3
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil && code == 0 {
		fmt.Fprintf(env.Stderr, "infercrane sim: shutdown: %v\n", err)
		return 1
	}
	if code == 0 {
		fmt.Fprintln(env.Stderr, "infercrane sim: stopped")
	}
	return code
}
