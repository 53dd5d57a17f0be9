package calibrate

import (
	"reflect"
	"testing"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner/perf"
)

// A run's records give the model the sizes the server saw, in send order:
// the server's prompt count (the requested one when it gave none), the
// output, the cached prefix it reported (never the whole prompt), warm-up
// requests apart, failed requests without output left out.
func TestRecordSizes(t *testing.T) {
	cached := func(n int) *int { return &n }
	recs := []loadgen.Record{
		{Index: 2, InputTokens: 100, PromptTokens: 101, OutputTokens: 8, CachedTokens: cached(64)},
		{Index: 0, Warmup: true, InputTokens: 100, PromptTokens: 100, OutputTokens: 8},
		{Index: 1, InputTokens: 100, OutputTokens: 7},
		{Index: 3, InputTokens: 100, PromptTokens: 100, ErrorClass: "http_5xx"},
		{Index: 4, InputTokens: 50, PromptTokens: 50, OutputTokens: 8, CachedTokens: cached(50)},
	}
	meas, warm := recordSizes(recs)
	if want := []perf.RequestSize{{Input: 100, Output: 7}, {Input: 101, Output: 8, Cached: 64}, {Input: 50, Output: 8, Cached: 49}}; !reflect.DeepEqual(meas, want) {
		t.Errorf("measured sizes %v, want %v", meas, want)
	}
	if want := []perf.RequestSize{{Input: 100, Output: 8}}; !reflect.DeepEqual(warm, want) {
		t.Errorf("warm-up sizes %v, want %v", warm, want)
	}
}
