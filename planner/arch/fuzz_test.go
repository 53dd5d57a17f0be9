package arch

import (
	"strings"
	"testing"
)

// FuzzParse: any input is either refused with an error that names a field
// or the config, or parsed into an architecture whose counts are
// positive and consistent (nothing overflows, the active parameters are
// part of the total, every token takes some KV cache).
func FuzzParse(f *testing.F) {
	for _, p := range Catalog() {
		b, _ := catalogFiles.ReadFile("catalog/" + strings.Replace(p.ID, "/", "--", 1) + ".json")
		f.Add(b)
	}
	f.Add([]byte(`{"model_type":"qwen3","num_hidden_layers":1,"hidden_size":1,"num_attention_heads":1,"vocab_size":1,"intermediate_size":1}`))
	f.Add([]byte(`{"model_type":"gemma3","text_config":{},"vision_config":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, `"`) && !strings.HasPrefix(msg, "the config") {
				t.Fatalf("error does not name a field: %v", err)
			}
			return
		}
		n := c.Count()
		for _, v := range []int64{n.Embedding, n.LMHead, n.Attention, n.DenseMLP, n.Norms, n.RoutedExperts, n.ActiveExperts, n.SharedExperts, n.Routers, n.Vision} {
			if v < 0 {
				t.Fatalf("negative part in %+v", n)
			}
		}
		if n.Active <= 0 || n.Active > n.Total || n.ActiveExperts > n.RoutedExperts {
			t.Fatalf("inconsistent counts %+v", n)
		}
		if c.KVElementsPerTokenLayer() <= 0 || c.KVElementsPerToken() <= 0 {
			t.Fatalf("no KV cache: %+v", c)
		}
		if c.SlidingLayers > c.Layers || (c.MoE != nil && c.MoE.Layers > c.Layers) {
			t.Fatalf("more special layers than layers: %+v", c)
		}
		if c.Describe() == "" {
			t.Fatal("empty description")
		}
	})
}
