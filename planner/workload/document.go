// Package workload profiles serving traces stored as Parquet (a local file
// or an s3:// object) and defines the infercrane.public-workload-profile/v1
// document: its schema, strict validation, digest, derived benchmark shapes
// and the value that specs see as trace.NAME.
package workload

// SchemaVersion is the only schema_version a workload profile may carry.
const SchemaVersion = "infercrane.public-workload-profile/v1"

// EvidenceClass is the only evidence_class a workload profile may carry.
const EvidenceClass = "public-trace-derived-screening-input"

// DefaultMethodologyBoundary is the boundary statement written into profiles
// built by Build; it is the statement of the public prior.
const DefaultMethodologyBoundary = "The public fleet sample selects representative token shapes only. It does not represent a customer's model mix, absolute arrival rate, semantic quality, or production SLO. Controlled concurrency lanes must be qualified on the exact model, runtime, GPU, and customer replay before promotion."

// Document is a workload profile. Field order is the digest order: do not
// reorder fields, and add new ones only as optional (omitempty) fields after
// the existing ones so that existing documents keep their digests.
type Document struct {
	SchemaVersion       string        `json:"schema_version"`
	EvidenceClass       string        `json:"evidence_class"`
	GeneratedAt         string        `json:"generated_at"`
	Source              Source        `json:"source"`
	Sampling            Sampling      `json:"sampling"`
	Distributions       Distributions `json:"distributions"`
	Profiles            []Shape       `json:"profiles"`
	MethodologyBoundary string        `json:"methodology_boundary"`
	// Traffic is an InferCrane extension (absent from the public prior):
	// arrival rates, burstiness and the per-function breakdown.
	Traffic *Traffic `json:"traffic,omitempty"`
	// Digest is "sha256:<hex>" of the document without it; see Digest.
	Digest string `json:"digest,omitempty"`
}

// Source names the trace a profile was computed from.
type Source struct {
	Name       string `json:"name"`
	URL        string `json:"url"`
	License    string `json:"license"`
	Citation   string `json:"citation,omitempty"`
	TraceRows  int64  `json:"trace_rows"`
	TraceBytes int64  `json:"trace_bytes,omitempty"`
}

// Sampling says which part of the trace was inspected.
type Sampling struct {
	Method         string   `json:"method"`
	Columns        []string `json:"columns"`
	RowGroups      []int    `json:"row_groups"`
	TotalRowGroups int      `json:"total_row_groups"`
	RowsInspected  int      `json:"rows_inspected"`
	RemoteOnly     bool     `json:"remote_only"`
	// QuantileRelativeError is an InferCrane extension set by full scans:
	// every percentile is within this relative error of the exact
	// nearest-rank value (0: percentiles are exact).
	QuantileRelativeError float64 `json:"quantile_relative_error,omitempty"`
}

// Percentiles are nearest-rank percentiles of a distribution.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// Distribution is one measured quantity.
type Distribution struct {
	Unit        string      `json:"unit"`
	Samples     int         `json:"samples"`
	Percentiles Percentiles `json:"percentiles"`
	// Quantiles is an InferCrane extension (profile --quantiles): the
	// nearest-rank quantiles at QuantileGrid, a finer sketch of the
	// distribution than the four percentiles (which they repeat at 0.5,
	// 0.9, 0.95 and 0.99), for shapes that draw lengths from it.
	Quantiles []Quantile `json:"quantiles,omitempty"`
}

// Quantile is the value V below which fraction Q of the samples fall
// (nearest rank).
type Quantile struct {
	Q float64 `json:"q"`
	V float64 `json:"v"`
}

// Distributions are the six quantities every profile reports.
type Distributions struct {
	InputTokens      Distribution `json:"input_tokens"`
	OutputTokens     Distribution `json:"output_tokens"`
	CachedTokens     Distribution `json:"cached_tokens"`
	TTFTMs           Distribution `json:"ttft_ms"`
	DurationMs       Distribution `json:"duration_ms"`
	CacheHitFraction Distribution `json:"cache_hit_fraction"`
}

// Shape is a benchmark shape derived from the distributions: a bounded,
// reproducible screening workload, not a capacity estimate.
type Shape struct {
	Name           string  `json:"name"`
	Description    string  `json:"description"`
	Objective      string  `json:"objective"`
	Requests       int     `json:"requests"`
	Concurrency    int     `json:"concurrency"`
	InputTokens    int     `json:"input_tokens"`
	OutputTokens   int     `json:"output_tokens"`
	Streaming      bool    `json:"streaming"`
	ArrivalPattern string  `json:"arrival_pattern,omitempty"`
	RequestRate    float64 `json:"request_rate,omitempty"`
	Clipped        bool    `json:"clipped_to_context_window"`
}

// Traffic holds what a token-shape profile lacks: how requests arrive.
type Traffic struct {
	// PerSecond summarises request counts in 1-second windows (requests/s).
	PerSecond RateWindows `json:"arrival_per_second"`
	// PerMinute summarises request counts in 60-second windows, as requests/s.
	PerMinute RateWindows `json:"arrival_per_minute"`
	// InterarrivalCV is the coefficient of variation (std/mean) of the gaps
	// between successive started_at times: 1 for Poisson arrivals, above 1
	// for bursty traffic.
	InterarrivalCV float64 `json:"interarrival_cv"`
	// InterarrivalSamples is the number of gaps behind InterarrivalCV.
	InterarrivalSamples int64 `json:"interarrival_samples"`
	// Functions is the breakdown by function_name (largest first, at most
	// MaxFunctions entries plus "(other)"), when the trace has that column.
	Functions []FunctionShare `json:"functions,omitempty"`
	// ArrivalCurve is the request rate minute by minute over one inspected
	// row group (the one with the most whole minutes, at most a day), for
	// shapes that replay the trace's arrival curve.
	ArrivalCurve *ArrivalCurve `json:"arrival_curve,omitempty"`
}

// ArrivalCurve is a request rate over consecutive windows.
type ArrivalCurve struct {
	WindowSeconds int `json:"window_seconds"`
	// Start is the first window's start (RFC 3339, UTC).
	Start string    `json:"start"`
	Rates []float64 `json:"rates"` // requests/s per window
}

// RateWindows summarises arrival rates over fixed windows that lie wholly
// inside an inspected row group's time span.
type RateWindows struct {
	Windows int64   `json:"windows"`
	Mean    float64 `json:"mean"`
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
}

// FunctionShare is one function_name's share of the inspected requests.
type FunctionShare struct {
	Name             string  `json:"name"`
	Requests         int64   `json:"requests"`
	Share            float64 `json:"share"`
	InputTokensMean  float64 `json:"input_tokens_mean"`
	OutputTokensMean float64 `json:"output_tokens_mean"`
}
