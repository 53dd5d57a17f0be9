package evidence

// The sections of the evidence document beside its core (evidence.go): the
// request mix, predictions, capacity, Pareto sets and runtime comparisons,
// and the accessors that read the document by metric name.

import (
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner/load"
	"github.com/infercrane/infercrane/planner/search"
)

// RequestMix sets what a lane's drawn workload asked for beside what its
// runs sent and what the server did with it: the length distributions, the
// draws clipped to the window, and prefix-cache reuse.
type RequestMix struct {
	// Spec is the workload as planned (distributions, prefix, session).
	Spec *load.Spec `json:"spec"`
	// InputTokens and OutputTokens compare the intended percentiles with
	// those of the measured requests (server-counted prompt and completion
	// tokens of succeeded requests, nearest rank).
	InputTokens  LengthMix `json:"input_tokens"`
	OutputTokens LengthMix `json:"output_tokens"`
	// Clipped counts the draws of all runs cut to the window.
	Clipped int `json:"clipped"`
	// PrefixCache is set for shapes with a prefix or sessions.
	PrefixCache *PrefixCacheMix `json:"prefix_cache,omitempty"`
	// Sessions is set for shapes with sessions: the turns they ask for
	// beside the turns the planned and the sent conversations reached.
	Sessions *SessionMix `json:"sessions,omitempty"`
}

// SessionMix compares a session shape's turns with its conversations,
// over the measured requests of every run.
type SessionMix struct {
	// Turns is the turns each session asks for.
	Turns int `json:"turns"`
	// Intended sums the runs' planned sessions: a session restarts (a new
	// conversation at turn 1) when its next turn would overflow the window.
	Intended load.SessionStats `json:"intended"`
	// SentSessions counts the sessions with a succeeded turn, SentFull
	// those whose every one of Turns turns succeeded, and SentMostTurns is
	// the most turns of one session that succeeded (a failed turn ends its
	// session).
	SentSessions  int `json:"sent_sessions"`
	SentFull      int `json:"sent_full"`
	SentMostTurns int `json:"sent_most_turns"`
}

// LengthMix is one length's intended percentiles (of the planned requests,
// after clipping to the window) and sent ones.
type LengthMix struct {
	Intended Quantiles `json:"intended"`
	Sent     Quantiles `json:"sent"`
	Samples  int       `json:"samples"`
}

// Quantiles are p50, p90, p95 and p99.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// PrefixCacheMix is the intended and achieved prefix-cache hit ratio
// (cached over prompt tokens of measured requests).
type PrefixCacheMix struct {
	// Intended follows from the drawn requests: whole blocks of a prompt
	// that an earlier request of its group or session left in a cache of
	// unbounded size (the warm-up requests fill it first).
	Intended float64 `json:"intended"`
	// Achieved is what the server reported, from AchievedSource: its
	// prefix-cache counters over the measured requests of every run when
	// it exports them (vLLM does), else usage.prompt_tokens_details (vLLM
	// fills it only with --enable-prompt-tokens-details); nil when neither.
	Achieved       *float64 `json:"achieved,omitempty"`
	AchievedSource string   `json:"achieved_source,omitempty"`
	// PromptTokens and CachedTokens sum usage over the measured requests
	// that reported cached tokens; ServerQueriedTokens and ServerHitTokens
	// are the counters' change.
	PromptTokens        int64   `json:"prompt_tokens"`
	CachedTokens        int64   `json:"cached_tokens"`
	ServerQueriedTokens float64 `json:"server_queried_tokens,omitempty"`
	ServerHitTokens     float64 `json:"server_hit_tokens,omitempty"`
}

// Prediction sets the plan's estimate of a lane beside what its runs
// measured, with the estimate's range and the error.
type Prediction struct {
	// Assumptions is "catalog" or the calibration file the estimate used.
	Assumptions string `json:"assumptions"`
	// Scale is the sim executor's speedup the predicted times were divided
	// by (and throughputs multiplied by); 1 elsewhere.
	Scale   float64           `json:"scale"`
	Metrics []PredictedMetric `json:"metrics"`
	// Outside lists the metrics measured outside their predicted range.
	Outside []string `json:"outside"`
	// CacheHits names the runs whose TTFT p50 is under half a lone
	// prefill's compute while the server declared no prefix-cache hit
	// (executor/cachehit): a cache served their prompts, so their figures
	// measure the cache, not the model the estimate is made of.
	CacheHits []string `json:"cache_hits,omitempty"`
}

// PredictedMetric is one figure: predicted with its range, measured (the
// aggregate), and the error (measured / predicted - 1).
type PredictedMetric struct {
	Metric    string  `json:"metric"`
	Predicted float64 `json:"predicted"`
	Low       float64 `json:"low"`
	High      float64 `json:"high"`
	Measured  float64 `json:"measured"`
	Error     float64 `json:"error"`
	Within    bool    `json:"within"`
}

// CapacityMetrics are the gate metrics of a searched lane (lane.NAME);
// lanes without a search lack them, so a gate on them is inconclusive
// there. capacity_rps is set for request_rate searches and
// capacity_concurrency for concurrency searches.
var CapacityMetrics = []string{"capacity_rps", "capacity_concurrency", "usd_per_mtok", "capacity_output_token_throughput"}

// Capacity is a searched lane's evidence of capacity at SLO: the search,
// every point it measured, the bracket it ended with, where each objective
// broke, and the price of a million output tokens at capacity.
type Capacity struct {
	Search    string     `json:"search"`
	Vary      string     `json:"vary"`
	Unit      string     `json:"unit"`
	Range     [2]float64 `json:"range"`
	SLO       search.SLO `json:"slo"`
	Goodput   float64    `json:"goodput"`
	Tolerance float64    `json:"tolerance"`
	MaxPoints int        `json:"max_points"`
	// ExpectedPoints is how many points the plan expected the search to
	// need (those done before it and those it predicted; 0: no estimate).
	ExpectedPoints int `json:"expected_points,omitempty"`
	// PredictedKnee is the plan's prediction (0: none).
	PredictedKnee float64 `json:"predicted_knee"`
	// Status is converged, max_points, above_range, below_range or running
	// (the apply stopped before the search ended).
	Status string `json:"status"`
	// Capacity is the highest measured load that met every objective below
	// the lowest that missed one (0: none met them); Upper is that lowest
	// missing load (absent while none missed).
	Capacity float64  `json:"capacity"`
	Upper    *float64 `json:"upper,omitempty"`
	// Points are the measured points in the order the search ran them.
	Points []CapacityPoint `json:"points"`
	// Breaks maps each objective that some point missed to the lowest load
	// at which it was missed.
	Breaks map[string]float64 `json:"breaks"`
	// CapacityRun is the run (point) measured at Capacity (0: none).
	CapacityRun int `json:"capacity_run,omitempty"`
	// OutputTokenThroughput and RequestThroughput were measured at capacity.
	OutputTokenThroughput float64 `json:"output_token_throughput"`
	RequestThroughput     float64 `json:"request_throughput"`
	// PricePerSecond is the price of one GPU-second of the lane's GPU type
	// and GPUCount the GPUs of a deployment.
	PricePerSecond float64 `json:"price_per_second"`
	GPUCount       int     `json:"gpu_count"`
	// USDPerMTok is PricePerSecond x GPUCount / OutputTokenThroughput x 1e6:
	// what a million output tokens cost when the deployment runs at
	// capacity (absent without a capacity or a price).
	USDPerMTok *float64 `json:"usd_per_mtok,omitempty"`
	// NonMonotone lists loads that met the objectives above one that
	// missed them (noise or an unstable server); the bracket ignores them.
	NonMonotone []float64 `json:"non_monotone,omitempty"`
}

// CapacityPoint is one measured point of a search: its run, load, p95s,
// goodput, throughputs and verdict.
type CapacityPoint struct {
	Run int `json:"run"`
	search.Point
}

// Pareto is the cost-capacity frontier of one shape's searched lanes
// across models and GPUs: a lane is on the frontier when no other lane
// carries at least as much load for at most the price per token, and is
// better in one of them.
type Pareto struct {
	Profile string        `json:"profile"` // shape block name
	Vary    string        `json:"vary"`
	Unit    string        `json:"unit"`
	Lanes   []ParetoPoint `json:"lanes"`
}

// ParetoPoint is one lane of a Pareto set.
type ParetoPoint struct {
	Lane    string `json:"lane"`
	Model   string `json:"model"` // model block name
	GPU     string `json:"gpu"`   // gpu block name
	GPUType string `json:"gpu_type"`
	// Runtime is the runtime block when the screen compares several.
	Runtime    string   `json:"runtime,omitempty"`
	Capacity   float64  `json:"capacity"`
	USDPerMTok *float64 `json:"usd_per_mtok,omitempty"`
	Frontier   bool     `json:"frontier"`
}

// RuntimeComparison sets one lane beside the lane of the same screen,
// model, shape and GPU on the screen's first runtime (the reference): the
// two differ only by runtime, so the deltas are the runtime's effect.
type RuntimeComparison struct {
	Profile string `json:"profile"`
	GPU     string `json:"gpu"`
	Model   string `json:"model"` // model block
	// Candidate and Baseline are runtime blocks, their lanes the lane IDs.
	Candidate     string `json:"candidate"`
	Baseline      string `json:"baseline"`
	CandidateLane string `json:"candidate_lane"`
	BaselineLane  string `json:"baseline_lane"`
	// Metrics are the aggregates of both lanes, in runtimeMetrics order,
	// with their difference and ratio (a metric either lane lacks is left
	// out).
	Metrics []RuntimeDelta `json:"metrics"`
	// PrefixCache sets the lanes' achieved prefix-cache hit ratios side by
	// side (shapes with a prefix or sessions only).
	PrefixCache *RuntimeHitRatio `json:"prefix_cache,omitempty"`
}

// RuntimeDelta is one metric of a runtime comparison: both aggregates,
// Delta = candidate - baseline in the metric's unit, and the ratio
// candidate / baseline with its interval and verdict.
type RuntimeDelta struct {
	Ratio
	Candidate float64 `json:"candidate"`
	Baseline  float64 `json:"baseline"`
	Delta     float64 `json:"delta"`
}

// RuntimeHitRatio is the prefix-cache hit ratio of both lanes of a runtime
// comparison: the intended one (the same workload on both) and what each
// server achieved (nil where it reported nothing).
type RuntimeHitRatio struct {
	Intended  float64  `json:"intended"`
	Candidate *float64 `json:"candidate,omitempty"`
	Baseline  *float64 `json:"baseline,omitempty"`
	// CandidateCaching and BaselineCaching say whether each runtime has
	// prefix caching on, as the plan resolved its settings (a server with
	// it off reports no hits at all).
	CandidateCaching bool `json:"candidate_prefix_caching"`
	BaselineCaching  bool `json:"baseline_prefix_caching"`
	// Delta is candidate - baseline, when both are known.
	Delta *float64 `json:"delta,omitempty"`
}

// AggregatedRuns is the number of runs the campaign's aggregate pools: its
// runs, or for a search the one point at capacity.
func (c *Campaign) AggregatedRuns() int {
	if c.Capacity != nil {
		return 1
	}
	return len(c.Runs)
}

// Values are a searched lane's gate metrics.
func (c *Capacity) Values() map[string]float64 {
	v := map[string]float64{"capacity_output_token_throughput": c.OutputTokenThroughput}
	if c.Vary == search.VaryConcurrency {
		v["capacity_concurrency"] = c.Capacity
	} else {
		v["capacity_rps"] = c.Capacity
	}
	if c.USDPerMTok != nil {
		v["usd_per_mtok"] = *c.USDPerMTok
	}
	return v
}

// Fields maps each percentile metric name to its slot in l.
func (l *Latencies) Fields() map[string]**float64 {
	return map[string]**float64{
		"ttft_p50_ms": &l.TTFTP50Ms, "ttft_p90_ms": &l.TTFTP90Ms, "ttft_p95_ms": &l.TTFTP95Ms, "ttft_p99_ms": &l.TTFTP99Ms,
		"tpot_p50_ms": &l.TPOTP50Ms, "tpot_p90_ms": &l.TPOTP90Ms, "tpot_p95_ms": &l.TPOTP95Ms, "tpot_p99_ms": &l.TPOTP99Ms,
		"itl_p50_ms": &l.ITLP50Ms, "itl_p90_ms": &l.ITLP90Ms, "itl_p95_ms": &l.ITLP95Ms, "itl_p99_ms": &l.ITLP99Ms,
		"latency_p50_ms": &l.LatencyP50Ms, "latency_p90_ms": &l.LatencyP90Ms, "latency_p95_ms": &l.LatencyP95Ms, "latency_p99_ms": &l.LatencyP99Ms,
	}
}

// Values returns every figure of m by its JSON name; absent figures are left out.
func (m *Metrics) Values() map[string]float64 {
	v := map[string]float64{
		"requests":                float64(m.Requests),
		"succeeded":               float64(m.Succeeded),
		"failed":                  float64(m.Failed),
		"cancelled":               float64(m.Cancelled),
		"window_seconds":          m.WindowSeconds,
		"input_tokens":            float64(m.InputTokens),
		"output_tokens":           float64(m.OutputTokens),
		"request_throughput":      m.RequestThroughput,
		"output_token_throughput": m.OutputTokenThroughput,
		"total_token_throughput":  m.TotalTokenThroughput,
	}
	for name, p := range m.Latencies.Fields() {
		if *p != nil {
			v[name] = **p
		}
	}
	if m.Goodput != nil {
		v["goodput"] = *m.Goodput
	}
	if m.GoodFraction != nil {
		v["good_fraction"] = *m.GoodFraction
	}
	return v
}

// ShapeWords names a campaign's shape in the reports' tables, with its
// runtime when the screen compares several: "prefix_reuse (vllm_off)".
func (c *Campaign) ShapeWords() string { return withRuntime(c.Profile, c.Runtime) }

// ShapeWords names a comparison's shape, with the runtime both sides ran
// on when the screen compares several.
func (c *Comparison) ShapeWords() string { return withRuntime(c.Profile, c.Runtime) }

func withRuntime(shape, runtime string) string {
	if runtime != "" {
		return shape + " (" + runtime + ")"
	}
	return shape
}

// CampaignRuntime is the runtime a campaign ran on: its entry in the
// environment's runtimes when the screen compares several, else the
// environment's one runtime.
func (ev *Evidence) CampaignRuntime(c *Campaign) Runtime {
	for _, r := range ev.Environment.Runtimes {
		if c.Runtime != "" && r.Name == c.Runtime {
			r.Name = ""
			return r
		}
	}
	return ev.Environment.Runtime
}

// LaneReconciliation sums up how a lane's client figures sat beside the
// server's own histograms over its runs (see loadgen.Reconcile); gates read
// it as lane.client_vs_server.*.
type LaneReconciliation struct {
	// Runs is how many runs could be compared.
	Runs int `json:"runs"`
	// Flagged counts the checks, over every compared run, whose client
	// figure lay outside the server's by more than the margin (either way).
	Flagged int `json:"flagged"`
	// GapMs is, by metric, the median over the compared runs of the
	// client's mean minus the server's (signed: below zero the client read
	// less than the server).
	GapMs map[string]float64 `json:"gap_ms"`
	// Margin is the margin the runs were judged with.
	Margin loadgen.Margin `json:"margin"`
}

// Values are the gate metrics of r by name.
func (r *LaneReconciliation) Values() map[string]float64 {
	v := map[string]float64{"flagged": float64(r.Flagged)}
	for m, g := range r.GapMs {
		v[m+"_gap_ms"] = g
	}
	return v
}
