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
	// RequestJitterMs is Assumptions.RequestJitterMs (absent: none).
	RequestJitterMs float64 `json:"request_jitter_ms,omitempty"`
	// InterconnectEfficiency and MoERoutingSpread are fitted only from
	// evidence with tensor-parallel or mixture-of-experts lanes (absent:
	// the lane's own assumption stands).
	InterconnectEfficiency float64 `json:"interconnect_efficiency,omitempty"`
	MoERoutingSpread       float64 `json:"moe_routing_spread,omitempty"`
}

// ParamsOf returns the free parameters of a.
func ParamsOf(a Assumptions) Params {
	return Params{PrefillMFU: a.PrefillMFU, DecodeEfficiency: a.DecodeEfficiency, StepOverheadMs: a.StepOverheadMs,
		RequestOverheadMs: a.RequestOverheadMs, RequestJitterMs: a.RequestJitterMs}
}

// Apply returns a with the parameters of p (an absent interconnect
// efficiency or routing spread keeps a's).
func (p Params) Apply(a Assumptions) Assumptions {
	a.PrefillMFU, a.DecodeEfficiency, a.StepOverheadMs, a.RequestOverheadMs = p.PrefillMFU, p.DecodeEfficiency, p.StepOverheadMs, p.RequestOverheadMs
	a.RequestJitterMs = p.RequestJitterMs
	if p.InterconnectEfficiency > 0 {
		a.InterconnectEfficiency = p.InterconnectEfficiency
	}
	if p.MoERoutingSpread > 0 {
		a.MoERoutingSpread = p.MoERoutingSpread
	}
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
	// Identification says, per parameter (by its JSON name), whether the
	// evidence pinned it; absent in files written before it was checked.
	Identification map[string]Identification `json:"identification,omitempty"`
}

// ParamNames are the JSON names of the free parameters, in Params' order.
var ParamNames = [numParams]string{"prefill_mfu", "decode_efficiency", "step_overhead_ms", "request_overhead_ms", "request_jitter_ms",
	"interconnect_efficiency", "moe_routing_spread"}

const numParams = 7

// interconnectIndex and spreadIndex are the parameters only evidence with
// lanes on several GPUs, or of a mixture of experts, can move: Fit leaves
// them out (absent from the result and its identification) otherwise.
const (
	interconnectIndex = 5
	spreadIndex       = 6
)

// jitterIndex is the request jitter's place in Params' order: the one
// parameter whose starting value may be 0 (the catalog's), so the fit
// moves it on log(jitter + jitterFloorMs) and puts no prior on it.
const jitterIndex = 4

// jitterFloorMs keeps the fit's coordinate of the jitter finite at 0,
// and the coordinate from being flat there: a first simplex step
// (simplexStep) from a jitter of 0 reaches one the fit does not round to
// none (negligibleJitterMs). With a floor of 0.1 ms that step reached
// 0.065 ms, so a search started at 0 never left it: real-vLLM fits ended
// with no jitter and missed their own lane's TTFT p50 by 10-29%.
const jitterFloorMs = 0.5

// simplexStep is the size, in fit coordinates, of the first simplex of
// each Nelder-Mead search (a refining one follows at a fifth of it).
const simplexStep = 0.5

// paramLabels are the parameters in words, in Params' order.
var paramLabels = [numParams]string{"prefill MFU", "decode efficiency", "step overhead", "request overhead", "request jitter",
	"interconnect efficiency", "MoE routing spread"}

// ParamLabel is a parameter (by its JSON name) in words, e.g. "prefill MFU".
func ParamLabel(name string) string { return paramLabels[indexOf(name)] }

// paramHints say what evidence pins each parameter, in Params' order.
var paramHints = [numParams]string{
	"a lane whose prompts are long (thousands of tokens) at concurrency 1, beside one with short prompts, pins it",
	"lanes whose decode batches read different amounts of KV cache (small and large concurrency or context) separate it from the step overhead",
	"lanes whose decode batches read different amounts of KV cache (small and large concurrency or context) separate it from the decode efficiency",
	"a lane of short prompts at concurrency 1 (TTFT's intercept) beside one of long prompts pins it",
	"TTFT p50, p95 and p99 of lanes with tens of requests or more pin it (their spread beyond the step loop's)",
	"lanes at tensor parallel 2 or more whose steps carry many tokens (long prompts, big batches), beside the same lanes on fewer GPUs, pin it",
	"decode lanes of a mixture of experts at small and large batches (one token reaches k experts, a big batch nearly all) pin it",
}

// Identification says how well the evidence pins one parameter.
type Identification struct {
	// Identified is true when the lanes' design pins the parameter: with
	// every measured figure off by 1% (a quiet machine's timing noise), its
	// relative standard error would be at most MaxRelStdErr, with what it
	// trades against the parameters kept at their starting values counted
	// in. It is a property of which figures the parameter moves, not of how
	// well the model fits.
	Identified bool `json:"identified"`
	// RelStdErr is the parameter's relative standard error (1 sigma) from
	// the fit's sensitivities (the Jacobian of the log predictions in the
	// log parameters) at the noise of the fit's residuals (their RMS, at
	// least 1%); 1000 stands for unbounded (no figure depends on it, or
	// only in the same proportion as on another parameter).
	RelStdErr float64 `json:"rel_std_error"`
	// TradesWith names the parameter it cannot be told apart from (their
	// estimates' correlation over 0.95), when one.
	TradesWith string `json:"trades_with,omitempty"`
	// Held is true when the parameter kept its starting value (an
	// unidentified parameter may instead be fitted in combination with a
	// held one: its value then reproduces the lanes fitted but is no
	// measurement of it).
	Held bool `json:"held,omitempty"`
	// Reason says, for an unidentified parameter, why and what evidence
	// would pin it.
	Reason string `json:"reason,omitempty"`
}

// MaxRelStdErr is the largest relative standard error of a parameter the
// fit calls identified.
const MaxRelStdErr = 0.10

// Fit finds the parameters that make the model's predictions match the
// observations best: it minimises a soft-L1 loss of the log ratios of
// predicted to measured metrics (so a 10% miss weighs the same on a
// millisecond TTFT and a throughput in thousands) with Nelder-Mead over
// logit(MFU), logit(efficiency), log(step overhead), log(request
// overhead), after a coarse grid around start, restarting until it stops
// improving. Every evaluation runs each observation's virtual-time
// simulation. It then checks each parameter's identifiability (see
// Identification): while one is not identified, the worst (never the
// jitter, see below) is held at its value in start and the rest are fitted
// again, so evidence that cannot tell a parameter gives the catalog's value
// for it, said so, instead of a confident wrong one.
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
	// The interconnect efficiency and the routing spread are parameters of
	// this evidence only when a lane runs on several GPUs, or is a mixture
	// of experts; they start at that lane's assumption.
	free := [numParams]bool{true, true, true, true, true}
	for _, o := range obs {
		if a := o.Lane.Hardware.Assume; o.Lane.Hardware.Count > 1 && a.InterconnectEfficiency > 0 && o.Lane.Hardware.GPU.LinkGBs > 0 {
			free[interconnectIndex], start.InterconnectEfficiency = true, a.InterconnectEfficiency
		}
		if a := o.Lane.Hardware.Assume; o.Lane.Model.MoE != nil && a.MoERoutingSpread > 0 {
			free[spreadIndex], start.MoERoutingSpread = true, a.MoERoutingSpread
		}
	}
	relevant := free
	if nfree := countFree(free); n < nfree {
		return FitResult{}, fmt.Errorf("%d measured figures cannot determine %d parameters; give evidence with more lanes or metrics", n, nfree)
	}
	f := &fitter{obs: obs}
	p, err := f.minimise(start, free)
	if err != nil {
		return FitResult{}, err
	}
	var ident, held [numParams]Identification
	// ruledOut are the unidentified parameters the evidence will not let
	// be held: kept at their starting values, the fit misses the figures
	// by more than their noise explains.
	var ruledOut [numParams]bool
	ident = f.identify(p, free, false)
	for {
		// The jitter is never held: held at the catalog's 0, the model
		// cannot spread TTFT at all, and a fit to evidence that spreads
		// would bend the other parameters to make up for it (a real-vLLM
		// fit held at 0 missed its own lane's TTFT p50 by 15-28%). An
		// unidentified jitter keeps its fitted value and says so.
		worst := -1
		for j := range free {
			if j != jitterIndex && free[j] && !ruledOut[j] && !ident[j].Identified && (worst < 0 || ident[j].RelStdErr > ident[worst].RelStdErr) {
				worst = j
			}
		}
		if worst < 0 {
			break
		}
		trial := free
		trial[worst] = false
		q, err := f.minimise(start, trial)
		if err != nil {
			return FitResult{}, err
		}
		if !f.holdFits(p, q, n, free) {
			ruledOut[worst] = true
			continue
		}
		held[worst] = ident[worst]
		held[worst].Held = true
		held[worst].Reason = "kept at the starting value: " + held[worst].Reason
		free, p = trial, q
		ident = f.identify(p, free, false)
	}
	p = f.withoutSmallJitter(p, free)
	// A free parameter the evidence pins only given the held values (it
	// trades against one of them) fits the figures but is no measurement:
	// it is not identified either, though its fitted value is kept (the
	// lanes fitted are reproduced).
	marginal := f.identify(p, free, true)
	for j := range free {
		switch {
		case !free[j]:
			ident[j] = held[j]
		case ruledOut[j] && !marginal[j].Identified:
			ident[j] = Identification{RelStdErr: marginal[j].RelStdErr, TradesWith: marginal[j].TradesWith}
			ident[j].Reason = fmt.Sprintf("fitted, though the evidence does not pin it (±%.0f%%): kept at its starting value %.4g, the fit would miss the measured figures by more than their noise explains; %s",
				100*marginal[j].RelStdErr, get(start, j), paramHints[j])
		case !marginal[j].Identified:
			m := marginal[j]
			with := "the parameters kept at their starting values"
			if m.TradesWith != "" {
				with = "the " + paramLabels[indexOf(m.TradesWith)]
				if !free[indexOf(m.TradesWith)] {
					with += " (kept at its starting value)"
				}
			}
			ident[j] = Identification{RelStdErr: m.RelStdErr, TradesWith: m.TradesWith,
				Reason: fmt.Sprintf("fitted, but only in combination with %s: its value reproduces the lanes fitted and is not a measurement of it (±%.0f%%); %s", with, 100*m.RelStdErr, paramHints[j])}
		}
	}
	// A jitter below a client's own timing noise is none.
	if p.RequestJitterMs < negligibleJitterMs {
		p.RequestJitterMs = 0
	}
	// A jitter of 0 has no slope to judge it by (nothing moves with a
	// multiple of 0), yet evidence whose TTFTs spread no more than the
	// step loop's bounds it: the jitter is identified as none when a
	// jitter of jitterProbeMs would move the figures beyond the timing
	// noise.
	if p.RequestJitterMs == 0 && !ident[jitterIndex].Identified {
		if move, ok := f.jitterProbe(p); ok && move >= nominalNoise {
			ident[jitterIndex] = Identification{Identified: true}
		}
	}
	if !relevant[interconnectIndex] {
		p.InterconnectEfficiency = 0
	}
	if !relevant[spreadIndex] {
		p.MoERoutingSpread = 0
	}
	res, err := f.result(p)
	if err != nil {
		return res, err
	}
	res.Identification = map[string]Identification{}
	for j, id := range ident {
		if relevant[j] {
			res.Identification[ParamNames[j]] = id
		}
	}
	return res, nil
}

// holdFits reports whether holding a parameter at its starting value
// (the fit q, one parameter fewer free than the fit p) is consistent with
// the evidence: its loss grows by at most holdRejectF times the free fit's
// loss per degree of freedom (an F test of one constraint, n figures and
// the free parameters of p). A parameter the figures trade against
// another may still be pinned by them as a whole: real vLLM on CPU fits
// a request overhead of about 1 ms that its TTFT alone cannot resolve,
// and held at the catalog's 7 ms the fit missed TTFT p50 by 20-50%.
func (f *fitter) holdFits(p, q Params, n int, free [numParams]bool) bool {
	cp, cq := f.cost(p), f.cost(q)
	return cq-cp <= holdRejectF*cp/float64(max(n-countFree(free), 1))
}

// countFree is how many parameters free frees.
func countFree(free [numParams]bool) int {
	k := 0
	for _, ok := range free {
		if ok {
			k++
		}
	}
	return k
}

// withoutSmallJitter refits p without its request jitter when that is
// under jitterProbeMs, and keeps the refit when it misses the figures no
// more: the search's weak prior on the other parameters can leave a small
// jitter standing in for the little they are pulled off their best
// values, where the evidence holds none.
func (f *fitter) withoutSmallJitter(p Params, free [numParams]bool) Params {
	if p.RequestJitterMs <= 0 || p.RequestJitterMs >= jitterProbeMs {
		return p
	}
	trial := free
	trial[jitterIndex] = false
	none := p
	none.RequestJitterMs = 0
	q, err := f.minimise(none, trial)
	if err != nil || f.cost(q) > f.cost(p) {
		return p
	}
	return q
}

// holdRejectF is the F statistic beyond which the evidence rules out a
// parameter's starting value (about the 95% point of F(1, m) for the tens
// of figures a calibration fits).
const holdRejectF = 4.0

// negligibleJitterMs is the request jitter below which a fit reports
// none: less than a loopback client's own timing noise.
const negligibleJitterMs = 0.2

// jitterProbeMs is the request jitter whose effect on the figures says
// whether evidence that fits none rules one out.
const jitterProbeMs = 1.0

// jitterProbe returns the RMS change of the figures' log ratios when a
// request jitter of jitterProbeMs is added to p.
func (f *fitter) jitterProbe(p Params) (float64, bool) {
	r0, err := f.figures(p)
	if err != nil {
		return 0, false
	}
	q := p
	q.RequestJitterMs = jitterProbeMs
	r1, err := f.figures(q)
	if err != nil || len(r1) != len(r0) || len(r0) == 0 {
		return 0, false
	}
	ss := 0.0
	for i := range r0 {
		ss += (r1[i] - r0[i]) * (r1[i] - r0[i])
	}
	return math.Sqrt(ss / float64(len(r0))), true
}

// fitter evaluates parameters against observations.
type fitter struct {
	obs     []Observation
	evals   int
	lastErr error
}

// figures returns the log ratios of predicted to measured figures at p
// (in observation and FitMetrics order), or an error.
func (f *fitter) figures(p Params) ([]float64, error) {
	f.evals++
	var out []float64
	for _, o := range f.obs {
		e, err := o.predict(p)
		if err != nil {
			f.lastErr = err
			return nil, err
		}
		for _, m := range FitMetrics {
			meas, ok := o.Measured[m]
			if !ok || meas <= 0 {
				continue
			}
			pred, _ := e.Metric(m)
			if pred <= 0 {
				return nil, fmt.Errorf("%s: the model predicts no %s", o.Name, m)
			}
			out = append(out, math.Log(pred/meas))
		}
	}
	return out, nil
}

// cost is the soft-L1 loss at p: quadratic for misses under about 5%,
// linear beyond, so one outlier (a p99 on a busy machine) does not drag
// the fit.
func (f *fitter) cost(p Params) float64 {
	r, err := f.figures(p)
	if err != nil {
		return math.Inf(1)
	}
	c := 0.0
	for _, v := range r {
		d := v / softL1Scale
		c += 2 * (math.Sqrt(1+d*d) - 1)
	}
	return c
}

// minimise fits the free parameters, the others held at start.
func (f *fitter) minimise(start Params, free [numParams]bool) (Params, error) {
	sp := newSubspace(start, free)
	// A weak prior on the starting values (a log standard deviation of
	// fitPriorSD) settles the directions the figures leave flat (a
	// parameter no figure depends on, two that trade against each other)
	// at the start instead of wherever the search stops, while costing an
	// identified parameter next to nothing.
	cost := func(x []float64) float64 {
		p := sp.full(x)
		c := f.cost(p)
		for _, j := range sp.idx {
			if j == jitterIndex {
				continue
			}
			d := math.Log(get(p, j)/get(start, j)) / fitPriorSD
			c += d * d
		}
		return c
	}
	x := sp.sub(start)
	best := cost(x)
	if math.IsInf(best, 1) {
		return start, fmt.Errorf("the model cannot simulate the observations at the starting parameters: %v", f.lastErr)
	}
	// The objective has local minima (which step a request joins changes
	// in jumps; a vanishing step overhead that a low efficiency makes up
	// for), so the search is coarse to fine from several starts: a grid
	// relative to the start and one over the parameters' plausible ranges
	// whatever the start (catalog values can be far off), then short
	// Nelder-Mead runs from the best few distinct grid points, then
	// restarts with simplexes of several sizes from the best of those.
	cands := gridCandidates(start, free, sp, cost, fitCandidate{x, best})
	x, best = cands[0].x, cands[0].c
	for _, sd := range distinctSeeds(cands) {
		nx, nc := nelderMead(cost, sd.x, simplexStep, 300)
		nx, nc = nelderMead(cost, nx, simplexStep/5, 300)
		if nc < best {
			x, best = nx, nc
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
	return sp.full(x), nil
}

// subspace is the free parameters' coordinates: the others stay at base.
type subspace struct {
	base []float64
	idx  []int
}

func newSubspace(start Params, free [numParams]bool) subspace {
	sp := subspace{base: toVector(start)}
	for j, ok := range free {
		if ok {
			sp.idx = append(sp.idx, j)
		}
	}
	return sp
}

// full is the parameters at the free coordinates x.
func (sp subspace) full(x []float64) Params {
	v := append([]float64{}, sp.base...)
	for k, j := range sp.idx {
		v[j] = x[k]
	}
	return fromVector(v)
}

// sub is p's free coordinates.
func (sp subspace) sub(p Params) []float64 {
	v := toVector(p)
	out := make([]float64, len(sp.idx))
	for k, j := range sp.idx {
		out[k] = v[j]
	}
	return out
}

// fitCandidate is a point of the search and its cost.
type fitCandidate struct {
	x []float64
	c float64
}

// gridCandidates are first and the points of two grids over the free
// parameters (one relative to start, one over their plausible ranges),
// cheapest first.
func gridCandidates(start Params, free [numParams]bool, sp subspace, cost func([]float64) float64, first fitCandidate) []fitCandidate {
	cands := []fitCandidate{first}
	relative := [numParams][]float64{{0.5, 1, 2}, {0.6, 1}, {0.5, 1, 3}, {0.5, 2, 8}, {0, 2, 8}, {0.5, 1}, {0.5, 1}}
	absolute := [numParams][]float64{{0.1, 0.25, 0.5, 0.8}, {0.3, 0.55, 0.85}, {0.2, 1, 4}, {0.5, 3, 15, 60}, {0, 4, 12}, {0.3, 0.8}, {0.3, 0.9}}
	var grid func(j int, p Params, abs bool)
	grid = func(j int, p Params, abs bool) {
		if j == numParams {
			v := sp.sub(p)
			cands = append(cands, fitCandidate{v, cost(v)})
			return
		}
		if !free[j] {
			grid(j+1, p, abs)
			return
		}
		levels := relative[j]
		if abs {
			levels = absolute[j]
		}
		for _, k := range levels {
			q := p
			switch {
			case abs:
				q = setParam(q, j, k)
			case j == 0:
				q.PrefillMFU = math.Min(start.PrefillMFU*k, 0.95)
			case j == 1:
				q.DecodeEfficiency = math.Min(start.DecodeEfficiency*k, 0.95)
			case j == 2:
				q.StepOverheadMs = math.Max(start.StepOverheadMs, 0.1) * k
			case j == 3:
				q.RequestOverheadMs = math.Max(start.RequestOverheadMs, 0.1) * k
			case j == jitterIndex:
				q.RequestJitterMs = math.Max(start.RequestJitterMs, 1) * k
			default:
				q = setParam(q, j, math.Min(get(start, j)*k, 0.999))
			}
			grid(j+1, q, abs)
		}
	}
	grid(0, start, false)
	grid(0, start, true)
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].c < cands[j].c })
	return cands
}

// distinctSeeds are the cheapest fitStarts candidates (of finite cost) at
// least 0.5 apart, where the local searches start.
func distinctSeeds(cands []fitCandidate) []fitCandidate {
	var seeds []fitCandidate
	for _, c := range cands {
		if math.IsInf(c.c, 1) || len(seeds) == fitStarts {
			break
		}
		distinct := true
		for _, s := range seeds {
			if dist(s.x, c.x) < 0.5 {
				distinct = false
			}
		}
		if distinct {
			seeds = append(seeds, c)
		}
	}
	return seeds
}

// fitPriorSD is the log standard deviation of the fit's weak prior on the
// starting values: a factor of e either way is one unit of cost, what a
// single figure off by about 7% costs.
const fitPriorSD = 1.0

// fitStarts is how many distinct grid points the fit refines.
const fitStarts = 6

// dist is the Euclidean distance of two points of the fit's space.
func dist(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(d)
}

// setParam returns p with parameter j set to v.
func setParam(p Params, j int, v float64) Params {
	switch j {
	case 0:
		p.PrefillMFU = v
	case 1:
		p.DecodeEfficiency = v
	case 2:
		p.StepOverheadMs = v
	case 3:
		p.RequestOverheadMs = v
	case jitterIndex:
		p.RequestJitterMs = v
	case interconnectIndex:
		p.InterconnectEfficiency = v
	case spreadIndex:
		p.MoERoutingSpread = v
	}
	return p
}

// jacobianStep is the relative change of a parameter for its finite
// differences: wide enough to average over the jumps of which step a
// request joins.
const jacobianStep = 0.05

// identify computes each free parameter's relative standard error at p:
// J (figures x parameters) holds d log(prediction) / d log(parameter) by
// central differences and (J'J / sigma^2 + P)^-1 is the parameters'
// covariance for figures with relative noise sigma, P the precision of the
// held parameters: with priors, that of their starting values (the
// catalog's stated ±50%, heldPriorSD), so what a free parameter trades
// against a held one widens its error too; without, exact (the error given
// the held values). A free parameter whose standard error at
// nominalNoise exceeds MaxRelStdErr is not identified; RelStdErr scales
// it to the noise of the fit's residuals. Held parameters are left zero.
func (f *fitter) identify(p Params, free [numParams]bool, priors bool) [numParams]Identification {
	var out [numParams]Identification
	r0, err := f.figures(p)
	if err != nil {
		for j := range out {
			out[j] = Identification{RelStdErr: unbounded, Reason: err.Error()}
		}
		return out
	}
	m := len(r0)
	var cols [numParams][]float64
	nfree := countFree(free)
	for j := range cols {
		up, down := scale(p, j, math.Exp(jacobianStep)), scale(p, j, math.Exp(-jacobianStep))
		ru, err1 := f.figures(up)
		rd, err2 := f.figures(down)
		cols[j] = make([]float64, m)
		if err1 == nil && err2 == nil && get(p, j) > 0 {
			h := math.Log(get(up, j) / get(down, j))
			for i := range cols[j] {
				cols[j][i] = (ru[i] - rd[i]) / h
			}
		}
	}
	ss := 0.0
	for _, v := range r0 {
		ss += v * v
	}
	noise := math.Max(math.Sqrt(ss/float64(max(m-nfree, 1))), nominalNoise) / nominalNoise
	sigma := nominalNoise
	a := make([][]float64, numParams)
	trace := 0.0
	for u := range a {
		a[u] = make([]float64, numParams)
		for v := range a[u] {
			for i := 0; i < m; i++ {
				a[u][v] += cols[u][i] * cols[v][i]
			}
		}
		trace += a[u][u]
	}
	for u := range a {
		a[u][u] += 1e-9 * (trace/numParams + 1e-12)
		if !free[u] {
			if priors {
				a[u][u] += sigma * sigma / (heldPriorSD * heldPriorSD)
			} else {
				a[u][u] += 1e12 * (trace/numParams + 1)
			}
		}
	}
	inv := invert(a)
	for u := range free {
		if !free[u] {
			continue
		}
		se := float64(unbounded)
		if inv != nil && inv[u][u] > 0 {
			se = math.Min(sigma*math.Sqrt(inv[u][u]), unbounded)
		}
		id := Identification{RelStdErr: math.Min(se*noise, unbounded), Identified: se <= MaxRelStdErr}
		colNorm := 0.0
		for _, v := range cols[u] {
			colNorm += v * v
		}
		best := 0.0
		for w := range free {
			if w == u || inv == nil {
				continue
			}
			if c := math.Abs(inv[u][w]) / math.Sqrt(inv[u][u]*inv[w][w]); c > 0.95 && c > best {
				best, id.TradesWith = c, ParamNames[w]
			}
		}
		if !id.Identified {
			why := fmt.Sprintf("a 1%% error in the measured figures moves it by %.0f%%", 100*se)
			switch {
			case math.Sqrt(colNorm/float64(max(m, 1))) < 1e-3:
				why = "no measured figure depends on it"
			case id.TradesWith != "":
				w := indexOf(id.TradesWith)
				why = fmt.Sprintf("the measured figures change with it only as they change with the %s", paramLabels[w])
				if !free[w] {
					why += " (itself not identified)"
				}
			}
			id.Reason = why + "; " + paramHints[u]
		}
		out[u] = id
	}
	return out
}

// nominalNoise is the relative error of a measured figure at which
// identify judges identifiability: a quiet machine's timing noise.
const nominalNoise = 0.01

// heldPriorSD is the relative uncertainty of a held parameter's starting
// value (the catalog's stated ±50% for TTFT, as a log standard deviation).
const heldPriorSD = 0.5

// unbounded stands for a standard error without bound.
const unbounded = 1000.0

func indexOf(name string) int {
	for j, n := range ParamNames {
		if n == name {
			return j
		}
	}
	return 0
}

func get(p Params, j int) float64 {
	return [numParams]float64{p.PrefillMFU, p.DecodeEfficiency, p.StepOverheadMs, p.RequestOverheadMs, p.RequestJitterMs,
		p.InterconnectEfficiency, p.MoERoutingSpread}[j]
}

// scale returns p with parameter j multiplied by k (MFU and efficiency
// kept below 1).
func scale(p Params, j int, k float64) Params {
	switch j {
	case 0:
		p.PrefillMFU = math.Min(p.PrefillMFU*k, 0.999)
	case 1:
		p.DecodeEfficiency = math.Min(p.DecodeEfficiency*k, 0.999)
	case 2:
		p.StepOverheadMs *= k
	case 3:
		p.RequestOverheadMs *= k
	case jitterIndex:
		p.RequestJitterMs *= k
	case interconnectIndex:
		p.InterconnectEfficiency = math.Min(p.InterconnectEfficiency*k, 0.999)
	case spreadIndex:
		p.MoERoutingSpread = math.Min(p.MoERoutingSpread*k, 1)
	}
	return p
}

// invert returns the inverse of the small symmetric matrix a by
// Gauss-Jordan elimination with partial pivoting, or nil when it is
// singular.
func invert(a [][]float64) [][]float64 {
	n := len(a)
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, 2*n)
		copy(m[i], a[i])
		m[i][n+i] = 1
	}
	for c := 0; c < n; c++ {
		piv := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[piv][c]) {
				piv = r
			}
		}
		if math.Abs(m[piv][c]) < 1e-300 {
			return nil
		}
		m[c], m[piv] = m[piv], m[c]
		d := m[c][c]
		for k := range m[c] {
			m[c][k] /= d
		}
		for r := 0; r < n; r++ {
			if r == c || m[r][c] == 0 {
				continue
			}
			f := m[r][c]
			for k := range m[r] {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	out := make([][]float64, n)
	for i := range out {
		out[i] = m[i][n:]
	}
	return out
}

// Evaluate compares the model's predictions with parameters p against the
// observations, as a fit's result does (residuals, MAPE, each lane's
// predicted and measured figures), without fitting: it checks a
// calibration on evidence it was not fitted to.
func Evaluate(obs []Observation, p Params) (FitResult, error) {
	if len(obs) == 0 {
		return FitResult{}, errors.New("nothing to check: no observation has a known model, GPU and measured metrics")
	}
	f := &fitter{obs: obs}
	return f.result(p)
}

// result summarises the fit at p.
func (f *fitter) result(p Params) (FitResult, error) {
	res := FitResult{Params: p, Residuals: map[string]Residual{}, Evaluations: f.evals}
	var all []float64
	for _, o := range f.obs {
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

// toVector maps p to the fit's coordinates: logits of the fractions,
// logarithms of the times, and the routing spread's logarithm (it starts
// at its bound, 1, where a logit is flat; fromVector caps it there).
func toVector(p Params) []float64 {
	clamp := func(f float64) float64 { return math.Min(math.Max(f, 1e-4), 1-1e-4) }
	return []float64{logit(clamp(p.PrefillMFU)), logit(clamp(p.DecodeEfficiency)),
		math.Log(math.Max(p.StepOverheadMs, 1e-3)), math.Log(math.Max(p.RequestOverheadMs, 1e-3)),
		math.Log(math.Max(p.RequestJitterMs, 0) + jitterFloorMs), logit(clamp(p.InterconnectEfficiency)),
		math.Log(math.Max(p.MoERoutingSpread, 1e-4))}
}

func fromVector(x []float64) Params {
	return Params{PrefillMFU: sigmoid(x[0]), DecodeEfficiency: sigmoid(x[1]), StepOverheadMs: math.Exp(x[2]), RequestOverheadMs: math.Exp(x[3]),
		RequestJitterMs: jitterOf(x[4]), InterconnectEfficiency: sigmoid(x[interconnectIndex]), MoERoutingSpread: math.Min(math.Exp(x[spreadIndex]), 1)}
}

// jitterOf is the request jitter at fit coordinate x (a jitter within
// rounding of 0, as log(0 + jitterFloorMs) comes back, is 0).
func jitterOf(x float64) float64 {
	if j := math.Exp(x) - jitterFloorMs; j > 1e-9 {
		return j
	}
	return 0
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
