// Package load describes the requests a lane sends, as a pure function of a
// seed: per-request prompt and output lengths drawn from distributions,
// prompts that share prefixes, and multi-turn sessions. The load generator
// sends exactly this sequence on every executor, and the planner reads the
// same sequence for its preflight and estimates, so a plan and a run agree
// on what was asked for.
package load

import (
	"fmt"
	"math"
	"sort"
)

// Distribution kinds.
const (
	// KindEmpirical interpolates between measured quantiles (a workload
	// profile's p50/p90/p95/p99), with lognormal tails beyond them.
	KindEmpirical = "empirical"
	// KindLognormal is a lognormal distribution given by its median and the
	// standard deviation of its logarithm.
	KindLognormal = "lognormal"
)

// Point is one quantile of a distribution: the value below which fraction
// Q of the draws fall.
type Point struct {
	Q float64 `json:"q"`
	V float64 `json:"v"`
}

// Dist is a distribution of a per-request quantity: a token count, or a
// fraction in [0, 1] when Fraction is set.
type Dist struct {
	Kind string `json:"kind"`
	// Points are the quantiles of an empirical distribution, Q strictly
	// increasing in (0, 1), V non-decreasing and positive.
	Points []Point `json:"points,omitempty"`
	// Median and Sigma define a lognormal distribution.
	Median float64 `json:"median,omitempty"`
	Sigma  float64 `json:"sigma,omitempty"`
	// Fraction marks a distribution of fractions: values are clamped to
	// [0, 1] and empirical quantiles are interpolated linearly, with 0 at
	// Q = 0 and 1 at Q = 1.
	Fraction bool `json:"fraction,omitempty"`
}

// FromPercentiles returns the empirical distribution through a profile's
// nearest-rank p50, p90, p95 and p99.
func FromPercentiles(p50, p90, p95, p99 float64, fraction bool) Dist {
	return Dist{Kind: KindEmpirical, Fraction: fraction, Points: []Point{
		{0.5, p50}, {0.9, p90}, {0.95, p95}, {0.99, p99}}}
}

// Lognormal returns the lognormal distribution with the given median whose
// p95 is p95 (sigma = ln(p95/median) / z(0.95)).
func Lognormal(median, p95 float64) Dist {
	return Dist{Kind: KindLognormal, Median: median, Sigma: math.Log(p95/median) / normalQuantile(0.95)}
}

// Validate reports what makes d unusable, in words that say what to change.
func (d Dist) Validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch d.Kind {
	case KindLognormal:
		if d.Fraction {
			return fmt.Errorf("a lognormal distribution cannot describe a fraction; use percentiles")
		}
		if !(d.Median >= 1) || !finite(d.Median) {
			return fmt.Errorf("lognormal median %g must be a finite number of at least 1", d.Median)
		}
		if !(d.Sigma >= 0) || !finite(d.Sigma) || d.Sigma > 10 {
			return fmt.Errorf("lognormal sigma %g must be between 0 and 10 (give a p95 at or above the median)", d.Sigma)
		}
	case KindEmpirical:
		if len(d.Points) == 0 {
			return fmt.Errorf("an empirical distribution needs at least one percentile")
		}
		for i, p := range d.Points {
			if !(p.Q > 0 && p.Q < 1) || !finite(p.V) || p.V < 0 {
				return fmt.Errorf("percentile %d (q %g, value %g) must have 0 < q < 1 and a finite value of 0 or more", i+1, p.Q, p.V)
			}
			if !d.Fraction && p.V < 1 {
				return fmt.Errorf("token percentile q%g is %g; token counts must be at least 1", p.Q*100, p.V)
			}
			if d.Fraction && p.V > 1 {
				return fmt.Errorf("fraction percentile q%g is %g; fractions must be between 0 and 1", p.Q*100, p.V)
			}
			if i > 0 && (p.Q <= d.Points[i-1].Q || p.V < d.Points[i-1].V) {
				return fmt.Errorf("percentiles must increase: q%g = %g follows q%g = %g", p.Q*100, p.V, d.Points[i-1].Q*100, d.Points[i-1].V)
			}
		}
	default:
		return fmt.Errorf("distribution kind %q is not known; use %q or %q", d.Kind, KindEmpirical, KindLognormal)
	}
	return nil
}

// Quantile returns the value below which fraction u of the draws fall.
// Token distributions return values of at least 1; fractions stay in [0, 1].
func (d Dist) Quantile(u float64) float64 {
	u = math.Min(math.Max(u, 1e-12), 1-1e-12)
	var v float64
	switch d.Kind {
	case KindLognormal:
		v = d.Median * math.Exp(d.Sigma*normalQuantile(u))
	case KindEmpirical:
		if d.Fraction {
			v = d.fractionQuantile(u)
		} else {
			v = d.tokenQuantile(u)
		}
	}
	if d.Fraction {
		return math.Min(math.Max(v, 0), 1)
	}
	return math.Max(v, 1)
}

// tokenQuantile interpolates log-linearly in the normal score between the
// measured quantiles (exact at each of them) and extends the first and last
// segments as lognormal tails.
func (d Dist) tokenQuantile(u float64) float64 {
	p := d.Points
	if len(p) == 1 {
		return p[0].V
	}
	z := normalQuantile(u)
	i := sort.Search(len(p), func(i int) bool { return p[i].Q >= u })
	switch {
	case i == 0:
		i = 1
	case i == len(p):
		i = len(p) - 1
	}
	a, b := p[i-1], p[i]
	za, zb := normalQuantile(a.Q), normalQuantile(b.Q)
	la, lb := math.Log(math.Max(a.V, 1e-9)), math.Log(math.Max(b.V, 1e-9))
	return math.Exp(la + (lb-la)*(z-za)/(zb-za))
}

// fractionQuantile interpolates linearly through (0, 0), the measured
// quantiles and (1, 1).
func (d Dist) fractionQuantile(u float64) float64 {
	prev := Point{0, 0}
	for _, p := range d.Points {
		if u <= p.Q {
			return prev.V + (p.V-prev.V)*(u-prev.Q)/(p.Q-prev.Q)
		}
		prev = p
	}
	return prev.V + (1-prev.V)*(u-prev.Q)/(1-prev.Q)
}

// normalQuantile is the standard normal distribution's inverse CDF.
func normalQuantile(u float64) float64 { return math.Sqrt2 * math.Erfinv(2*u-1) }

// NearestRank is a workload profile's percentile rule, sorted[ceil(q*n)-1]
// (clamped), over an ascending slice; 0 for an empty one.
func NearestRank(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
