// Package evidence is the screen's evidence document, the
// infercrane.screen-evidence/v1 format: its types (Evidence and its
// sections), its digest over the RFC 8785 canonical JSON (Digest,
// Canonicalize) and the JSON form of its comparisons. Package report builds
// the document from a screen's runs and renders it.
package evidence

import (
	"fmt"
	"github.com/infercrane/infercrane/lang/shape"

	"github.com/infercrane/infercrane/executor/loadgen"
)

// SchemaVersion is the evidence document's schema.
const SchemaVersion = "infercrane.screen-evidence/v1"

// Gate statuses.
const (
	StatusPass         = "pass"
	StatusFail         = "fail"
	StatusInconclusive = "inconclusive"
)

// Exit codes of apply and report, decided by the gates.
const (
	ExitPass         = 0
	ExitFail         = 3
	ExitInconclusive = 4
)

// NeverPromotes is appended to every selection boundary: gates only report.
const NeverPromotes = "Gates report pass, fail or inconclusive; they never promote or select a model."

// Evidence is one screen's infercrane.screen-evidence/v1 document.
type Evidence struct {
	SchemaVersion string `json:"schema_version"`
	// EvidenceClass is "simulated-screen" when every lane ran on the
	// simulated engine, "measured-screen" otherwise.
	EvidenceClass     string `json:"evidence_class"`
	ObservedAt        string `json:"observed_at"`
	InfercraneVersion string `json:"infercrane_version"`
	Screen            string `json:"screen"`
	SpecDigest        string `json:"spec_digest"`
	PlanDigest        string `json:"plan_digest"`
	// WorkloadProfileDigest pins the workload profiles the spec's traces
	// resolved to: their document digests (what a trace block's digest
	// pins and 'infercrane profile validate' prints), comma-separated in
	// trace-name order; empty when the spec has no trace. WorkloadSource
	// names each trace's source ("trace.NAME") and pinned profile file
	// ("trace.NAME.profile"). Evidence of plans made before plans recorded
	// their traces has the profile files' byte digests here instead.
	WorkloadProfileDigest string            `json:"workload_profile_digest"`
	WorkloadSource        map[string]string `json:"workload_source,omitempty"`
	Environment           Environment       `json:"environment"`
	Models                []ModelEvidence   `json:"models"`
	Comparisons           []Comparison      `json:"comparisons"`
	// RuntimeComparisons set each lane of a screen that compares runtimes
	// beside the lane that differs from it only by runtime, on the
	// screen's first runtime (absent for a screen with one runtime).
	RuntimeComparisons []RuntimeComparison `json:"runtime_comparisons,omitempty"`
	// Pareto holds the cost-capacity frontier of each searched shape
	// (absent when no lane searched).
	Pareto            []Pareto    `json:"pareto,omitempty"`
	GateSummary       GateSummary `json:"gate_summary"`
	Preflight         Preflight   `json:"preflight"`
	SelectionBoundary string      `json:"selection_boundary"`
	Cleanup           Cleanup     `json:"cleanup"`
	// Completeness says whether every lane has all its planned runs; an
	// incomplete screen is never a complete one (its gates are inconclusive).
	Completeness Completeness `json:"completeness"`
	// Files names every file the evidence vouches for, with its SHA-256:
	// the screen's Parquet records (beside the evidence) and each run's
	// JSONL records (in the state directory).
	Files []FileDigest `json:"files"`
	// Digest is "sha256:" + hex SHA-256 of the canonical JSON without it.
	Digest string `json:"digest"`

	// Parquet is the encoded Parquet records file whose digest Files holds;
	// the report writes it beside the document, which does not include it.
	Parquet []byte `json:"-"`
}

// Completeness counts a screen's planned and completed runs.
type Completeness struct {
	Complete      bool `json:"complete"`
	RunsPlanned   int  `json:"runs_planned"`
	RunsCompleted int  `json:"runs_completed"`
	RunsMissing   int  `json:"runs_missing"`
	// IncompleteLanes lists the lanes with fewer completed runs than planned.
	IncompleteLanes []string `json:"incomplete_lanes"`
}

// Words says the screen's completeness in the reports' words:
// "complete: 3 of 3 runs" or "incomplete: 1 of 3 runs".
func (c Completeness) Words() string {
	w := "complete"
	if !c.Complete {
		w = "incomplete"
	}
	return fmt.Sprintf("%s: %d of %d runs", w, c.RunsCompleted, c.RunsPlanned)
}

// File bases of FileDigest.
const (
	// BaseReport is the directory the evidence file is in.
	BaseReport = "report"
	// BaseState is the state directory of the apply.
	BaseState = "state"
)

// File kinds of FileDigest.
const (
	KindRecordsParquet = "records-parquet"
	KindRecordsJSONL   = "records-jsonl"
)

// FileDigest is one file the evidence vouches for.
type FileDigest struct {
	// Path is relative to Base, with forward slashes.
	Path string `json:"path"`
	Base string `json:"base"`
	Kind string `json:"kind"`
	// SHA256 is the hex SHA-256 of the file's bytes.
	SHA256 string `json:"sha256"`
}

// Environment says where and how the screen ran.
type Environment struct {
	Executor   []string `json:"executor"`
	GPURequest []string `json:"gpu_request"`
	// GPU is what the servers reported seeing (or the requested type when
	// they report nothing).
	GPU     []string `json:"gpu"`
	Runtime Runtime  `json:"runtime"`
	// Runtimes lists every runtime of a screen that compares several, in
	// the screen's order (Runtime is then the first, the reference);
	// absent for a screen with one.
	Runtimes    []Runtime         `json:"runtimes,omitempty"`
	Benchmark   Benchmark         `json:"benchmark"`
	ProfileRuns int               `json:"profile_runs"`
	RandomSeed  int64             `json:"random_seed"`
	Streaming   bool              `json:"streaming"`
	ServerInfo  map[string]string `json:"server_info,omitempty"`
}

// Runtime is the serving engine of the screen.
type Runtime struct {
	// Name is the runtime block, set only in Environment.Runtimes.
	Name    string   `json:"name,omitempty"`
	Engine  string   `json:"engine"`
	Version string   `json:"version"`
	Dtype   string   `json:"dtype,omitempty"`
	Args    []string `json:"args"`
}

// Benchmark names the load generator.
type Benchmark struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ModelEvidence groups a model's campaigns (one per shape and GPU).
type ModelEvidence struct {
	Name      string     `json:"name"`  // model block name
	Model     string     `json:"model"` // e.g. Qwen/Qwen3-0.6B
	Revision  string     `json:"revision"`
	Campaigns []Campaign `json:"campaigns"`
}

// Campaign is one lane: a model on a shape and GPU, with its runs.
type Campaign struct {
	Profile string `json:"profile"` // shape block name
	Lane    string `json:"lane"`
	GPU     string `json:"gpu"`
	GPUType string `json:"gpu_type"`
	// Runtime is the lane's runtime block when the screen compares
	// several (absent otherwise: the environment's runtime is the lane's).
	Runtime  string   `json:"runtime,omitempty"`
	Workload Workload `json:"workload"`
	// Aggregate follows the design's rules: pooled throughputs, mean of
	// per-run percentiles.
	Aggregate Metrics `json:"aggregate"`
	// Pooled holds percentiles over every request of every run.
	Pooled                 Latencies           `json:"pooled"`
	CoefficientOfVariation map[string]float64  `json:"coefficient_of_variation"`
	ConfidenceIntervals    ConfidenceIntervals `json:"confidence_intervals"`
	Runs                   []RunEvidence       `json:"runs"`
	// RunsPlanned is the plan's run count; Complete is false when fewer
	// runs completed, and every gate of the campaign is then inconclusive.
	RunsPlanned int          `json:"runs_planned"`
	Complete    bool         `json:"complete"`
	Gates       []GateResult `json:"gates"`
	// GPUSeconds sets the plan's estimate beside what the runs measured.
	GPUSeconds GPUSeconds `json:"gpu_seconds"`
	// RequestMix compares a drawn workload with what was sent (lanes with
	// lengths, prefix or session blocks only).
	RequestMix *RequestMix `json:"request_mix,omitempty"`
	// Prediction sets the plan's estimate, with its range, beside the
	// aggregate and flags the figures that fell outside it.
	Prediction *Prediction `json:"prediction,omitempty"`
	// Capacity is a capacity search's evidence (nil for a fixed load); the
	// Aggregate is then the point at capacity.
	Capacity *Capacity `json:"capacity,omitempty"`
	// Price is what the lane's output costs at its measured throughput;
	// absent without a price for its GPU or without output.
	Price *Price `json:"price,omitempty"`
	// ClientVsServer sums up the runs' reconciliations with the server's
	// own histograms; absent when no run could be compared.
	ClientVsServer *LaneReconciliation `json:"client_vs_server,omitempty"`
}

// GPUSeconds compares a lane's planned and measured GPU time. Measured is 0
// when the executor cannot measure it (the simulated engine bills nothing).
type GPUSeconds struct {
	Estimated float64 `json:"estimated"`
	Measured  float64 `json:"measured"`
}

// Workload is what each run of a campaign asked for.
type Workload struct {
	InputTokens      int      `json:"input_tokens"`
	OutputTokens     int      `json:"output_tokens"`
	Concurrency      int      `json:"concurrency"`
	RequestsPerRun   int      `json:"requests_per_run"`
	TemplateHeadroom int      `json:"template_headroom"`
	RequestRate      float64  `json:"request_rate,omitempty"`
	Arrival          string   `json:"arrival,omitempty"`
	Warmup           int      `json:"warmup,omitempty"`
	WarmupSeconds    float64  `json:"warmup_seconds,omitempty"`
	API              string   `json:"api"`
	Streaming        bool     `json:"streaming"`
	SLOTTFTMs        *float64 `json:"slo_ttft_ms,omitempty"`
	SLOTPOTMs        *float64 `json:"slo_tpot_ms,omitempty"`
	SLOLatencyMs     *float64 `json:"slo_latency_ms,omitempty"`
	// ArrivalProcess is an open loop's arrival process in full, all a
	// reader (or calibrate) needs to rebuild its schedule besides
	// request_rate, concurrency, requests_per_run, warmup and the
	// environment's random_seed. It is absent for a closed loop, and from
	// evidence written before it was recorded (an open-loop campaign
	// without it may have had any burstiness or arrival curve).
	ArrivalProcess *ArrivalProcess `json:"arrival_process,omitempty"`
	// Prompts says where the campaign's prompt texts came from and whether
	// any run sent the same prompts as another (which a server's prefix
	// cache would then serve instead of prefilling). Absent from evidence
	// written before it was recorded.
	Prompts *Prompts `json:"prompts,omitempty"`
	// Options are the lane's shape options (lang/shape), each present only
	// where the lane set it to other than its default, so evidence written
	// before an option existed still verifies.
	shape.Options
}

// WorkloadOf is the workload of a lane with shape settings s (as its lane
// inputs hold them), in the evidence's own names and order: the one place
// that maps a lane's shape onto this format. The SLOs and Prompts are the
// caller's to set.
func WorkloadOf(s shape.Settings) Workload {
	return Workload{
		InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, Concurrency: s.Concurrency,
		RequestsPerRun: s.Requests, TemplateHeadroom: s.TemplateHeadroom, RequestRate: s.RequestRate,
		Arrival: s.Arrival, ArrivalProcess: arrivalProcessOf(s), Warmup: s.Warmup, WarmupSeconds: s.WarmupSeconds,
		API: s.API, Streaming: s.Streaming, Options: s.Options,
	}
}

// arrivalProcessOf is the arrival process of an open loop, defaults spelt
// out as planner/load.NewArrivals applies them (nil for a closed loop).
func arrivalProcessOf(s shape.Settings) *ArrivalProcess {
	if !(s.RequestRate > 0) {
		return nil
	}
	p := &ArrivalProcess{Kind: s.Arrival}
	if p.Kind == "" {
		p.Kind = shape.ArrivalPoisson
	}
	if p.Kind == shape.ArrivalGamma {
		p.Burstiness = s.Burstiness
		if p.Burstiness == 0 {
			p.Burstiness = 1
		}
	}
	if len(s.ArrivalCurve) > 0 {
		p.Curve = &ArrivalCurve{StepSeconds: s.ArrivalCurveStepSeconds, Rates: append([]float64{}, s.ArrivalCurve...)}
	}
	return p
}

// Settings are the shape settings w records, WorkloadOf's inverse: the
// arrival process's kind, burstiness and curve where it is recorded (an
// open loop of evidence written before it was has the recorded arrival
// and neither burstiness nor curve).
func (w Workload) Settings() shape.Settings {
	s := shape.Settings{
		InputTokens: w.InputTokens, OutputTokens: w.OutputTokens, TemplateHeadroom: w.TemplateHeadroom,
		Concurrency: w.Concurrency, RequestRate: w.RequestRate, Arrival: w.Arrival, Requests: w.RequestsPerRun,
		Warmup: w.Warmup, WarmupSeconds: w.WarmupSeconds, Streaming: w.Streaming, API: w.API, Options: w.Options,
	}
	if p := w.ArrivalProcess; p != nil {
		s.Arrival, s.Burstiness = p.Kind, p.Burstiness
		if c := p.Curve; c != nil {
			s.ArrivalCurve, s.ArrivalCurveStepSeconds = c.Rates, c.StepSeconds
		}
	}
	return s
}

// Prompts says where a campaign's prompt texts came from: the load
// generator draws request i's prompt from the run's prompt seed and i
// alone, so two runs with one prompt seed send the same prompts.
type Prompts struct {
	// Source says how each run's prompt seed is made.
	Source string `json:"source"`
	// RepeatAcrossRuns is true when two of the campaign's runs had the
	// same prompt seed; RepeatAcrossLanes when a run of another lane of
	// the screen had the same prompt seed as one of these.
	RepeatAcrossRuns  bool `json:"repeat_across_runs"`
	RepeatAcrossLanes bool `json:"repeat_across_lanes"`
}

// ArrivalProcess is the schedule of an open loop's sends: gaps of kind
// Kind at the campaign's request_rate (gamma with shape Burstiness), the
// rate modulated over time by Curve when set (see planner/load.Arrivals).
type ArrivalProcess struct {
	// Kind is constant, poisson or gamma (the default, poisson, spelt out).
	Kind string `json:"kind"`
	// Burstiness is the gamma shape the load generator drew with (the
	// default 1 spelt out); absent for the other kinds.
	Burstiness float64 `json:"burstiness,omitempty"`
	// Curve varies the rate over time (absent: the rate is constant).
	Curve *ArrivalCurve `json:"curve,omitempty"`
}

// ArrivalCurve is an arrival curve as the load generator followed it: the
// rate is request_rate x Rates[k] / mean(Rates) during step k of
// StepSeconds, cycling.
type ArrivalCurve struct {
	StepSeconds float64   `json:"step_seconds"`
	Rates       []float64 `json:"rates"`
}

// Latencies are the p50/p90/p95/p99 of TTFT, TPOT, ITL and end-to-end
// latency in milliseconds; a figure no request measured is left out.
type Latencies struct {
	TTFTP50Ms    *float64 `json:"ttft_p50_ms,omitempty"`
	TTFTP90Ms    *float64 `json:"ttft_p90_ms,omitempty"`
	TTFTP95Ms    *float64 `json:"ttft_p95_ms,omitempty"`
	TTFTP99Ms    *float64 `json:"ttft_p99_ms,omitempty"`
	TPOTP50Ms    *float64 `json:"tpot_p50_ms,omitempty"`
	TPOTP90Ms    *float64 `json:"tpot_p90_ms,omitempty"`
	TPOTP95Ms    *float64 `json:"tpot_p95_ms,omitempty"`
	TPOTP99Ms    *float64 `json:"tpot_p99_ms,omitempty"`
	ITLP50Ms     *float64 `json:"itl_p50_ms,omitempty"`
	ITLP90Ms     *float64 `json:"itl_p90_ms,omitempty"`
	ITLP95Ms     *float64 `json:"itl_p95_ms,omitempty"`
	ITLP99Ms     *float64 `json:"itl_p99_ms,omitempty"`
	LatencyP50Ms *float64 `json:"latency_p50_ms,omitempty"`
	LatencyP90Ms *float64 `json:"latency_p90_ms,omitempty"`
	LatencyP95Ms *float64 `json:"latency_p95_ms,omitempty"`
	LatencyP99Ms *float64 `json:"latency_p99_ms,omitempty"`
}

// Metrics are the figures of one run or of a campaign's aggregate.
type Metrics struct {
	Requests              int            `json:"requests"`
	Succeeded             int            `json:"succeeded"`
	Failed                int            `json:"failed"`
	Failures              map[string]int `json:"failures"`
	Cancelled             int            `json:"cancelled,omitempty"`
	WindowSeconds         float64        `json:"window_seconds"`
	InputTokens           int64          `json:"input_tokens"`
	OutputTokens          int64          `json:"output_tokens"`
	RequestThroughput     float64        `json:"request_throughput"`
	OutputTokenThroughput float64        `json:"output_token_throughput"`
	TotalTokenThroughput  float64        `json:"total_token_throughput"`
	Latencies
	// Goodput and GoodFraction are set when the shape has SLOs.
	Goodput      *float64 `json:"goodput,omitempty"`
	GoodFraction *float64 `json:"good_fraction,omitempty"`
}

// RunEvidence is one run with its figures and where its records are.
type RunEvidence struct {
	Run int `json:"run"`
	Metrics
	RecordsFile   string `json:"records_file"`
	RecordsSHA256 string `json:"records_sha256"`
	StartedAt     string `json:"started_at,omitempty"`
	FinishedAt    string `json:"finished_at,omitempty"`
	// ServerMetrics are the server's Prometheus samples (vllm:*) scraped
	// during the run, when it exposes /metrics.
	ServerMetrics map[string]float64 `json:"server_metrics,omitempty"`
	GPUSeconds    float64            `json:"gpu_seconds,omitempty"`
	// WarmupRequests is the number of unmeasured warmup requests the run
	// sent first (kept in its records, flagged warmup).
	WarmupRequests int `json:"warmup_requests,omitempty"`
	// ServerView is what the server's own latency histograms recorded over
	// the measured requests (/metrics read right before and right after
	// them), when the server exposes them.
	ServerView *loadgen.ServerView `json:"server_view,omitempty"`
	// ClientVsServer sets the run's client figures beside the server's and
	// flags those that exceed them by more than its margin.
	ClientVsServer *loadgen.Reconciliation `json:"client_vs_server,omitempty"`
}

// ConfidenceIntervals are seeded bootstrap intervals over runs.
type ConfidenceIntervals struct {
	Level     float64 `json:"level"`
	Method    string  `json:"method"`
	Resamples int     `json:"resamples"`
	Seed      int64   `json:"seed"`
	// Intervals is keyed by metric; empty with fewer than two runs.
	Intervals map[string]Interval `json:"intervals"`
	Note      string              `json:"note,omitempty"`
}

// Interval is a [Low, High] confidence interval.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Comparison holds the ratios of one candidate over the baseline on one
// shape and GPU. In JSON the ratios are members of the comparison itself,
// named "<candidate>_over_<baseline>_<metric>" as the design's evidence
// has them (see MarshalJSON).
type Comparison struct {
	Profile string `json:"profile"`
	GPU     string `json:"gpu"`
	// Runtime is the runtime both lanes ran on, when the screen compares
	// several (candidate and baseline models are compared per runtime).
	Runtime        string           `json:"runtime,omitempty"`
	Candidate      string           `json:"candidate"`
	CandidateModel string           `json:"candidate_model"`
	Baseline       string           `json:"baseline"`
	BaselineModel  string           `json:"baseline_model"`
	Ratios         map[string]Ratio `json:"-"`
}

// Ratio is candidate / baseline of one aggregate metric.
type Ratio struct {
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	// CI95 is a seeded bootstrap interval (runs of each lane resampled
	// independently); nil with fewer than two runs on either side.
	CI95 *Interval `json:"ci95,omitempty"`
	// Significant is true when CI95 excludes 1 and each side has at least
	// MinRunsForSignificance runs.
	Significant bool `json:"significant"`
	// Note says why a ratio with an interval was not tested (too few runs).
	Note string `json:"note,omitempty"`
	// HigherIsBetter tells a reader which direction is an improvement.
	HigherIsBetter bool `json:"higher_is_better"`
}

// GateResult is one gate evaluated on one campaign.
type GateResult struct {
	Gate      string `json:"gate"`
	Condition string `json:"condition"`
	Status    string `json:"status"`
	// Reason says why, in words (the error_message on a fail).
	Reason string `json:"reason"`
}

// GateSummary counts gate results over the screen and gives the exit code.
type GateSummary struct {
	Pass         int `json:"pass"`
	Fail         int `json:"fail"`
	Inconclusive int `json:"inconclusive"`
	ExitCode     int `json:"exit_code"`
}

// Preflight holds the plan's findings for the screen and the corrections
// the planner made.
type Preflight struct {
	Findings    []Finding `json:"findings"`
	Corrections []string  `json:"corrections"`
}

// Finding is a preflight finding as the evidence records it.
type Finding struct {
	Severity string `json:"severity"`
	Lane     string `json:"lane,omitempty"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail,omitempty"`
}

// Cleanup records that nothing was left running.
type Cleanup struct {
	// State is "torn_down" when every deployment was torn down.
	State               string   `json:"state"`
	DeploymentsTornDown []string `json:"deployments_torn_down"`
	// ActiveGPUTasks is the number of GPU tasks still running (must be 0).
	ActiveGPUTasks int `json:"active_gpu_tasks"`
}

// Price is what a lane's output tokens cost on its GPUs at the throughput
// it measured: PerSecond x GPUCount / output tokens/s x 1e6.
type Price struct {
	// PerSecond is the plan's price of one GPU-second of the lane's GPU type.
	PerSecond  float64 `json:"price_per_second"`
	GPUCount   int     `json:"gpu_count"`
	USDPerMTok float64 `json:"usd_per_mtok"`
	// Notional is true when the executor bills nothing (the simulated
	// engine): the figure is what the lane would cost on its GPU.
	Notional bool `json:"notional,omitempty"`
}
