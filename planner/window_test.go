package planner

import (
	"github.com/infercrane/infercrane/lang/shape"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang"
)

// TestSlidingWindowMemoryCheck: gemma-3-12b-it keeps only 1,024 tokens in
// 40 of its 48 layers (vLLM's V1 KV cache manager frees a sliding-window
// layer's blocks before the window), so eight requests of 16,000 + 384
// tokens fit an L40S's KV cache beside the weights. The memory check
// counted every token in every layer and warned that the cache held 2 of
// the 8; it now warns only where the engine keeps every token
// (--disable-hybrid-kv-cache-manager), and the Deployments section says
// which.
func TestSlidingWindowMemoryCheck(t *testing.T) {
	plan := func(args ...string) *Plan {
		cfg := fixture()
		cfg.Models = map[string]*lang.Model{"gemma": {Name: "gemma", ID: "google/gemma-3-12b-it", MaxContext: 32768}}
		cfg.Shapes = map[string]*lang.Shape{"long": {Name: "long", Settings: shape.Settings{InputTokens: 16000, OutputTokens: 384, TemplateHeadroom: 512, Concurrency: 8, Requests: 16, Streaming: true, API: "chat"}}}
		s := cfg.Screens["qwen_l40s"]
		s.Models, s.Shapes, s.Baseline = []string{"gemma"}, []string{"long"}, ""
		cfg.Runtimes["vllm"].RuntimeArgs = append([]string{"--max-model-len", "32768"}, args...)
		return build(t, cfg)
	}
	warned := func(p *Plan) string {
		for _, f := range p.Preflight {
			if strings.Contains(f.Summary, "KV cache holds") {
				return f.Summary
			}
		}
		return ""
	}
	windowed, full := plan(), plan("--disable-hybrid-kv-cache-manager")
	if w := warned(windowed); w != "" {
		t.Errorf("gemma-3-12b-it keeps 40 of 48 layers to their window, yet: %s", w)
	}
	if w := warned(full); !strings.Contains(w, "of 8 concurrent requests") {
		t.Errorf("with every token in every layer the cache must fall short of 8 requests: %q", w)
	}
	var text strings.Builder
	if err := WriteText(&text, windowed); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "40 of 48 layers keep only their 1,024-token sliding window") {
		t.Errorf("the Deployments section does not explain the window:\n%s", text.String())
	}
	if l := windowed.Lanes[0]; l.Estimate.TPOTMs <= 0 || l.Perf.Engine.SlidingWindow != 1024 {
		t.Errorf("lane: estimate %v, engine %+v", l.Estimate, l.Perf.Engine)
	}
}
