package perf

import (
	"math"
	"testing"

	"github.com/infercrane/infercrane/lang/engine"
)

// TestSlidingWindowLayersKeepOnlyTheirWindow: vLLM's V1 KV cache manager
// keeps a sliding-window layer's last window of tokens only
// (vllm/v1/kv_cache_interface.py, SlidingWindowSpec; docs/design
// hybrid_kv_cache_manager), so gemma-3-12b-it, 40 of whose 48 layers
// attend within 1,024 tokens, holds a 32k-token request in about a fifth
// of the blocks a full-length count gives, and its KV cache runs about
// five times the long requests at once. Before, every layer counted
// every token. Under --disable-hybrid-kv-cache-manager and before 0.8
// (V0) the full length stays.
func TestSlidingWindowLayersKeepOnlyTheirWindow(t *testing.T) {
	m, _ := LookupModel("google/gemma-3-12b-it")
	if m.SlidingWindow != 1024 || m.SlidingLayers != 40 || m.Layers != 48 {
		t.Fatalf("gemma-3-12b-it: window %d over %d of %d layers; want 1024 over 40 of 48", m.SlidingWindow, m.SlidingLayers, m.Layers)
	}
	g, _ := LookupGPU("H100")
	h := Hardware{GPU: g, Count: 1, BytesPerElem: 2, Assume: DefaultAssumptions(g)}
	lane := func(args ...string) Lane {
		t.Helper()
		rs, err := ResolveRuntime(engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: "0.11.0", RuntimeArgs: args}, g, 1, 32768)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewLane(m, h, rs.Engine(), 32768)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	windowed, full := lane(), lane("--disable-hybrid-kv-cache-manager")
	if e := windowed.Engine; e.SlidingWindow != 1024 || e.SlidingLayers != 40 || e.KVLayers != 48 {
		t.Fatalf("the engine does not keep the window: %+v", e)
	}
	if full.Engine.SlidingWindow != 0 || full.Engine.KVTokens(32768) != 32768 {
		t.Fatalf("--disable-hybrid-kv-cache-manager must count every token: %+v", full.Engine)
	}
	// A request of n tokens: 8 full layers hold n, 40 hold 1,024.
	const n = 32768
	want := (8*n + 40*1024) / 48.0
	if got := windowed.Engine.KVTokens(n); math.Abs(got-want) > 1e-9 {
		t.Fatalf("KVTokens(%d) = %.2f, want %.2f", n, got, want)
	}
	if got := windowed.Engine.KVTokens(1000); got != 1000 {
		t.Errorf("a request inside the window holds every token: %v", got)
	}
	// The scheduler runs as many 32k requests at once as their windowed
	// blocks fit: about 48/(8 + 40 x 1,024/32,768) = 5.1 times as many.
	running := func(s Lane) int {
		sc := NewScheduler(s.Engine)
		for range 200 {
			sc.Add(&Seq{Prompt: n - 200, Output: 200})
		}
		var st Step
		most := 0
		for range 5000 {
			sc.Schedule(&st)
			if len(st.Seqs) == 0 {
				break
			}
			sc.Complete(&st, nil)
			most = max(most, sc.Running())
		}
		return most
	}
	fits := func(e EngineConfig) int { return e.KVBlocks / NewScheduler(e).blocksFor(n) }
	wr, fr := running(windowed), running(full)
	// (Running counts a request whose first chunk is in, so it may pass
	// what fits whole by one.)
	if wr < fits(windowed.Engine) || fr < fits(full.Engine) || fr > fits(full.Engine)+1 || wr < 4*fr {
		t.Errorf("ran %d (windowed) and %d (full) at once; the cache holds %d and %d whole", wr, fr, fits(windowed.Engine), fits(full.Engine))
	}
	perSeq := func(e EngineConfig) float64 { return float64(NewScheduler(e).blocksFor(n)) }
	if r := perSeq(full.Engine) / perSeq(windowed.Engine); r < 5 || r > 5.2 {
		t.Errorf("a 32k request holds %.2f times fewer blocks under the window, want about 5.1", r)
	}
	// V0 counts every token.
	rs, _ := ResolveRuntime(engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: "0.6.0"}, g, 1, 32768)
	if v0, err := NewLane(m, h, rs.Engine(), 32768); err != nil || v0.Engine.SlidingWindow != 0 {
		t.Errorf("vLLM 0.6.0: %v, %+v", err, v0.Engine)
	}
}

// TestSkippingDecodesEqualsSteppingAcrossTheWindow: the decode shortcut
// stops where a request reaches its window (the KV it reads then grows
// by the full layers' share only), so skipping equals stepping for a
// sliding-window model whose requests cross the window while decoding.
func TestSkippingDecodesEqualsSteppingAcrossTheWindow(t *testing.T) {
	m, _ := LookupModel("google/gemma-3-1b-it")
	m.SlidingWindow = 256 // cross it within the test's few hundred tokens
	s, err := NewLane(m, hw("L40S", 1), EngineConfig{MaxNumSeqs: 16, MaxBatchedTokens: 512, ChunkedPrefill: true}, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if s.Engine.SlidingWindow != 256 {
		t.Fatalf("engine %+v", s.Engine)
	}
	checkSkipping(t, s, []Load{
		{InputTokens: 200, OutputTokens: 300, Concurrency: 12, Requests: 24, RampUpMs: 50},
		{InputTokens: 100, OutputTokens: 400, Concurrency: 6, RequestRate: 30, Requests: 20, Seed: 2},
	})
}
