// Package loadgen is InferCrane's load generator: an OpenAI-compatible
// streaming client that drives one benchmark run and computes its metrics
// exactly as the design defines them.
package loadgen

import (
	"github.com/infercrane/infercrane/lang/shape"
	"github.com/infercrane/infercrane/planner/load"
)

// Config describes one benchmark run against one server.
type Config struct {
	// BaseURL is the server's root, e.g. http://127.0.0.1:8000 (no /v1).
	BaseURL string `json:"base_url"`
	// Model is the served model name sent with every request.
	Model string `json:"model"`
	// APIKey is sent as a bearer token; it is never serialised, and it is
	// removed from every text the run records (a server may echo it).
	APIKey string `json:"-"`
	// Redact are further secrets to remove from every text the run records
	// (error bodies); never serialised.
	Redact []string `json:"-"`
	// API is "chat" (/v1/chat/completions, the default) or "completions".
	API string `json:"api"`
	// Streaming asks for SSE streams; false asks for whole answers, for
	// which ttft, tpot and itl are not observable.
	Streaming bool `json:"streaming"`
	// InputTokens is the prompt length the server should count (chat
	// template included); OutputTokens the forced output length.
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// Concurrency is the closed loop's requests in flight, or with
	// RequestRate or TraceFile a cap on them (0: no cap).
	Concurrency int `json:"concurrency"`
	// RequestRate (requests/s) makes the run open loop when > 0, with
	// Arrival constant, poisson (default) or gamma of shape Burstiness
	// (1 is Poisson, below 1 burstier).
	RequestRate float64 `json:"request_rate,omitempty"`
	Arrival     string  `json:"arrival,omitempty"`
	Burstiness  float64 `json:"burstiness,omitempty"`
	// ArrivalCurve modulates an open loop's rate over time: RequestRate
	// times ArrivalCurve[k] / mean(ArrivalCurve) during step k of
	// CurveStepMs, cycling (see load.Arrivals.Modulate).
	ArrivalCurve []float64 `json:"arrival_curve,omitempty"`
	CurveStepMs  int64     `json:"curve_step_ms,omitempty"`
	// Requests is the number of measured requests; Warmup requests run
	// first and are excluded from the statistics. WarmupDurationMs bounds
	// the warmup by time instead (or as well: whichever ends first, as
	// AIPerf does); warmup requests still in flight when it ends finish
	// before the measured requests start.
	Requests         int   `json:"requests"`
	Warmup           int   `json:"warmup,omitempty"`
	WarmupDurationMs int64 `json:"warmup_duration_ms,omitempty"`
	// DurationMs stops the run by time instead of count (0: by count).
	DurationMs int64 `json:"duration_ms,omitempty"`
	// TraceFile replays a JSONL trace of {timestamp_ms,input_tokens,output_tokens};
	// TimeScale multiplies its gaps (0: 1; 0.5 replays twice as fast).
	TraceFile string  `json:"trace_file,omitempty"`
	TimeScale float64 `json:"time_scale,omitempty"`
	// Seed fixes prompts and arrival schedules.
	Seed int64 `json:"seed"`
	// PromptSalt, when set, is mixed into the prompts' seed (not the
	// arrivals'): runs of different lanes under one seed (a screen's lanes
	// on one shared server) then send different prompts from the first
	// word on, so none finds another lane's prompts in the server's prefix
	// cache and prefills less than its shape says. The executors set it to
	// the lane's id.
	PromptSalt string `json:"prompt_salt,omitempty"`
	// SLO holds the goodput objectives.
	SLO SLO `json:"slo"`
	// TimeoutMs bounds one request (0: 10 minutes).
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
	// GraceMs is how long a duration-bounded run waits for requests still in
	// flight when the duration ends (0: 30 s); those still running after it
	// are cancelled and counted as cancelled, not as failures.
	GraceMs int64 `json:"grace_ms,omitempty"`
	// RampUpMs starts closed-loop workers evenly over this time instead of
	// all at once, so streams do not deliver their tokens in lockstep.
	RampUpMs int64 `json:"ramp_up_ms,omitempty"`
	// H2C speaks HTTP/2 without TLS (prior knowledge) instead of HTTP/1.1.
	H2C bool `json:"h2c,omitempty"`
	// Workload draws per-request lengths, shares prompt prefixes within
	// groups or sends multi-turn sessions (nil: fixed InputTokens and
	// OutputTokens, prompts that share nothing). InputTokens and
	// OutputTokens then stand for the lengths it does not draw.
	Workload *load.Spec `json:"workload,omitempty"`
	// Options are the lane's shape options (lang/shape), each sent with
	// every request as its field says.
	shape.Options
}

// WithShape returns c with the load of a lane's shape settings s: the one
// place that maps them onto this format, which counts milliseconds where
// the settings count seconds (CurveStepMs, WarmupDurationMs).
func (c Config) WithShape(s shape.Settings) Config {
	c.API, c.Streaming = s.API, s.Streaming
	c.InputTokens, c.OutputTokens, c.Concurrency = s.InputTokens, s.OutputTokens, s.Concurrency
	c.RequestRate, c.Arrival, c.Burstiness = s.RequestRate, s.Arrival, s.Burstiness
	c.ArrivalCurve, c.CurveStepMs = s.ArrivalCurve, int64(s.ArrivalCurveStepSeconds*1000)
	c.Requests, c.Warmup, c.WarmupDurationMs = s.Requests, s.Warmup, int64(s.WarmupSeconds*1000)
	c.Options = s.Options
	return c
}

// SLO holds per-request objectives for goodput; zero fields are unset.
type SLO struct {
	TTFTMs    float64 `json:"ttft_ms,omitempty"`
	TPOTMs    float64 `json:"tpot_ms,omitempty"`
	LatencyMs float64 `json:"latency_ms,omitempty"`
}

// Failure classes of requests that did not succeed.
const (
	FailContextOverflow = "context_overflow"
	FailRateLimited     = "rate_limited"
	FailServerError     = "server_error"
	FailTimeout         = "timeout"
	FailStreamBroken    = "stream_broken"
	FailNoTokens        = "no_tokens"
	FailConnection      = "connection"
	FailBadRequest      = "bad_request"
	// FailTruncated marks an answer that otherwise succeeded but carried
	// fewer output tokens than the max_tokens asked for with ignore_eos:
	// vLLM 0.32 clamps max_tokens to the room the prompt leaves in the
	// context window instead of rejecting the request.
	FailTruncated = "truncated"
	// FailCancelled marks a request cut off when a duration-bounded run's
	// grace period ended; such records count in Summary.Cancelled only.
	FailCancelled = "cancelled"
)

// FailureClasses lists every class a failed request can have (cancelled
// requests are not failures), in the order reports show them.
var FailureClasses = []string{
	FailContextOverflow, FailTruncated, FailRateLimited, FailServerError, FailTimeout,
	FailStreamBroken, FailNoTokens, FailConnection, FailBadRequest,
}

// Record is what the client saw of one request. Times are nanoseconds since
// the run's start on the monotonic clock. Every statistic of a run can be
// recomputed from its records.
type Record struct {
	Index        int     `json:"index"`
	Warmup       bool    `json:"warmup,omitempty"`
	ScheduledNs  int64   `json:"scheduled_ns"`
	SentNs       int64   `json:"sent_ns"`
	FirstTokenNs int64   `json:"first_token_ns,omitempty"`
	LastTokenNs  int64   `json:"last_token_ns,omitempty"`
	DoneNs       int64   `json:"done_ns"`
	ChunkNs      []int64 `json:"chunk_ns,omitempty"` // arrival of every token-carrying chunk
	// InputTokens is the requested prompt length; PromptTokens what the
	// server reported in usage.
	InputTokens  int `json:"input_tokens"`
	PromptTokens int `json:"prompt_tokens"`
	MaxTokens    int `json:"max_tokens"`
	// OutputTokens is usage.completion_tokens, or the client's count when the
	// server sent no usage (UsageMissing).
	OutputTokens int    `json:"output_tokens"`
	ClientTokens int    `json:"client_tokens"`
	UsageMissing bool   `json:"usage_missing,omitempty"`
	Status       int    `json:"status"`
	ErrorClass   string `json:"error_class,omitempty"`
	Error        string `json:"error,omitempty"`
	// OpenLoop marks requests sent on an arrival schedule (request rate or
	// trace replay); ScheduledNs is then meaningful.
	OpenLoop bool `json:"open_loop,omitempty"`
	// NonStreaming marks requests made without streaming: the whole answer
	// arrives at once, so ttft, tpot and itl are not observable for them.
	NonStreaming bool `json:"non_streaming,omitempty"`
	// SharedTokens is how many leading prompt tokens the request was built
	// to share with an earlier one (its prefix group's, or its session's
	// history); CachedTokens what the server reported as served from its
	// prefix cache (usage.prompt_tokens_details.cached_tokens), -1 when it
	// did not say.
	SharedTokens int  `json:"shared_tokens,omitempty"`
	CachedTokens *int `json:"cached_tokens,omitempty"`
	// Session and Turn place a multi-turn request (Turn 0 is the first).
	Session int `json:"session,omitempty"`
	Turn    int `json:"turn,omitempty"`
}

// OK reports whether the request succeeded.
func (r *Record) OK() bool { return r.ErrorClass == "" }

// Dist summarises one metric in milliseconds (or the metric's own unit).
type Dist struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	Std   float64 `json:"std"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
}

// Summary is the metrics document of one run, computed from its records.
type Summary struct {
	Requests              int            `json:"requests"`
	Succeeded             int            `json:"succeeded"`
	Failed                int            `json:"failed"`
	Failures              map[string]int `json:"failures"`
	WindowSeconds         float64        `json:"window_seconds"`
	RequestThroughput     float64        `json:"request_throughput"`
	OutputTokenThroughput float64        `json:"output_token_throughput"`
	InputTokens           int64          `json:"input_tokens"`
	OutputTokens          int64          `json:"output_tokens"`
	TTFTMs                Dist           `json:"ttft_ms"`
	TPOTMs                Dist           `json:"tpot_ms"`
	ITLMs                 Dist           `json:"itl_ms"`
	LatencyMs             Dist           `json:"latency_ms"`
	Goodput               *float64       `json:"goodput,omitempty"`
	GoodFraction          *float64       `json:"good_fraction,omitempty"`

	// Good is the number of succeeded requests that met every SLO (all
	// succeeded requests when no SLO is set).
	Good int `json:"good"`
	// SLO is the objectives goodput was computed against, when any is set.
	SLO *SLO `json:"slo,omitempty"`
	// Cancelled counts requests cut off at the end of a duration-bounded
	// run's grace period; they are in neither Succeeded nor Failed.
	Cancelled int `json:"cancelled,omitempty"`
	// TotalTokenThroughput is (input + output tokens of succeeded requests) / window.
	TotalTokenThroughput float64 `json:"total_token_throughput"`
	// UsageMissing counts succeeded requests whose output tokens are the
	// client's count because the server sent no usage.
	UsageMissing int `json:"usage_missing,omitempty"`
	// PromptOffTarget counts succeeded requests whose server-reported
	// prompt_tokens differ from the requested input_tokens.
	PromptOffTarget int `json:"prompt_off_target,omitempty"`

	// Open-loop statistics (request rate or trace replay), nil otherwise.
	// RequestedRate is (n-1) / (last scheduled - first scheduled send);
	// AchievedRate the same over the actual send times.
	RequestedRate *float64 `json:"requested_rate,omitempty"`
	AchievedRate  *float64 `json:"achieved_rate,omitempty"`
	// DispatchDelayMs is actual send - scheduled send, over all measured requests.
	DispatchDelayMs *Dist `json:"dispatch_delay_ms,omitempty"`
	// TTFTFromScheduledMs and LatencyFromScheduledMs measure from the
	// scheduled send, so client-side queueing behind a concurrency cap shows.
	TTFTFromScheduledMs    *Dist `json:"ttft_from_scheduled_ms,omitempty"`
	LatencyFromScheduledMs *Dist `json:"latency_from_scheduled_ms,omitempty"`
}
