package load

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Arrival patterns of open-loop runs.
const (
	ArrivalConstant = "constant"
	ArrivalPoisson  = "poisson"
	ArrivalGamma    = "gamma"
)

// Arrivals generates an open-loop schedule (the load generator sends at
// these times and the estimator simulates them): send offsets in nanoseconds from
// the start of the measured phase, the first at 0. Gaps are 1/rate
// (constant), exponential with mean 1/rate (poisson) or gamma with shape
// burstiness and mean 1/rate (gamma; burstiness 1 is Poisson, below 1
// burstier, above 1 smoother). The sequence is a pure function of the seed.
type Arrivals struct {
	rate       float64
	kind       string
	burstiness float64
	rng        *rand.Rand
	t          float64 // seconds
	n          int
	// curve is a time-varying rate (nil: constant): see Modulate.
	curve *curve
}

// curve is a piecewise-constant rate multiplier: weight w[k] (mean 1) for
// step k of step seconds, repeated when the run outlasts it.
type curve struct {
	w    []float64
	step float64
	// cum[k] is the integral of the multiplier over steps 0..k-1 (seconds
	// of mean-rate time); cum[len(w)] is one cycle.
	cum []float64
}

// Modulate makes the schedule follow a time-varying rate: the request rate
// times weights[k] / mean(weights) during step k of stepSeconds, cycling.
// The arrival pattern's gaps are drawn as before in "mean-rate time" and
// mapped to real time through the curve's cumulative rate (time
// rescaling), so the mean rate over a whole cycle stays the request rate.
func (a *Arrivals) Modulate(weights []float64, stepSeconds float64) error {
	if len(weights) == 0 {
		return nil
	}
	if !(stepSeconds > 0) || math.IsInf(stepSeconds, 0) {
		return fmt.Errorf("arrival curve step %g s must be a positive number of seconds", stepSeconds)
	}
	sum := 0.0
	for i, w := range weights {
		if !(w >= 0) || math.IsInf(w, 0) {
			return fmt.Errorf("arrival curve rate %d is %g; rates must be finite and 0 or more", i+1, w)
		}
		sum += w
	}
	if sum == 0 {
		return fmt.Errorf("the arrival curve's rates are all 0; at least one must be positive")
	}
	mean := sum / float64(len(weights))
	c := &curve{w: make([]float64, len(weights)), step: stepSeconds, cum: make([]float64, len(weights)+1)}
	for i, w := range weights {
		c.w[i] = w / mean
		c.cum[i+1] = c.cum[i] + c.w[i]*stepSeconds
	}
	a.curve = c
	return nil
}

// real maps mean-rate time u (seconds) to real time through the curve.
func (c *curve) real(u float64) float64 {
	cycle := c.cum[len(c.w)]
	k := math.Floor(u / cycle)
	u -= k * cycle
	t := k * c.step * float64(len(c.w))
	for i, w := range c.w {
		if u < c.cum[i+1] && w > 0 {
			return t + float64(i)*c.step + (u-c.cum[i])/w
		}
	}
	return t + float64(len(c.w))*c.step
}

// NewArrivals returns the schedule of rate requests per second with the
// arrival pattern kind (default poisson), refusing what cannot run.
func NewArrivals(rate float64, kind string, burstiness float64, seed int64) (*Arrivals, error) {
	if kind == "" {
		kind = ArrivalPoisson
	}
	switch kind {
	case ArrivalConstant, ArrivalPoisson:
	case ArrivalGamma:
		if burstiness == 0 {
			burstiness = 1
		}
		if burstiness < 0 || math.IsNaN(burstiness) || math.IsInf(burstiness, 0) {
			return nil, fmt.Errorf("gamma burstiness %g must be a positive number (1 is Poisson)", burstiness)
		}
	default:
		return nil, fmt.Errorf("arrival %q is not known; use constant, poisson or gamma", kind)
	}
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("request rate %g must be a positive finite number of requests per second", rate)
	}
	return &Arrivals{rate: rate, kind: kind, burstiness: burstiness,
		rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed_a771_7a15))}, nil
}

// Next returns the scheduled offset of the next request.
func (a *Arrivals) Next() int64 {
	if a.n > 0 {
		switch a.kind {
		case ArrivalConstant:
			a.t = float64(a.n) / a.rate
		case ArrivalPoisson:
			a.t += a.rng.ExpFloat64() / a.rate
		case ArrivalGamma:
			a.t += gammaSample(a.rng, a.burstiness) / (a.burstiness * a.rate)
		}
	}
	a.n++
	if a.curve != nil {
		return int64(a.curve.real(a.t) * 1e9)
	}
	return int64(a.t * 1e9)
}

// gammaSample draws from Gamma(shape, 1) by Marsaglia and Tsang's method
// (with the shape+1 boost for shape < 1).
func gammaSample(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := r.Float64()
		return gammaSample(r, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
