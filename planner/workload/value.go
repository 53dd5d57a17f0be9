package workload

import (
	"github.com/infercrane/infercrane/lang"
	"github.com/zclconf/go-cty/cty"
)

// TraceProfile converts a document to what specs see as trace.NAME.
func TraceProfile(doc Document) lang.TraceProfile {
	pct := func(d Distribution) lang.TracePercentiles {
		p := d.Percentiles
		tp := lang.TracePercentiles{P50: p.P50, P90: p.P90, P95: p.P95, P99: p.P99, Samples: d.Samples}
		for _, q := range d.Quantiles {
			tp.Quantiles = append(tp.Quantiles, lang.QuantilePoint{Q: q.Q, V: q.V})
		}
		return tp
	}
	d := doc.Distributions
	tp := lang.TraceProfile{
		InputTokens: pct(d.InputTokens), OutputTokens: pct(d.OutputTokens), CachedTokens: pct(d.CachedTokens),
		TTFTMs: pct(d.TTFTMs), DurationMs: pct(d.DurationMs), CacheHitFraction: pct(d.CacheHitFraction),
		Shapes: map[string]lang.TraceShape{},
	}
	for _, s := range doc.Profiles {
		tp.Shapes[ShapeKey(s.Name)] = lang.TraceShape{InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, Concurrency: s.Concurrency, Requests: s.Requests}
	}
	return tp
}

// Value is the trace value specs see: lang.TraceProfile's layout, plus
// (when the profile has traffic figures) arrival_per_second and
// arrival_per_minute ({windows, mean, p50, p99}, requests/s) and
// interarrival_cv.
func Value(doc Document) cty.Value {
	base := TraceProfile(doc).Value()
	if doc.Traffic == nil {
		return base
	}
	attrs := base.AsValueMap()
	rates := func(r RateWindows) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{
			"windows": cty.NumberIntVal(r.Windows), "mean": cty.NumberFloatVal(r.Mean),
			"p50": cty.NumberFloatVal(r.P50), "p99": cty.NumberFloatVal(r.P99),
		})
	}
	attrs["arrival_per_second"] = rates(doc.Traffic.PerSecond)
	attrs["arrival_per_minute"] = rates(doc.Traffic.PerMinute)
	attrs["interarrival_cv"] = cty.NumberFloatVal(doc.Traffic.InterarrivalCV)
	if c := doc.Traffic.ArrivalCurve; c != nil {
		rates := make([]cty.Value, len(c.Rates))
		for i, r := range c.Rates {
			rates[i] = cty.NumberFloatVal(r)
		}
		attrs["arrival_curve"] = cty.ObjectVal(map[string]cty.Value{
			"window_seconds": cty.NumberIntVal(int64(c.WindowSeconds)), "rates": cty.ListVal(rates),
		})
	}
	return cty.ObjectVal(attrs)
}
