package loadgen

import (
	"math"
	"strings"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	text := `# HELP vllm:num_requests_running Number of requests running.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 3
vllm:num_requests_waiting{model_name="m"} 1.5e1
vllm:prefix_cache_hits_total{model_name="m"} 7
vllm:prefix_cache_hits_total{model_name="n"} 2
vllm:e2e_request_latency_seconds_bucket{le="0.1",model_name="m"} 4
vllm:e2e_request_latency_seconds_sum{model_name="m"} 0.25
process_cpu_seconds_total 12
vllm:broken{model_name="m" 1
`
	got := ParseMetrics(strings.NewReader(text))
	want := map[string]float64{
		"vllm:num_requests_running":            3,
		"vllm:num_requests_waiting":            15,
		"vllm:prefix_cache_hits_total":         9,
		"vllm:e2e_request_latency_seconds_sum": 0.25,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if ParseMetrics(strings.NewReader("no metrics here\n")) != nil {
		t.Error("want nil without vllm samples")
	}
}

// FuzzParseMetrics checks that arbitrary exposition text never panics and
// yields only vllm: (and infercrane:sim_) names that are not histogram
// buckets.
func FuzzParseMetrics(f *testing.F) {
	f.Add("vllm:a 1\n")
	f.Add("vllm:b{x=\"}\"} NaN\n")
	f.Add("vllm:c_bucket{le=\"+Inf\"} 3\n")
	f.Fuzz(func(t *testing.T, text string) {
		for name, v := range ParseMetrics(strings.NewReader(text)) {
			if !(strings.HasPrefix(name, "vllm:") || strings.HasPrefix(name, "infercrane:sim_")) || strings.HasSuffix(name, "_bucket") {
				t.Fatalf("name %q", name)
			}
			_ = math.IsNaN(v)
		}
	})
}
