package sim

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/infercrane/infercrane/executor/clock"
	"github.com/infercrane/infercrane/executor/sim/internal/arrival"
	"github.com/infercrane/infercrane/planner/load"
)

// errQueueFull is returned by timing.admit when the waiting queue is full.
var errQueueFull = errors.New("the waiting queue is full")

// genPlan is a validated generation request.
type genPlan struct {
	chat         bool
	stream       bool
	includeUsage bool
	continuous   bool
	prompt       int
	output       int
	finish       string // "length" or "stop"
	rng          uint64
	// ids are the prompt's token ids (prefix caching on only).
	ids []int
}

// generate serves /v1/chat/completions (chat) and /v1/completions.
func (e *Engine) generate(w http.ResponseWriter, r *http.Request, chat bool) {
	// A request's time counts from when its bytes reached the engine's
	// socket where that is known (package arrival): a wave of requests is
	// read and dispatched one after another, and the last handler of a
	// wave of 256 on two cores starts milliseconds after its bytes came in.
	at, ok := arrival.Of(r)
	if !ok {
		at = time.Now()
	}
	if e.starting() {
		writeError(w, 503, "ServiceUnavailableError", "", "the engine is still starting; wait until /health answers 200")
		return
	}
	var req genRequest
	if !e.decode(w, r, &req) {
		return
	}
	n := e.requests.Add(1)
	if c := e.opts.Faults.CrashAfter; c > 0 && n > int64(c) {
		e.crash()
		panic(http.ErrAbortHandler)
	}
	if st := e.injectedFailure(n); st != 0 {
		writeError(w, st, errorTypeFor(st), "", "injected failure %d for request %d (simulated engine fault injection)", st, n)
		return
	}
	p, ok := e.plan(w, &req, chat, n)
	if !ok {
		return
	}
	g := &genState{id: e.seq.Add(1), arrival: at, prompt: p.prompt, output: p.output, stallAt: -1, wake: make(chan struct{}, 1)}
	g.index = requestIndex(r, g.id)
	if e.prefix != nil {
		g.blocks = e.prefix.blockHashes(p.tokens())
		if _, steps := e.timing.(*modelTiming); !steps {
			e.prefixLooked(g, e.prefix.hit(g.blocks, p.prompt))
		}
	}
	if f := e.opts.Faults; f.StallFor > 0 {
		g.stallAt, g.stallFor = f.StallAfter, f.StallFor
	}
	if err := e.timing.admit(g); err != nil {
		writeError(w, 503, "ServiceUnavailableError", "", "%v; retry later or lower the load", err)
		return
	}
	e.arrived(at)
	defer e.timing.release(g)
	e.metrics.promptTokens.Add(int64(p.prompt))
	if p.stream {
		e.stream(w, r, g, &p)
	} else {
		e.whole(w, r, g, &p)
	}
}

// plan validates a request the way vLLM does and decides its output length.
func (e *Engine) plan(w http.ResponseWriter, req *genRequest, chat bool, n int64) (genPlan, bool) {
	p := genPlan{chat: chat, stream: req.Stream}
	if req.Model != "" && req.Model != e.opts.Model {
		writeError(w, 404, "NotFoundError", "model", "The model `%s` does not exist.", req.Model)
		return p, false
	}
	if req.N != nil && *req.N != 1 {
		writeError(w, 400, "BadRequestError", "n", "the simulated engine serves n=1 only, got n=%d", *req.N)
		return p, false
	}
	if chat {
		msgs, err := messages(req.Messages)
		if err != nil || len(msgs) == 0 {
			if err == nil {
				writeError(w, 400, "BadRequestError", "messages", "messages must not be empty")
			} else {
				writeError(w, 400, "BadRequestError", "messages", "%v", err)
			}
			return p, false
		}
		text := RenderChat(msgs, req.AddGenerationPrompt == nil || *req.AddGenerationPrompt)
		if e.prefix != nil {
			p.ids = Tokenize(text)
			p.prompt = len(p.ids)
		} else {
			p.prompt = CountTokens(text)
		}
	} else {
		var err error
		if e.prefix != nil {
			p.ids, err = promptIDs(req.Prompt)
			p.prompt = len(p.ids)
		} else {
			p.prompt, err = promptTokens(req.Prompt)
		}
		if err != nil {
			writeError(w, 400, "BadRequestError", "prompt", "%v", err)
			return p, false
		}
	}
	maxTokens, ok := e.outputBudget(w, req, chat, p.prompt)
	if !ok {
		return p, false
	}
	if req.MinTokens < 0 || req.MinTokens > maxTokens {
		writeError(w, 400, "BadRequestError", "min_tokens", "min_tokens must be in [0, max_tokens], got %d.", req.MinTokens)
		return p, false
	}
	seed := uint64(e.opts.Seed) ^ uint64(n)*0x9e3779b97f4a7c15
	if req.Seed != nil {
		seed = uint64(*req.Seed)
	}
	p.rng = splitmix(&seed)
	p.output, p.finish = maxTokens, "length"
	if !req.IgnoreEOS {
		// Without ignore_eos the simulated model "chooses" to stop after a
		// deterministic natural length of 16..271 tokens.
		natural := 16 + int(p.rng%256)
		if natural < maxTokens {
			p.output, p.finish = max(natural, req.MinTokens), "stop"
		}
	}
	if req.StreamOptions != nil && !req.Stream {
		writeError(w, 400, "BadRequestError", "stream_options", "Stream options can only be defined when `stream=True`.")
		return p, false
	}
	if so := req.StreamOptions; so != nil {
		p.includeUsage = so.IncludeUsage
		// vLLM honours continuous_usage_stats only together with include_usage.
		p.continuous = so.IncludeUsage && so.ContinuousUsageStats
	}
	return p, true
}

// injectedFailure returns the status request n must fail with, or 0.
func (e *Engine) injectedFailure(n int64) int {
	f := e.opts.Faults
	if st, ok := f.FailAt[int(n)]; ok {
		return st
	}
	if f.FailRate > 0 {
		s := uint64(e.opts.Seed) ^ uint64(n)*0xd1b54a32d192ed03
		if float64(splitmix(&s)>>11)/(1<<53) < f.FailRate {
			return f.FailStatus
		}
	}
	return 0
}

// splitmix advances a SplitMix64 state and returns the next value.
func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// outputToken is the k-th generated token: a " word" vocabulary token.
// It is computed for every streamed token, so it indexes spacedWordID
// instead of building the " word" string and looking it up in vocab.wordIDs.
func outputToken(rng uint64, k int) int {
	s := rng + uint64(k)*0x9e3779b97f4a7c15
	return spacedWordID(int(splitmix(&s) % uint64(len(vocabWords))))
}

func (e *Engine) responseID(chat bool, id uint64) string {
	if chat {
		return "chatcmpl-sim-" + strconv.FormatUint(id, 10)
	}
	return "cmpl-sim-" + strconv.FormatUint(id, 10)
}

// stream writes an SSE response, one chunk per token at the times the
// timing mode decides. Tokens already due when the stream wakes (it woke
// late: a busy machine, a write that blocked) go out in one write: the
// client gets them at once either way, and a write(2) per token per
// stream is most of what the engine costs at hundreds of streams, so a
// late engine catches up instead of falling further behind. A token is
// never written before it is due.
func (e *Engine) stream(w http.ResponseWriter, r *http.Request, g *genState, p *genPlan) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	ch := newChunker(p.chat, e.responseID(p.chat, g.id), e.created, e.opts.Model, p.prompt, p.continuous, e.fingerprint)
	ch.cached = e.promptDetails(g)
	sl := clock.NewSleeper(e.clock)
	ctx, release := e.withStop(r.Context())
	defer release()
	cut := e.opts.Faults.CutAfter
	ct, _ := e.timing.(*constantTiming)
	var tc tokenClock
	var end time.Time // when the last token was generated
	for k := 0; k < p.output; {
		if !e.timing.wait(ctx, g, k, sl) {
			e.abortIfCrashed()
			return
		}
		now := time.Now()
		end = now
		ch.reset()
		first := k
		for {
			tc.tick(e.metrics.decode, now)
			if k == 0 {
				e.metrics.ttft.observe(now.Sub(g.arrival).Seconds())
				ch.cached = e.promptDetails(g) // known once the request was scheduled
				if p.chat {
					ch.role()
				}
			}
			finish := ""
			if k == p.output-1 {
				finish = p.finish
			}
			ch.token(outputToken(p.rng, k), finish, k+1)
			k++
			if k == p.output || k == cut || !e.timing.ready(g, k, now) {
				break
			}
		}
		e.metrics.generationTokens.Add(int64(k - first))
		if _, err := w.Write(ch.buf); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if ct != nil {
			flushed := time.Now()
			for j := first; j < k; j++ {
				e.metrics.lateness.observe(flushed.Sub(ct.due(g, j)).Seconds())
			}
		}
		if cut > 0 && k == cut {
			panic(http.ErrAbortHandler)
		}
	}
	ch.reset()
	if p.includeUsage {
		ch.usage(p.output)
	}
	ch.done()
	_, _ = w.Write(ch.buf)
	_ = rc.Flush()
	tc.done(e.metrics.decode)
	e.finished(g, p, end)
}

// whole waits for every token, then writes one JSON body.
func (e *Engine) whole(w http.ResponseWriter, r *http.Request, g *genState, p *genPlan) {
	sl := clock.NewSleeper(e.clock)
	ctx, release := e.withStop(r.Context())
	defer release()
	// Wait for the first token (for the TTFT histogram), then the last.
	var at [2]time.Time
	for i, k := range [2]int{0, p.output - 1} {
		if !e.timing.wait(ctx, g, k, sl) {
			e.abortIfCrashed()
			return
		}
		at[i] = time.Now()
		if k == 0 {
			e.metrics.ttft.observe(at[0].Sub(g.arrival).Seconds())
		}
	}
	var tc tokenClock
	tc.ticks(e.metrics.decode, at[0], at[1], p.output)
	tc.done(e.metrics.decode)
	e.metrics.generationTokens.Add(int64(p.output))
	var text strings.Builder
	for k := 0; k < p.output; k++ {
		text.WriteString(vocab.pieces[outputToken(p.rng, k)])
	}
	u := usage{PromptTokens: p.prompt, CompletionTokens: p.output, TotalTokens: p.prompt + p.output}
	if c := e.promptDetails(g); c >= 0 {
		u.PromptTokensDetails = map[string]int{"cached_tokens": c}
	}
	// The null members of vLLM 0.32's bodies.
	var null any
	id := e.responseID(p.chat, g.id)
	var body map[string]any
	if p.chat {
		body = map[string]any{
			"id": id, "object": "chat.completion", "created": e.created, "model": e.opts.Model,
			"choices": []map[string]any{{
				"index": 0,
				"message": map[string]any{"role": "assistant", "content": text.String(), "refusal": null, "annotations": null,
					"audio": null, "function_call": null, "tool_calls": []any{}, "reasoning": null},
				"logprobs":      null,
				"finish_reason": p.finish,
				"stop_reason":   null,
				"token_ids":     null,
			}},
			"service_tier": null, "system_fingerprint": e.fingerprint,
			"usage": u, "prompt_logprobs": null, "prompt_token_ids": null,
		}
	} else {
		body = map[string]any{
			"id": id, "object": "text_completion", "created": e.created, "model": e.opts.Model,
			"choices": []map[string]any{{
				"index": 0, "text": text.String(), "logprobs": null, "finish_reason": p.finish, "stop_reason": null, "prompt_logprobs": null,
			}},
			"service_tier": null, "system_fingerprint": e.fingerprint,
			"usage": u,
		}
	}
	writeJSON(w, 200, body)
	e.finished(g, p, at[1])
}

// finished counts a request the engine completed. Its end-to-end latency
// ends when its last token was generated, as vLLM's does (the engine
// finishing the request), not after the answer was written: the client then
// always reads at least the engine's latency. Observed after the writes, a
// loaded machine's delay between them made the engine's mean exceed the
// client's (TestDeployRunTeardown in plugins/modal failed 1 run in 20 at load
// average 10: 12.44 ms against 12.43).
func (e *Engine) finished(g *genState, p *genPlan, end time.Time) {
	e.metrics.e2e.observe(end.Sub(g.arrival).Seconds())
	if _, steps := e.timing.(*modelTiming); e.prefix != nil && !steps {
		e.prefix.insert(g.blocks)
	}
	if p.finish == "stop" {
		e.metrics.successStop.Add(1)
	} else {
		e.metrics.successLength.Add(1)
	}
}

// tokens returns the prompt's token ids followed by the output's.
func (p *genPlan) tokens() []int {
	ids := append(p.ids[:len(p.ids):len(p.ids)], make([]int, p.output)...)
	for k := range p.output {
		ids[len(p.ids)+k] = outputToken(p.rng, k)
	}
	return ids
}

// prefixLooked records the prefix cache's answer for g: usage's
// cached_tokens and vLLM's prefix-cache counters.
func (e *Engine) prefixLooked(g *genState, hit int) { e.metrics.prefixLooked(g, hit) }

func (m *metrics) prefixLooked(g *genState, hit int) {
	g.cached.Store(int64(hit))
	m.prefixQueries.Add(int64(g.prompt))
	m.prefixHits.Add(int64(hit))
}

// abortIfCrashed drops the connection when the engine crashed mid-stream.
func (e *Engine) abortIfCrashed() {
	if e.crashed.Load() {
		panic(http.ErrAbortHandler)
	}
}

// promptDetails is the cached_tokens of usage.prompt_tokens_details, or -1
// when the engine leaves the details null (as vLLM does without
// --enable-prompt-tokens-details).
func (e *Engine) promptDetails(g *genState) int {
	if !e.opts.PromptTokensDetails {
		return -1
	}
	return int(g.cached.Load())
}

// requestIndex is the request's number in its run, which draws its delay
// on the way to the engine as the planner draws it (planner.Seq.Index):
// from the load generator's X-Request-Id header, or, from other clients,
// the engine's count of the requests it served (id, from 1).
func requestIndex(r *http.Request, id uint64) int {
	if v, ok := strings.CutPrefix(r.Header.Get("X-Request-Id"), load.RequestIDPrefix); ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return n
		}
	}
	return int(id - 1)
}
