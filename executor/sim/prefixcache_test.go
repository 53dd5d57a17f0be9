package sim_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
	"github.com/infercrane/infercrane/planner/load"
)

func serve(t *testing.T, o sim.Options) string {
	t.Helper()
	e, err := sim.NewEngine(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	t.Cleanup(func() { e.Close(); srv.CloseClientConnections(); srv.Close() })
	return srv.URL
}

func counters(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return loadgen.ParseMetrics(io.Reader(resp.Body))
}

// With prefix caching on, the engine serves exactly the whole blocks a
// prefix-reuse or session shape intends (its rule is the workload's), says
// so in usage.prompt_tokens_details and counts it on /metrics as vLLM does.
func TestPrefixCacheServesIntendedBlocks(t *testing.T) {
	for _, c := range []struct {
		name string
		w    load.Spec
	}{
		{"prefix groups", load.Spec{Prefix: &load.Prefix{Groups: 3, SharedTokens: 300}}},
		{"hit ratio", load.Spec{Prefix: &load.Prefix{Groups: 2, HitRatio: ptr(load.FromPercentiles(0.018, 0.994, 0.999, 1, true))}}},
		{"sessions", load.Spec{Session: &load.Session{Turns: 4}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := serve(t, sim.Options{PrefixCaching: true, PromptTokensDetails: true})
			cfg := loadgen.Config{BaseURL: url, Model: "sim", API: "chat", Streaming: true,
				InputTokens: 512, OutputTokens: 24, Concurrency: 1, Requests: 40, Seed: 3, Workload: &c.w}
			res, err := loadgen.Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			var cached, prompt int
			for _, r := range res.Records {
				if r.CachedTokens == nil {
					t.Fatalf("record %d has no cached_tokens", r.Index)
				}
				cached += *r.CachedTokens
				prompt += r.PromptTokens
			}
			intended := load.Summarize(nil, c.w.Sequence(3, 40, 512, 24), 16)
			m := counters(t, url)
			t.Logf("cached %d of %d prompt tokens; intended %d of %d", cached, prompt, intended.CachedTokens, intended.PromptTokens)
			if c.w.Session == nil && int64(cached) != intended.CachedTokens {
				t.Errorf("the engine served %d cached tokens, the shape intends %d", cached, intended.CachedTokens)
			}
			if got, want := float64(cached)/float64(prompt), intended.HitRatio(); got < want-0.02 || got > want+0.02 {
				t.Errorf("hit ratio %.3f, intended %.3f", got, want)
			}
			if m["vllm:prefix_cache_hits_total"] != float64(cached) || m["vllm:prefix_cache_queries_total"] != float64(prompt) {
				t.Errorf("/metrics counts %v hits of %v queries, usage %d of %d", m["vllm:prefix_cache_hits_total"], m["vllm:prefix_cache_queries_total"], cached, prompt)
			}
		})
	}
}

// Off (the default), nothing is cached and the details stay null.
func TestPrefixCacheOff(t *testing.T) {
	url := serve(t, sim.Options{})
	cfg := loadgen.Config{BaseURL: url, Model: "sim", API: "chat", Streaming: true,
		InputTokens: 256, OutputTokens: 4, Concurrency: 1, Requests: 8, Seed: 1,
		Workload: &load.Spec{Prefix: &load.Prefix{Groups: 1, SharedTokens: 200}}}
	res, err := loadgen.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Records {
		if r.CachedTokens != nil {
			t.Fatalf("record %d reports %d cached tokens from an engine without prompt token details", r.Index, *r.CachedTokens)
		}
	}
	if m := counters(t, url); m["vllm:prefix_cache_hits_total"] != 0 {
		t.Errorf("hits %v with prefix caching off", m["vllm:prefix_cache_hits_total"])
	}
}

// A bounded cache evicts the least recently used blocks.
func TestPrefixCacheEvicts(t *testing.T) {
	url := serve(t, sim.Options{PrefixCaching: true, PromptTokensDetails: true, PrefixCacheBlocks: 20})
	// 8 groups of 256 shared tokens need 8 x 16 blocks; 20 hold barely one group.
	cfg := loadgen.Config{BaseURL: url, Model: "sim", API: "chat", Streaming: true,
		InputTokens: 300, OutputTokens: 4, Concurrency: 1, Requests: 64, Seed: 2,
		Workload: &load.Spec{Prefix: &load.Prefix{Groups: 8, SharedTokens: 256}}}
	res, err := loadgen.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cached := 0
	for _, r := range res.Records {
		cached += *r.CachedTokens
	}
	unbounded := load.Summarize(nil, cfg.Workload.Sequence(2, 64, 300, 4), 16).CachedTokens
	if int64(cached) >= unbounded/2 {
		t.Errorf("a 20-block cache served %d tokens; an unbounded one would serve %d", cached, unbounded)
	}
}

func ptr[T any](v T) *T { return &v }
