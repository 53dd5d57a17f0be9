// Package sim is InferCrane's simulated vLLM-compatible engine: the embedded
// default executor's server and the ground truth the load generator is
// tested against. It speaks vLLM's HTTP surface (/v1/chat/completions,
// /v1/completions, /v1/models, /health, /version, /tokenize, /detokenize,
// /metrics), tokenizes with its own documented tokenizer (see Tokenize), and
// times tokens either with a constant TTFT and ITL or with a
// continuous-batching scheduler driven by the planner's roofline model.
//
// The package is also the built-in "sim" executor (New, executor.go), which
// deploys such engines in this process on loopback ports.
package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infercrane/infercrane/executor/clock"
)

// DefaultVersion is what /version reports unless Options.Version says
// otherwise: the vLLM release whose HTTP behaviour the engine mirrors.
const DefaultVersion = "0.32.0"

// Version is the version an engine with default options reports; the
// executors stamp it into their run info. It equals DefaultVersion.
const Version = DefaultVersion

// Engine is a simulated engine; it is an http.Handler. Close it when done.
type Engine struct {
	opts    Options
	timing  timing
	metrics *metrics
	clock   *clock.Clock // nil where the OS has no precise timer
	mux     *http.ServeMux
	started time.Time
	created int64 // unix seconds, stamped into responses
	// fingerprint is the system_fingerprint of responses:
	// "vllm-<version>-<8 hex digits>", fixed for the engine's options.
	fingerprint string

	requests atomic.Int64  // generation requests received
	seq      atomic.Uint64 // response id counter

	stop     chan struct{} // closed by Close or a crash
	stopOnce sync.Once
	// stopCtx is cancelled with stop. A request's waits merge it into their
	// own context once (withStop), so a token's wait selects on two
	// per-request channels only: every stream selecting on the one stop
	// channel locked it for every token of every stream.
	stopCtx    context.Context
	stopCancel context.CancelFunc
	crashed    atomic.Bool
	crashMu    sync.Mutex
	onCrash    []func()
	crashedCh  chan struct{}
	// prefix is the prefix cache (nil: prefix caching off).
	prefix *prefixCache

	arrivalsMu sync.Mutex
	arrivals   []time.Time // of admitted generation requests, the first maxArrivals
}

// maxArrivals bounds the arrival times an engine keeps (Arrivals).
const maxArrivals = 1 << 16

// NewEngine builds an engine from opts, filling defaults; it fails with a message
// that names the option to fix.
func NewEngine(opts Options) (*Engine, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Engine{
		opts:      o,
		metrics:   newMetrics(),
		started:   time.Now(),
		stop:      make(chan struct{}),
		crashedCh: make(chan struct{}),
	}
	e.stopCtx, e.stopCancel = context.WithCancel(context.Background())
	e.created = e.started.Unix()
	e.fingerprint = fingerprint(o)
	switch o.Timing {
	case TimingModel:
		mt, err := newModelTiming(o, e.metrics, nil)
		if err != nil {
			return nil, err
		}
		mt.clock = clock.New()
		e.clock = mt.clock
		go mt.loop()
		e.timing = mt
	default:
		e.timing = &constantTiming{ttft: o.TTFT, itl: o.ITL}
		e.clock = clock.New()
	}
	e.prefix = prefixCacheFor(o, e.timing)
	if mt, ok := e.timing.(*modelTiming); ok && e.prefix != nil {
		mt.setPrefixCache(e.prefix)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { e.generate(w, r, true) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { e.generate(w, r, false) })
	mux.HandleFunc("GET /v1/models", e.ready(e.models))
	mux.HandleFunc("GET /health", e.health)
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]string{"version": e.opts.Version})
	})
	mux.HandleFunc("POST /tokenize", e.ready(e.tokenize))
	mux.HandleFunc("POST /detokenize", e.ready(e.detokenize))
	mux.HandleFunc("GET /metrics", e.serveMetrics)
	e.mux = mux
	return e, nil
}

// Options returns the engine's options with defaults filled in.
func (e *Engine) Options() Options { return e.opts }

// ServeHTTP serves vLLM's HTTP surface. After a crash (Faults.CrashAfter)
// every request has its connection dropped.
func (e *Engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if e.crashed.Load() {
		panic(http.ErrAbortHandler)
	}
	e.mux.ServeHTTP(w, r)
}

// withStop returns ctx, also cancelled when the engine stops; call the
// release function when done.
func (e *Engine) withStop(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	unregister := context.AfterFunc(e.stopCtx, cancel)
	return ctx, func() { unregister(); cancel() }
}

// Close stops the engine: streams in flight end and background work stops.
// It is safe to call more than once.
func (e *Engine) Close() {
	e.stopOnce.Do(func() {
		close(e.stop)
		e.stopCancel()
		e.timing.close()
		if e.clock != nil {
			e.clock.Close()
		}
	})
}

// Lateness reports how many token emissions (constant mode) or engine
// steps (model mode) the engine has timed and the fraction of them that
// ended more than late after their due time: the engine's own measure of a
// machine too busy for it to keep time (tests skip timing checks on it).
func (e *Engine) Lateness(late time.Duration) (count uint64, fraction float64) {
	return e.metrics.lateness.above(late.Seconds())
}

// Arrivals returns when the generation requests the engine admitted
// arrived (when their bytes reached the engine, see package arrival, else
// its handler's first look at them; their time and overhead count from
// it), in time order, the first 65,536: what a test replays to put
// the model's requests at the instants the engine saw them, free of the
// client's and the loopback's delays.
func (e *Engine) Arrivals() []time.Time {
	e.arrivalsMu.Lock()
	defer e.arrivalsMu.Unlock()
	out := slices.Clone(e.arrivals)
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

func (e *Engine) arrived(t time.Time) {
	e.arrivalsMu.Lock()
	if len(e.arrivals) < maxArrivals {
		e.arrivals = append(e.arrivals, t)
	}
	e.arrivalsMu.Unlock()
}

// Crashed is closed when the engine crashed by fault injection.
func (e *Engine) Crashed() <-chan struct{} { return e.crashedCh }

// OnCrash registers f to run once when the engine crashes (the in-process
// server uses it to drop every connection).
func (e *Engine) OnCrash(f func()) {
	e.crashMu.Lock()
	defer e.crashMu.Unlock()
	e.onCrash = append(e.onCrash, f)
}

func (e *Engine) crash() {
	if !e.crashed.CompareAndSwap(false, true) {
		return
	}
	close(e.crashedCh)
	e.Close()
	e.crashMu.Lock()
	hooks := append([]func(){}, e.onCrash...)
	e.crashMu.Unlock()
	for _, f := range hooks {
		go f()
	}
}

// starting reports whether the slow-start fault still holds the engine.
func (e *Engine) starting() bool {
	return e.opts.Faults.SlowStart > 0 && time.Since(e.started) < e.opts.Faults.SlowStart
}

// ready wraps h so that it answers 503 during a slow start.
func (e *Engine) ready(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if e.starting() {
			writeError(w, 503, "ServiceUnavailableError", "", "the engine is still starting; wait until /health answers 200")
			return
		}
		h(w, r)
	}
}

func (e *Engine) health(w http.ResponseWriter, r *http.Request) {
	if e.starting() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (e *Engine) models(w http.ResponseWriter, r *http.Request) {
	root := e.opts.ModelID
	if root == "" {
		root = e.opts.Model
	}
	writeJSON(w, 200, map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id": e.opts.Model, "object": "model", "created": e.created, "owned_by": "vllm",
			"root": root, "parent": nil, "max_model_len": e.opts.MaxModelLen,
			"permission": []map[string]any{{
				"id": "modelperm-sim-" + e.fingerprint[len(e.fingerprint)-8:], "object": "model_permission", "created": e.created,
				"allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true, "allow_search_indices": false,
				"allow_view": true, "allow_fine_tuning": false, "organization": "*", "group": nil, "is_blocking": false,
			}},
		}},
	})
}

type tokenizeRequest struct {
	Model               string        `json:"model"`
	Prompt              *string       `json:"prompt"`
	Messages            []chatMessage `json:"messages"`
	AddGenerationPrompt *bool         `json:"add_generation_prompt"`
	ReturnTokenStrs     bool          `json:"return_token_strs"`
}

func (e *Engine) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if !e.decode(w, r, &req) {
		return
	}
	var text string
	switch {
	case req.Prompt != nil:
		text = *req.Prompt
	case req.Messages != nil:
		msgs, err := messages(req.Messages)
		if err != nil {
			writeError(w, 400, "BadRequestError", "messages", "%v", err)
			return
		}
		text = RenderChat(msgs, req.AddGenerationPrompt == nil || *req.AddGenerationPrompt)
	default:
		writeError(w, 400, "BadRequestError", "prompt", "give either \"prompt\" or \"messages\" to tokenize")
		return
	}
	ids := Tokenize(text)
	resp := map[string]any{"count": len(ids), "max_model_len": e.opts.MaxModelLen, "tokens": ids, "token_strs": nil}
	if req.ReturnTokenStrs {
		strs := make([]string, len(ids))
		for i, id := range ids {
			strs[i] = vocab.pieces[id]
		}
		resp["token_strs"] = strs
	}
	writeJSON(w, 200, resp)
}

func (e *Engine) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Tokens []int  `json:"tokens"`
	}
	if !e.decode(w, r, &req) {
		return
	}
	text, err := Detokenize(req.Tokens)
	if err != nil {
		writeError(w, 400, "BadRequestError", "tokens", "%v", err)
		return
	}
	writeJSON(w, 200, map[string]string{"prompt": text})
}

func (e *Engine) serveMetrics(w http.ResponseWriter, r *http.Request) {
	running, waiting, kv := e.timing.gauges()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	e.metrics.write(w, e.opts.Model, running, waiting, kv)
}

// decode reads a JSON body into v, answering the error itself on failure:
// 413 for a body over MaxBodyBytes (no more than that is ever read or
// held), 408 for one that does not arrive within BodyTimeout, 400 for one
// that is not JSON.
func (e *Engine) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(e.opts.BodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, e.opts.MaxBodyBytes))
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	} else {
		// The rest of the body is not waited for: the deadline stays, and
		// the connection closes after the answer.
		w.Header().Set("Connection", "close")
	}
	var tooBig *http.MaxBytesError
	var nerr net.Error
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "BadRequestError", "", "the request body is over %d bytes; send a shorter prompt", e.opts.MaxBodyBytes)
		return false
	case errors.As(err, &nerr) && nerr.Timeout():
		writeError(w, http.StatusRequestTimeout, "BadRequestError", "", "the request body did not arrive within %s", e.opts.BodyTimeout)
		return false
	case err != nil:
		writeError(w, 400, "BadRequestError", "", "reading the request body: %v", err)
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, 400, "BadRequestError", "", "the request body is not valid JSON for this endpoint: %v", err)
		return false
	}
	return true
}

// fingerprint derives the engine's system_fingerprint from its version,
// model and seed, so equal options give equal fingerprints.
func fingerprint(o Options) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", o.Version, o.Model, o.Seed)
	return fmt.Sprintf("vllm-%s-%08x", o.Version, h.Sum32())
}
