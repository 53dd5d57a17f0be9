//go:build integration

package main

import (
	"context"
	"math"
	"net/http"
	"testing"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/affinity"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner/load"
)

// prefixCounters reads vLLM's prefix-cache counters (tokens queried and
// hit since the server started).
func prefixCounters(t *testing.T, url string) (queries, hits float64) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := executor.ParseMetrics(resp.Body)
	q, ok := m["vllm:prefix_cache_queries_total"]
	if !ok {
		t.Fatalf("vLLM's /metrics has no vllm:prefix_cache_queries_total; names seen: %d", len(m))
	}
	return q, m["vllm:prefix_cache_hits_total"]
}

// TestIntegrationPrefixReuse sends a prefix-reuse shape to real vLLM with
// prefix caching on: the hit ratio vLLM counts is within 10 percentage
// points of the one the shape intends, vLLM's usage reports the cached
// tokens, and TTFT is lower than for the same shape without reuse.
func TestIntegrationPrefixReuse(t *testing.T) {
	venv, model := integrationEnv(t)
	url := startVLLM(t, venv, model, "--enable-prefix-caching", "--enable-prompt-tokens-details")
	base := loadgen.Config{BaseURL: url, Model: tinyModelName, API: "chat", Streaming: true,
		InputTokens: 768, OutputTokens: 4, Concurrency: 1, Requests: 24, Seed: 5}
	reuse := base
	reuse.Workload = &load.Spec{Prefix: &load.Prefix{Groups: 2, SharedTokens: 640}, Window: 1024, BlockSize: 16}
	fresh := base
	fresh.Seed = 6

	run := func(cfg loadgen.Config) (*loadgen.Result, float64) {
		q0, h0 := prefixCounters(t, url)
		res, err := loadgen.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Failed != 0 {
			t.Fatalf("%d requests failed: %v", res.Summary.Failed, res.Summary.Failures)
		}
		q1, h1 := prefixCounters(t, url)
		return res, (h1 - h0) / (q1 - q0)
	}
	// One unmeasured request first, so neither run pays vLLM's first-request costs.
	warm := base
	warm.Requests, warm.Seed = 1, 99
	run(warm)

	starved := affinity.Starved()
	freshRes, freshHit := run(fresh)
	reuseRes, achieved := run(reuse)
	stalled := starved()
	busy := stalled > 0.10
	intended := load.Summarize(nil, reuse.Workload.Sequence(reuse.Seed, reuse.Requests, 768, 4), 16).HitRatio()
	t.Logf("intended hit ratio %.3f, vLLM counted %.3f (fresh prompts: %.3f); TTFT p50 %.1f ms with reuse, %.1f ms without",
		intended, achieved, freshHit, reuseRes.Summary.TTFTMs.P50, freshRes.Summary.TTFTMs.P50)
	if math.Abs(achieved-intended) > 0.10 {
		t.Errorf("vLLM's hit ratio %.3f is more than 10 points from the intended %.3f", achieved, intended)
	}
	if freshHit > 0.05 {
		t.Errorf("prompts that share nothing hit vLLM's cache at %.3f", freshHit)
	}
	var cached, prompt int
	for _, r := range reuseRes.Records {
		if r.CachedTokens == nil {
			t.Fatalf("record %d has no cached_tokens although vLLM runs with --enable-prompt-tokens-details", r.Index)
		}
		cached += *r.CachedTokens
		prompt += r.PromptTokens
	}
	if usage := float64(cached) / float64(prompt); math.Abs(usage-achieved) > 0.02 {
		t.Errorf("usage says %.3f of prompt tokens were cached, /metrics %.3f", usage, achieved)
	}
	if reuseRes.Summary.TTFTMs.P50 >= freshRes.Summary.TTFTMs.P50 {
		// On a quiet machine reuse saves ~10 ms of 25 (16 vs 25.5 ms p50
		// over three alternating rounds); with other load the runs' CPU
		// waits swamp it. The hit ratio and cached tokens above still count.
		if busy {
			t.Skipf("TTFT p50 with reuse %.1f ms is not below %.1f ms without, but tasks on this machine waited for a CPU %.0f%% of the time during the runs (/proc/pressure/cpu): too busy for a timing comparison; rerun on a quiet machine",
				reuseRes.Summary.TTFTMs.P50, freshRes.Summary.TTFTMs.P50, 100*stalled)
		}
		t.Errorf("TTFT p50 with reuse %.1f ms is not below %.1f ms without", reuseRes.Summary.TTFTMs.P50, freshRes.Summary.TTFTMs.P50)
	}
}
