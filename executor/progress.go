package executor

import "context"

// Progress is how far a run has got. Executors report it through
// ReportProgress; the runner turns it into run_progress events.
type Progress struct {
	// Done counts finished requests (succeeded or failed), Failed the
	// failed ones, Total the requests the run will send.
	Done   int `json:"done"`
	Failed int `json:"failed"`
	Total  int `json:"total"`
	// OutputTokens is the output tokens received so far.
	OutputTokens int64 `json:"output_tokens"`
	// TokensPerSecond is the recent output token rate; TTFTP50Ms the
	// median TTFT of the run's succeeded requests so far (0: not known).
	TokensPerSecond float64 `json:"tokens_per_second,omitempty"`
	TTFTP50Ms       float64 `json:"ttft_p50_ms,omitempty"`
}

type progressKey struct{}

// WithProgress returns a context whose ReportProgress calls reach fn.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ReportProgress tells whoever runs the executor how far a run has got; it
// does nothing when nobody listens. Executors call it from Run.
func ReportProgress(ctx context.Context, p Progress) {
	if fn, ok := ctx.Value(progressKey{}).(func(Progress)); ok && fn != nil {
		fn(p)
	}
}
