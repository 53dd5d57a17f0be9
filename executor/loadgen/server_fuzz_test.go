package loadgen_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"sort"
	"testing"

	"github.com/infercrane/infercrane/executor/loadgen"
)

// FuzzParseHistograms: any /metrics text parses without a panic into
// histograms whose bounds are sorted and match their counts, and whose
// quantiles are finite or NaN, never below zero for non-negative input.
func FuzzParseHistograms(f *testing.F) {
	if b, err := os.ReadFile("testdata/vllm-0.32.0-metrics.txt"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("vllm:e2e_request_latency_seconds_bucket{le=\"0.5\"} 3\nvllm:e2e_request_latency_seconds_count 3\nvllm:e2e_request_latency_seconds_sum 1.2\n"))
	f.Add([]byte("vllm:time_to_first_token_seconds_bucket{a=\"x\\\"y\",le=\"+Inf\"} 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		hs, err := loadgen.ParseHistograms(bytes.NewReader(b), loadgen.ServerTTFT, loadgen.ServerLatency)
		if err != nil {
			return
		}
		for n, h := range hs {
			if len(h.Le) != len(h.Counts) || !sort.Float64sAreSorted(h.Le) {
				t.Fatalf("%s: bounds %v, counts %v", n, h.Le, h.Counts)
			}
			q := h.Quantile(0.5)
			if math.IsInf(q, 0) {
				t.Fatalf("%s: infinite p50 from %+v", n, h)
			}
			_ = h.Bound(0.95)
			_, _ = h.Sub(h)
		}
		// Whatever the server said, the view marshals (no NaN or Inf reaches the evidence).
		if _, err := json.Marshal(loadgen.NewServerView(hs)); err != nil {
			t.Fatalf("server view does not marshal: %v", err)
		}
	})
}
