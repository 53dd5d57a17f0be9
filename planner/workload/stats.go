package workload

import (
	"sort"
	"strings"
	"time"
)

// MaxFunctions is how many function_name values a profile lists before
// folding the rest into "(other)".
const MaxFunctions = 10

// funcAgg is one function_name's request and token totals.
type funcAgg struct {
	requests, inN, outN int64
	inSum, outSum       int64 // exact, so merge order never changes a mean
}

// groupStats is what one row group (or the merge of several) contributes.
type groupStats struct {
	rows                                         int64
	input, output, cached, ttft, duration, ratio quantileSink
	arrival                                      *arrivalStats
	funcs                                        map[string]*funcAgg
}

func newGroupStats(newSink func() quantileSink) *groupStats {
	return &groupStats{
		input: newSink(), output: newSink(), cached: newSink(), ttft: newSink(), duration: newSink(), ratio: newSink(),
		arrival: newArrivalStats(newSink), funcs: map[string]*funcAgg{},
	}
}

func (g *groupStats) merge(o *groupStats) {
	g.rows += o.rows
	g.input.Merge(o.input)
	g.output.Merge(o.output)
	g.cached.Merge(o.cached)
	g.ttft.Merge(o.ttft)
	g.duration.Merge(o.duration)
	g.ratio.Merge(o.ratio)
	g.arrival.merge(o.arrival)
	for name, f := range o.funcs {
		a := g.funcs[name]
		if a == nil {
			a = &funcAgg{}
			g.funcs[name] = a
		}
		a.requests += f.requests
		a.inN += f.inN
		a.outN += f.outN
		a.inSum += f.inSum
		a.outSum += f.outSum
	}
}

func (g *groupStats) fn(name string) *funcAgg {
	a := g.funcs[name]
	if a == nil {
		a = &funcAgg{}
		g.funcs[strings.Clone(name)] = a
	}
	return a
}

// distribution summarises a sink: its percentiles and, with grid, its
// quantiles at QuantileGrid.
func distribution(unit string, s quantileSink, grid bool) Distribution {
	d := Distribution{Unit: unit, Samples: int(s.Count()), Percentiles: s.Percentiles()}
	if grid && s.Count() > 0 {
		for _, q := range QuantileGrid {
			d.Quantiles = append(d.Quantiles, Quantile{Q: q, V: s.Quantile(q)})
		}
	}
	return d
}

// distributions summarises every quantity (with grid, sketched at
// QuantileGrid).
func (g *groupStats) distributions(grid bool) Distributions {
	return Distributions{
		InputTokens:      distribution("tokens", g.input, grid),
		OutputTokens:     distribution("tokens", g.output, grid),
		CachedTokens:     distribution("tokens", g.cached, grid),
		TTFTMs:           distribution("milliseconds", g.ttft, grid),
		DurationMs:       distribution("milliseconds", g.duration, grid),
		CacheHitFraction: distribution("ratio", g.ratio, grid),
	}
}

func (g *groupStats) traffic(withFunctions bool) *Traffic {
	a := g.arrival
	t := &Traffic{
		PerSecond:           rateWindows(a.perSecond, a.secCount, a.secWindows, 1),
		PerMinute:           rateWindows(a.perMinute, a.minCount, a.minWindows, 60),
		InterarrivalCV:      a.cv(),
		InterarrivalSamples: a.gaps,
	}
	if len(a.curve) > 0 {
		c := &ArrivalCurve{WindowSeconds: 60, Start: time.Unix(a.curveStart*60, 0).UTC().Format(time.RFC3339), Rates: make([]float64, len(a.curve))}
		for i, n := range a.curve {
			c.Rates[i] = float64(n) / 60
		}
		t.ArrivalCurve = c
	}
	if withFunctions && g.rows > 0 {
		t.Functions = functionShares(g.funcs, g.rows)
	}
	return t
}

func functionShares(funcs map[string]*funcAgg, rows int64) []FunctionShare {
	names := make([]string, 0, len(funcs))
	for n := range funcs {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := funcs[names[i]], funcs[names[j]]
		if a.requests != b.requests {
			return a.requests > b.requests
		}
		return names[i] < names[j]
	})
	share := func(name string, f *funcAgg) FunctionShare {
		s := FunctionShare{Name: name, Requests: f.requests, Share: float64(f.requests) / float64(rows)}
		if f.inN > 0 {
			s.InputTokensMean = float64(f.inSum) / float64(f.inN)
		}
		if f.outN > 0 {
			s.OutputTokensMean = float64(f.outSum) / float64(f.outN)
		}
		return s
	}
	var out []FunctionShare
	other := &funcAgg{}
	for i, n := range names {
		f := funcs[n]
		if i < MaxFunctions {
			out = append(out, share(n, f))
			continue
		}
		other.requests += f.requests
		other.inN += f.inN
		other.outN += f.outN
		other.inSum += f.inSum
		other.outSum += f.outSum
	}
	if other.requests > 0 {
		out = append(out, share("(other)", other))
	}
	return out
}
