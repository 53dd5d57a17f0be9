package perf

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Params are the performance model's free parameters: what calibration
// fits from measurements, per GPU type and runtime version.
type Params struct {
	PrefillMFU        float64 `json:"prefill_mfu"`
	DecodeEfficiency  float64 `json:"decode_efficiency"`
	StepOverheadMs    float64 `json:"step_overhead_ms"`
	RequestOverheadMs float64 `json:"request_overhead_ms"`
}

// ParamsOf returns the free parameters of a.
func ParamsOf(a Assumptions) Params {
	return Params{a.PrefillMFU, a.DecodeEfficiency, a.StepOverheadMs, a.RequestOverheadMs}
}

// Apply returns a with the parameters of p.
func (p Params) Apply(a Assumptions) Assumptions {
	a.PrefillMFU, a.DecodeEfficiency, a.StepOverheadMs, a.RequestOverheadMs = p.PrefillMFU, p.DecodeEfficiency, p.StepOverheadMs, p.RequestOverheadMs
	return a
}

// Observation is one measured lane (or one run of it): its performance
// model with the starting assumptions, its load, and the measured metrics
// named as the evidence aggregate names them ("ttft_p95_ms",
// "output_token_throughput", ...).
type Observation struct {
	Name     string
	Lane     Lane
	Load     Load
	Runs     int
	Measured map[string]float64
}

// FitMetrics are the metrics a fit compares, where measured.
var FitMetrics = []string{
	"ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p95_ms", "itl_p50_ms",
	"latency_p50_ms", "latency_p95_ms", "output_token_throughput",
}

// Residual summarises a fit's relative errors (prediction / measurement -
// 1) of one metric over the observations.
type Residual struct {
	N      int     `json:"n"`
	RMSRel float64 `json:"rms_rel"`
	MaxRel float64 `json:"max_rel"`
}

// LaneFit is one observation's predictions after the fit next to what was
// measured.
type LaneFit struct {
	Name      string             `json:"name"`
	Predicted map[string]float64 `json:"predicted"`
	Measured  map[string]float64 `json:"measured"`
}

// FitResult is a calibration fit.
type FitResult struct {
	Params Params `json:"parameters"`
	// Residuals are per metric; MAPE and RMSRel pool every metric of every
	// observation.
	Residuals   map[string]Residual `json:"residuals"`
	MAPE        float64             `json:"mape"`
	RMSRel      float64             `json:"rms_rel"`
	Lanes       []LaneFit           `json:"lanes"`
	Evaluations int                 `json:"evaluations"`
}

// Fit finds the parameters that make the model's predictions match the
// observations best: it minimises the sum of squared log ratios of
// predicted to measured metrics (so a 10% miss weighs the same on a
// millisecond TTFT and a throughput in thousands) with Nelder-Mead over
// logit(MFU), logit(efficiency), log(step overhead), log(request
// overhead), starting from start and restarting until it stops improving.
// Every evaluation runs each observation's virtual-time simulation.
func Fit(obs []Observation, start Params) (FitResult, error) {
	if len(obs) == 0 {
		return FitResult{}, errors.New("nothing to fit: no observation has a known model, GPU and measured metrics")
	}
	n := 0
	for _, o := range obs {
		for _, m := range FitMetrics {
			if v, ok := o.Measured[m]; ok && v > 0 {
				n++
			}
		}
	}
	if n < 4 {
		return FitResult{}, fmt.Errorf("%d measured figures cannot determine 4 parameters; give evidence with more lanes or metrics", n)
	}
	evals := 0
	var lastErr error
	cost := func(x []float64) float64 {
		evals++
		p := fromVector(x)
		c := 0.0
		for _, o := range obs {
			e, err := o.predict(p)
			if err != nil {
				lastErr = err
				return math.Inf(1)
			}
			for _, m := range FitMetrics {
				meas, ok := o.Measured[m]
				pred, _ := e.Metric(m)
				if !ok || meas <= 0 {
					continue
				}
				if pred <= 0 {
					return math.Inf(1)
				}
				// Soft-L1 on the log ratio: quadratic for misses under
				// about 5%, linear beyond, so one outlier (a p99 on a busy
				// machine) does not drag the fit.
				d := math.Log(pred/meas) / softL1Scale
				c += 2 * (math.Sqrt(1+d*d) - 1)
			}
		}
		return c
	}
	x := toVector(start)
	best := cost(x)
	if math.IsInf(best, 1) {
		return FitResult{}, fmt.Errorf("the model cannot simulate the observations at the starting parameters: %v", lastErr)
	}
	// The objective has local minima (which step a request joins changes
	// in jumps), so first scan a coarse grid around the start and keep the
	// best point.
	for _, mfu := range []float64{0.5, 1, 2} {
		for _, eff := range []float64{0.6, 1} {
			for _, so := range []float64{0.5, 1, 3} {
				for _, ro := range []float64{0.5, 2, 8} {
					p := Params{PrefillMFU: math.Min(start.PrefillMFU*mfu, 0.95), DecodeEfficiency: math.Min(start.DecodeEfficiency*eff, 0.95),
						StepOverheadMs: math.Max(start.StepOverheadMs, 0.1) * so, RequestOverheadMs: math.Max(start.RequestOverheadMs, 0.1) * ro}
					if c := cost(toVector(p)); c < best {
						x, best = toVector(p), c
					}
				}
			}
		}
	}
	// The objective is piecewise smooth (a request that reaches the engine
	// just before or after a step's decision joins a different step), so
	// restart from the best point with simplexes of several sizes.
	for _, step := range []float64{0.5, 0.2, 0.05, 0.3, 0.1, 0.02} {
		if nx, nc := nelderMead(cost, x, step, 500); nc < best {
			x, best = nx, nc
		}
		if best < 1e-12 {
			break
		}
	}
	p := fromVector(x)
	res := FitResult{Params: p, Residuals: map[string]Residual{}, Evaluations: evals}
	var all []float64
	for _, o := range obs {
		e, err := o.predict(p)
		if err != nil {
			return res, err
		}
		lf := LaneFit{Name: o.Name, Predicted: map[string]float64{}, Measured: map[string]float64{}}
		for _, m := range FitMetrics {
			meas, ok := o.Measured[m]
			if !ok || meas <= 0 {
				continue
			}
			pred, _ := e.Metric(m)
			rel := pred/meas - 1
			r := res.Residuals[m]
			r.N++
			r.RMSRel += rel * rel
			r.MaxRel = math.Max(r.MaxRel, math.Abs(rel))
			res.Residuals[m] = r
			all = append(all, rel)
			lf.Predicted[m], lf.Measured[m] = pred, meas
		}
		res.Lanes = append(res.Lanes, lf)
	}
	for m, r := range res.Residuals {
		r.RMSRel = math.Sqrt(r.RMSRel / float64(r.N))
		res.Residuals[m] = r
	}
	for _, rel := range all {
		res.MAPE += math.Abs(rel)
		res.RMSRel += rel * rel
	}
	res.MAPE /= float64(len(all))
	res.RMSRel = math.Sqrt(res.RMSRel / float64(len(all)))
	return res, nil
}

// predict runs o's lane with parameters p.
func (o Observation) predict(p Params) (Estimate, error) {
	l := o.Lane
	l.Hardware.Assume = p.Apply(l.Hardware.Assume)
	return l.Estimate(o.Load, o.Runs)
}

// softL1Scale is the log ratio (about 5%) where the fit's loss turns from
// quadratic to linear.
const softL1Scale = 0.05

func logit(p float64) float64 { return math.Log(p / (1 - p)) }

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func toVector(p Params) []float64 {
	clamp := func(f float64) float64 { return math.Min(math.Max(f, 1e-4), 1-1e-4) }
	return []float64{logit(clamp(p.PrefillMFU)), logit(clamp(p.DecodeEfficiency)),
		math.Log(math.Max(p.StepOverheadMs, 1e-3)), math.Log(math.Max(p.RequestOverheadMs, 1e-3))}
}

func fromVector(x []float64) Params {
	return Params{PrefillMFU: sigmoid(x[0]), DecodeEfficiency: sigmoid(x[1]), StepOverheadMs: math.Exp(x[2]), RequestOverheadMs: math.Exp(x[3])}
}

// nelderMead minimises f from x0 with an initial simplex of the given step
// in every coordinate, for at most maxEval evaluations.
func nelderMead(f func([]float64) float64, x0 []float64, step float64, maxEval int) ([]float64, float64) {
	n := len(x0)
	type vertex struct {
		x []float64
		f float64
	}
	simplex := make([]vertex, n+1)
	simplex[0] = vertex{append([]float64{}, x0...), f(x0)}
	for i := 0; i < n; i++ {
		x := append([]float64{}, x0...)
		x[i] += step
		simplex[i+1] = vertex{x, f(x)}
	}
	evals := n + 1
	point := func(c []float64, d []float64, t float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = c[i] + t*(d[i]-c[i])
		}
		return out
	}
	for evals < maxEval {
		sort.Slice(simplex, func(i, j int) bool { return simplex[i].f < simplex[j].f })
		if simplex[n].f-simplex[0].f <= 1e-12*(math.Abs(simplex[0].f)+1e-12) {
			break
		}
		centroid := make([]float64, n)
		for _, v := range simplex[:n] {
			for i := range centroid {
				centroid[i] += v.x[i] / float64(n)
			}
		}
		worst := simplex[n]
		r := point(centroid, worst.x, -1)
		fr := f(r)
		evals++
		switch {
		case fr < simplex[0].f:
			e := point(centroid, worst.x, -2)
			fe := f(e)
			evals++
			if fe < fr {
				simplex[n] = vertex{e, fe}
			} else {
				simplex[n] = vertex{r, fr}
			}
		case fr < simplex[n-1].f:
			simplex[n] = vertex{r, fr}
		default:
			c := point(centroid, worst.x, 0.5)
			if fr < worst.f {
				c = point(centroid, worst.x, -0.5)
			}
			fc := f(c)
			evals++
			if fc < math.Min(fr, worst.f) {
				simplex[n] = vertex{c, fc}
				continue
			}
			for i := 1; i <= n; i++ {
				simplex[i].x = point(simplex[0].x, simplex[i].x, 0.5)
				simplex[i].f = f(simplex[i].x)
				evals++
			}
		}
	}
	sort.Slice(simplex, func(i, j int) bool { return simplex[i].f < simplex[j].f })
	return simplex[0].x, simplex[0].f
}
