package workload

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// A profile made with Quantiles sketches every distribution at
// QuantileGrid, each value the nearest-rank quantile of the inspected rows
// (exact for a sample, within the sketch's error for a sketch), the four
// percentiles among them; without it the document is the same, quantiles
// left out.
func TestBuildQuantiles(t *testing.T) {
	path := synthTrace(t, smallTrace)
	fixed := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	o := Options{Source: path, RowGroups: 3, RowsPerGroup: 2000, MaxContext: 8192, Now: func() time.Time { return fixed }}
	plain, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	o.Quantiles = true
	res, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	doc := res.Document
	if probs := Validate(doc); len(probs) > 0 {
		t.Fatalf("profile with quantiles does not validate: %v", probs)
	}
	ref := computeReference(t, path, []int{1, 6, 10}, 2000)
	d := doc.Distributions
	for _, c := range []struct {
		name   string
		got    Distribution
		values []float64
	}{{"input_tokens", d.InputTokens, ref.in}, {"output_tokens", d.OutputTokens, ref.out}, {"cache_hit_fraction", d.CacheHitFraction, ref.frac}, {"ttft_ms", d.TTFTMs, ref.ttft}} {
		if len(c.got.Quantiles) != len(QuantileGrid) {
			t.Fatalf("%s: %d quantiles, want %d", c.name, len(c.got.Quantiles), len(QuantileGrid))
		}
		for i, q := range c.got.Quantiles {
			if q.Q != QuantileGrid[i] || q.V != refPercentile(c.values, q.Q) {
				t.Errorf("%s quantile %d = %+v, want q %g v %g", c.name, i, q, QuantileGrid[i], refPercentile(c.values, q.Q))
			}
		}
	}
	// The rest is the plain profile's.
	dd := &doc.Distributions
	for _, dist := range []*Distribution{&dd.InputTokens, &dd.OutputTokens, &dd.CachedTokens, &dd.TTFTMs, &dd.DurationMs, &dd.CacheHitFraction} {
		dist.Quantiles = nil
	}
	doc.Digest, plain.Document.Digest = "", ""
	a, _ := json.Marshal(doc)
	b, _ := json.Marshal(plain.Document)
	if string(a) != string(b) {
		t.Errorf("without its quantiles the profile differs from the plain one:\n%s\n%s", a, b)
	}
	// A sketch's quantiles are within its relative error.
	o.Sketch = true
	sk, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range sk.Document.Distributions.InputTokens.Quantiles {
		want := refPercentile(ref.in, QuantileGrid[i])
		if math.Abs(q.V-want) > SketchRelativeError*want {
			t.Errorf("sketch input quantile q%g = %g, want %g within %g", q.Q, q.V, want, SketchRelativeError)
		}
	}
}

// Quantiles out of order, outside (0, 1), decreasing or disagreeing with
// the percentiles are rejected with their path.
func TestValidateQuantiles(t *testing.T) {
	path := synthTrace(t, smallTrace)
	res, err := Build(context.Background(), Options{Source: path, RowGroups: 3, RowsPerGroup: 2000, Quantiles: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(qs []Quantile)
		want string
	}{
		{"order", func(qs []Quantile) { qs[1].Q, qs[2].Q = qs[2].Q, qs[1].Q }, "distributions.input_tokens.quantiles[2].q: 0.05 is not above"},
		{"range", func(qs []Quantile) { qs[0].Q = 0 }, "distributions.input_tokens.quantiles[0].q: 0 must be strictly between 0 and 1"},
		{"decrease", func(qs []Quantile) { qs[3].V = qs[2].V - 1 }, "distributions.input_tokens.quantiles[3].v"},
		{"percentile", func(qs []Quantile) { qs[4].V++ }, "disagrees with the percentile at 0.5"},
	} {
		doc := res.Document
		doc.Distributions.InputTokens.Quantiles = append([]Quantile(nil), doc.Distributions.InputTokens.Quantiles...)
		c.edit(doc.Distributions.InputTokens.Quantiles)
		probs := Validate(doc)
		joined := ""
		for _, p := range probs {
			joined += p.String() + "\n"
		}
		if !strings.Contains(joined, c.want) {
			t.Errorf("%s: problems %q, want one with %q", c.name, joined, c.want)
		}
	}
}
