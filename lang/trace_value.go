package lang

import "github.com/zclconf/go-cty/cty"

// TracePercentiles summarises one distribution of a workload profile.
type TracePercentiles struct {
	P50, P90, P95, P99 float64
	Samples            int
	// Quantiles is the profile's finer sketch of the distribution (nil
	// when it has only the four percentiles).
	Quantiles []QuantilePoint
}

// QuantilePoint is the value V below which fraction Q of a distribution's
// samples fall.
type QuantilePoint struct {
	Q, V float64
}

// TraceShape is a workload shape derived from a trace profile.
type TraceShape struct {
	InputTokens, OutputTokens, Concurrency, Requests int
}

// TraceProfile is what a profiled trace exposes to expressions, e.g.
// trace.chutes.input_tokens.p50 or trace.chutes.shapes.interactive.requests.
type TraceProfile struct {
	InputTokens, OutputTokens, CachedTokens TracePercentiles
	TTFTMs, DurationMs, CacheHitFraction    TracePercentiles
	// Shapes are keyed by name: interactive, long_prefill, decode_heavy.
	Shapes map[string]TraceShape
}

// Value converts the profile to the value layout expressions see: an
// object with input_tokens, output_tokens, cached_tokens, ttft_ms,
// duration_ms and cache_hit_fraction (each {p50, p90, p95, p99, samples},
// and quantiles, a list of {q, v}, when the profile sketches it finer)
// and shapes (an object of {input_tokens, output_tokens, concurrency,
// requests}). Options.Traces carries it into Load.
func (p TraceProfile) Value() cty.Value {
	dist := func(d TracePercentiles) cty.Value {
		attrs := map[string]cty.Value{
			"p50": cty.NumberFloatVal(d.P50), "p90": cty.NumberFloatVal(d.P90),
			"p95": cty.NumberFloatVal(d.P95), "p99": cty.NumberFloatVal(d.P99),
			"samples": cty.NumberIntVal(int64(d.Samples)),
		}
		if len(d.Quantiles) > 0 {
			qs := make([]cty.Value, len(d.Quantiles))
			for i, q := range d.Quantiles {
				qs[i] = cty.ObjectVal(map[string]cty.Value{"q": cty.NumberFloatVal(q.Q), "v": cty.NumberFloatVal(q.V)})
			}
			attrs["quantiles"] = cty.ListVal(qs)
		}
		return cty.ObjectVal(attrs)
	}
	shapes := map[string]cty.Value{}
	for name, s := range p.Shapes {
		shapes[name] = cty.ObjectVal(map[string]cty.Value{
			"input_tokens": cty.NumberIntVal(int64(s.InputTokens)), "output_tokens": cty.NumberIntVal(int64(s.OutputTokens)),
			"concurrency": cty.NumberIntVal(int64(s.Concurrency)), "requests": cty.NumberIntVal(int64(s.Requests)),
		})
	}
	return cty.ObjectVal(map[string]cty.Value{
		"input_tokens": dist(p.InputTokens), "output_tokens": dist(p.OutputTokens),
		"cached_tokens": dist(p.CachedTokens), "ttft_ms": dist(p.TTFTMs),
		"duration_ms": dist(p.DurationMs), "cache_hit_fraction": dist(p.CacheHitFraction),
		"shapes": cty.ObjectVal(shapes),
	})
}
