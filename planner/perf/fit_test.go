package perf

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// fitShapes is a set of loads that pins the five parameters: single
// streams of short and long prompts, a busy closed loop and an open loop
// (the last three with enough requests for TTFT's spread to show).
var fitShapes = []Load{
	{InputTokens: 128, OutputTokens: 64, Concurrency: 1, Requests: 4},
	{InputTokens: 3000, OutputTokens: 32, Concurrency: 1, Requests: 4},
	{InputTokens: 1024, OutputTokens: 128, Concurrency: 16, Requests: 48},
	{InputTokens: 2000, OutputTokens: 256, Concurrency: 32, Requests: 32},
	{InputTokens: 512, OutputTokens: 64, Concurrency: 32, RequestRate: 20, Requests: 40, Seed: 3},
}

// observe measures loads on lane l with parameters p, as a perfect
// engine would.
func observe(t *testing.T, l Lane, p Params, loads []Load) []Observation {
	t.Helper()
	var out []Observation
	truth := l
	truth.Hardware.Assume = p.Apply(l.Hardware.Assume)
	for i, ld := range loads {
		e, err := truth.Estimate(ld, 1)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]float64{}
		for _, name := range FitMetrics {
			m[name], _ = e.Metric(name)
		}
		out = append(out, Observation{Name: string(rune('a' + i)), Lane: l, Load: ld, Runs: 1, Measured: m})
	}
	return out
}

// fitHidden are the parameters observe's engine runs with: every one of
// them, the request jitter included, for the fit to recover. The jitter is
// 3.1 ms, not a round 3: with attention's FLOPs counted, a jitter of 3 ms
// puts the open-loop shape's TTFT p95 and p99 each on a jump (one of its
// 40 requests joins one step or the next): 0.5% more jitter moves the p95
// by +12%, 0.5% less the p99 by -13%, so the truth is an isolated point of
// zero loss that no search can home in on. Every jitter from 2.5 to 3.5
// ms but that one was recovered within fitTolerance from the catalog's
// start (docs/performance-model.md, "Attention's own FLOPs").
var fitHidden = Params{PrefillMFU: 0.55, DecodeEfficiency: 0.62, StepOverheadMs: 2.4, RequestOverheadMs: 6, RequestJitterMs: 3.1}

// fitTolerance is how far a fit from exact data may land from fitHidden,
// per parameter (see TestFitRecoversHiddenParameters).
var fitTolerance = map[string]float64{"prefill_mfu": 0.02, "decode_efficiency": 0.02, "step_overhead_ms": 0.02, "request_overhead_ms": 0.05, "request_jitter_ms": 0.10}

func TestFitRecoversHiddenParameters(t *testing.T) {
	l := testLane(t, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true})
	hidden := fitHidden
	res, err := Fit(observe(t, l, hidden, fitShapes), ParamsOf(l.Hardware.Assume))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fit %+v (hidden %+v) in %d evaluations, MAPE %.4f%%", res.Params, hidden, res.Evaluations, res.MAPE*100)
	for name, pair := range map[string][2]float64{
		"prefill_mfu": {res.Params.PrefillMFU, hidden.PrefillMFU}, "decode_efficiency": {res.Params.DecodeEfficiency, hidden.DecodeEfficiency},
		"step_overhead_ms": {res.Params.StepOverheadMs, hidden.StepOverheadMs}, "request_overhead_ms": {res.Params.RequestOverheadMs, hidden.RequestOverheadMs},
		"request_jitter_ms": {res.Params.RequestJitterMs, hidden.RequestJitterMs},
	} {
		// Exact data, but the objective has pockets (which step a request
		// joins changes in jumps): within 2%, not exactly. The request
		// overhead and jitter trade a little (the four requests of a
		// single-stream lane draw delays whose median is not the
		// distribution's, so there the jitter moves TTFT p50 too): within
		// 5% and 10%.
		if math.Abs(pair[0]/pair[1]-1) > fitTolerance[name] {
			t.Errorf("%s: fitted %v, hidden %v", name, pair[0], pair[1])
		}
	}
	if res.MAPE > 0.01 || len(res.Lanes) != len(fitShapes) || res.Residuals["ttft_p50_ms"].N != len(fitShapes) {
		t.Errorf("fit quality %+v", res)
	}
	if _, err := Fit(nil, hidden); err == nil {
		t.Error("an empty fit must fail")
	}
}

// Every parameter of the fitShapes fit is identified, with a small
// standard error.
func TestFitIdentifiesEveryParameterFromVariedShapes(t *testing.T) {
	l := testLane(t, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true})
	hidden := fitHidden
	res, err := Fit(observe(t, l, hidden, fitShapes), ParamsOf(l.Hardware.Assume))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range ParamNames {
		id, ok := res.Identification[name]
		t.Logf("%s: %+v", name, id)
		if name == "interconnect_efficiency" || name == "moe_routing_spread" {
			if ok {
				t.Errorf("%s is no parameter of one dense model on one GPU: %+v", name, id)
			}
			continue
		}
		if !ok || !id.Identified || id.RelStdErr > 0.05 || id.Reason != "" {
			t.Errorf("%s: %+v; want identified within 5%%", name, id)
		}
	}
}

// One shape (short prompts, one stream) cannot tell the MFU (every step
// is memory-bound) nor decode efficiency from step overhead (every decode
// step reads about the same bytes): the fit says so, keeps the catalog's
// MFU and one of the pair instead of a confident wrong value, and still
// recovers the request overhead, which the shape does pin.
func TestFitSaysWhatOneShapeCannotIdentify(t *testing.T) {
	l := testLane(t, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true})
	hidden := Params{PrefillMFU: 0.55, DecodeEfficiency: 0.62, StepOverheadMs: 2.4, RequestOverheadMs: 6}
	start := ParamsOf(l.Hardware.Assume)
	res, err := Fit(observe(t, l, hidden, fitShapes[:1]), start)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range ParamNames {
		t.Logf("%s: %+v", name, res.Identification[name])
	}
	mfu := res.Identification["prefill_mfu"]
	if mfu.Identified || res.Params.PrefillMFU != start.PrefillMFU || !strings.Contains(mfu.Reason, "long (thousands of tokens)") {
		t.Errorf("prefill MFU %v: %+v; want not identified, kept at the catalog's %v, with a hint", res.Params.PrefillMFU, mfu, start.PrefillMFU)
	}
	eff, step := res.Identification["decode_efficiency"], res.Identification["step_overhead_ms"]
	if eff.Identified || step.Identified || eff.Held == step.Held {
		t.Errorf("decode efficiency %+v, step overhead %+v: want neither identified, exactly one of the pair held", eff, step)
	}
	held, fitted := eff, step
	if step.Held {
		held, fitted = step, eff
	}
	if !strings.Contains(held.Reason, "kept at the starting value") || !strings.Contains(fitted.Reason, "fitted, but only in combination with the") {
		t.Errorf("the held one of the pair says %q, the other %q", held.Reason, fitted.Reason)
	}
	if ro := res.Identification["request_overhead_ms"]; !ro.Identified || math.Abs(res.Params.RequestOverheadMs/hidden.RequestOverheadMs-1) > 0.02 {
		t.Errorf("request overhead %v (%+v), hidden %v: the shape pins it", res.Params.RequestOverheadMs, ro, hidden.RequestOverheadMs)
	}
	if res.MAPE > 0.01 {
		t.Errorf("the fit must still reproduce the shape: MAPE %.2f%%", 100*res.MAPE)
	}
}

// The fit does not depend on a good start: from starting values far off
// on either side (a vanishing step overhead that a low efficiency makes up
// for was a local minimum the old start-relative grid could not leave:
// 14% MAPE) it converges on the hidden parameters.
func TestFitConvergesFromFarStarts(t *testing.T) {
	l := testLane(t, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true})
	hidden := fitHidden
	obs := observe(t, l, hidden, fitShapes)
	for _, start := range []Params{{0.1, 0.3, 0.2, 30, 0, 0, 0}, {0.9, 0.95, 5, 0.5, 0, 0, 0}, {0.6, 0.2, 0.1, 1, 0, 0, 0}} {
		res, err := Fit(obs, start)
		if err != nil {
			t.Fatal(err)
		}
		got := res.Params
		for j, name := range ParamNames {
			if rel := get(got, j)/get(hidden, j) - 1; math.Abs(rel) > fitTolerance[name] {
				t.Errorf("from %+v: %s fitted %.4g, hidden %.4g (%+.1f%%)", start, name, get(got, j), get(hidden, j), 100*rel)
			}
		}
	}
}

// Evidence whose TTFTs spread no more than the step loop's rules a jitter
// out: fitted from an engine without one, the jitter comes out 0 and is
// identified (a jitter of 0 has no slope, so the fit probes one of
// jitterProbeMs), and no other parameter is thrown off.
func TestFitFindsNoJitterWhereThereIsNone(t *testing.T) {
	l := testLane(t, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true})
	hidden := fitHidden
	hidden.RequestJitterMs = 0
	res, err := Fit(observe(t, l, hidden, fitShapes), ParamsOf(l.Hardware.Assume))
	if err != nil {
		t.Fatal(err)
	}
	if id := res.Identification["request_jitter_ms"]; res.Params.RequestJitterMs != 0 || !id.Identified {
		t.Errorf("jitter %v (%+v); want 0, identified", res.Params.RequestJitterMs, id)
	}
	for j, name := range ParamNames[:jitterIndex] {
		if rel := get(res.Params, j)/get(hidden, j) - 1; math.Abs(rel) > 0.02 {
			t.Errorf("%s fitted %.4g, hidden %.4g", name, get(res.Params, j), get(hidden, j))
		}
	}
}

// The fit moves the jitter on a coordinate that is not flat at 0: the
// first simplex step from a jitter of 0 reaches one the fit keeps (not
// rounded to none). With the floor at 0.1 ms it reached 0.065 ms, and a
// search started at 0 stayed there.
func TestFitJitterCoordinateIsNotFlatAtZero(t *testing.T) {
	x := toVector(Params{PrefillMFU: 0.5, DecodeEfficiency: 0.5, StepOverheadMs: 1, RequestOverheadMs: 1})
	if j := jitterOf(x[jitterIndex] + simplexStep); j < negligibleJitterMs {
		t.Errorf("one simplex step from a jitter of 0 reaches %.3f ms, under the %.1f ms the fit rounds to none", j, negligibleJitterMs)
	}
	if j := jitterOf(x[jitterIndex]); j != 0 {
		t.Errorf("a jitter of 0 comes back as %v", j)
	}
}

// TestFitRecoversInterconnectAndRoutingSpread: evidence with lanes on
// four GPUs beside the same lanes on one pins the interconnect efficiency
// (hidden at 0.35, half the PCIe catalog value), and decode lanes of a
// mixture of experts at small and large batches pin the routing spread
// (hidden at 0.4); evidence without such lanes leaves both out of the fit
// (absent from its parameters and identification).
func TestFitRecoversInterconnectAndRoutingSpread(t *testing.T) {
	if testing.Short() {
		t.Skip("two seven-parameter fits")
	}
	e := EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true}
	loads := []Load{
		{InputTokens: 128, OutputTokens: 64, Concurrency: 1, Requests: 4},
		{InputTokens: 3000, OutputTokens: 32, Concurrency: 1, Requests: 4},
		{InputTokens: 256, OutputTokens: 128, Concurrency: 8, Requests: 16},
		{InputTokens: 1024, OutputTokens: 128, Concurrency: 32, Requests: 64},
	}
	for _, c := range []struct {
		model, gpu string
		counts     []int
		index      int
		hidden     float64
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", "L40S", []int{1, 4}, interconnectIndex, 0.35},
		{"Qwen/Qwen3-30B-A3B", "H100", []int{1}, spreadIndex, 0.4},
	} {
		m, _ := LookupModel(c.model)
		hidden := fitHidden
		hidden.RequestJitterMs = 0
		hidden = setParam(hidden, c.index, c.hidden)
		var obs []Observation
		for _, n := range c.counts {
			l, err := NewLane(m, hw(c.gpu, n), e, 8192)
			if err != nil {
				t.Fatal(err)
			}
			obs = append(obs, observe(t, l, hidden, loads)...)
		}
		res, err := Fit(obs, ParamsOf(obs[0].Lane.Hardware.Assume))
		if err != nil {
			t.Fatal(err)
		}
		name := ParamNames[c.index]
		got := get(res.Params, c.index)
		t.Logf("%s: fit %+v in %d evaluations, MAPE %.4f%%; %s %+v", c.model, res.Params, res.Evaluations, 100*res.MAPE, name, res.Identification[name])
		if math.Abs(got/c.hidden-1) > 0.05 || !res.Identification[name].Identified {
			t.Errorf("%s: %s fitted %.3f (hidden %.3f), identification %+v", c.model, name, got, c.hidden, res.Identification[name])
		}
		other := interconnectIndex + spreadIndex - c.index
		if _, ok := res.Identification[ParamNames[other]]; ok || get(res.Params, other) != 0 {
			t.Errorf("%s: %s is no parameter of this evidence: %v, %+v", c.model, ParamNames[other], get(res.Params, other), res.Identification)
		}
	}
}

// cpuVLLMRuns are the five runs of TestIntegrationCalibrateVLLM's fit lane
// as a quiet CI machine measured them (real vLLM 0.32.0 on CPU, the tiny
// two-layer model in float32, 128-token prompts plus the chat template's
// 32, 32 output tokens, 2 streams, 48 requests and 4 warmups a run; the
// integration log of main at 60d6ddb).
var cpuVLLMRuns = []map[string]float64{
	{"itl_p50_ms": 16.587, "latency_p50_ms": 549.277, "latency_p95_ms": 598.970, "output_token_throughput": 117.876, "tpot_p50_ms": 16.751, "tpot_p95_ms": 18.233, "ttft_p50_ms": 31.113, "ttft_p95_ms": 40.313, "ttft_p99_ms": 53.639},
	{"itl_p50_ms": 18.067, "latency_p50_ms": 591.551, "latency_p95_ms": 646.321, "output_token_throughput": 108.381, "tpot_p50_ms": 18.071, "tpot_p95_ms": 19.599, "ttft_p50_ms": 33.842, "ttft_p95_ms": 41.631, "ttft_p99_ms": 45.869},
	{"itl_p50_ms": 16.394, "latency_p50_ms": 545.283, "latency_p95_ms": 591.062, "output_token_throughput": 117.774, "tpot_p50_ms": 16.601, "tpot_p95_ms": 17.954, "ttft_p50_ms": 33.738, "ttft_p95_ms": 42.201, "ttft_p99_ms": 46.545},
	{"itl_p50_ms": 17.660, "latency_p50_ms": 577.983, "latency_p95_ms": 630.131, "output_token_throughput": 110.702, "tpot_p50_ms": 17.596, "tpot_p95_ms": 19.109, "ttft_p50_ms": 32.988, "ttft_p95_ms": 43.357, "ttft_p99_ms": 45.978},
	{"itl_p50_ms": 15.815, "latency_p50_ms": 527.467, "latency_p95_ms": 632.266, "output_token_throughput": 121.514, "tpot_p50_ms": 15.934, "tpot_p95_ms": 19.250, "ttft_p50_ms": 30.578, "ttft_p95_ms": 40.320, "ttft_p99_ms": 47.539},
}

// cpuVLLMFit returns the lane of cpuVLLMRuns with the catalog's vLLM >=
// 0.8 assumptions, its load, and the runs as observations with their TTFT
// p50 and p95/p99 scaled by ttft50 and ttftTail and their per-token times
// by perToken (throughput by its inverse): the same runs as a machine of
// another speed or spread would measure them.
func cpuVLLMFit(t *testing.T, ttft50, ttftTail, perToken float64) (Lane, Load, []Observation) {
	t.Helper()
	m := ModelArch{ID: "tiny-qwen3", Params: 19710848, Layers: 2, Hidden: 128, Heads: 2, KVHeads: 1, HeadDim: 64, Vocab: 151680}
	g, ok := LookupGPU("CPU")
	if !ok {
		t.Fatal("the catalog has no CPU")
	}
	a := DefaultAssumptions(g)
	o, _ := FrontEnd("vllm", "0.32.0", "chat")
	a.RequestOverheadMs, a.StepOverheadMs, a.FrontEndTokenUs = o.RequestMs, o.StepMs, o.TokenUs
	l, err := NewLane(m, Hardware{GPU: g, Count: 1, BytesPerElem: 4, Assume: a},
		EngineConfig{MaxNumSeqs: 8, MaxBatchedTokens: 4096, ChunkedPrefill: true, PrefixCaching: true, BlockSize: 16}, 1024)
	if err != nil {
		t.Fatal(err)
	}
	load := Load{InputTokens: 160, OutputTokens: 32, Concurrency: 2, Requests: 48, Warmup: 4}
	var obs []Observation
	for i, meas := range cpuVLLMRuns {
		scaled := map[string]float64{}
		for k, v := range meas {
			switch k {
			case "ttft_p50_ms":
				v *= ttft50
			case "ttft_p95_ms", "ttft_p99_ms":
				v *= ttftTail
			case "output_token_throughput":
				v /= perToken
			default:
				v *= perToken
			}
			scaled[k] = v
		}
		obs = append(obs, Observation{Name: fmt.Sprintf("run %d", i+1), Lane: l, Load: load, Runs: 1, Measured: scaled})
	}
	return l, load, obs
}

// A fit of real vLLM's runs reproduces their TTFT whatever it starts from
// and whichever machine measured them. Its search once ended in a worse
// minimum (no jitter, 12.9 ms a request: cost 62.5 against 54.2 with the
// prior) from the catalog's start, whose TTFT p50 was 16% over the runs'
// (CI on 3aa1ccf): three grid points refined were too few. And with
// another machine's figures (TTFT p50 15% lower, its tail 5% higher,
// tokens 15% slower), the fit held the request overhead, which TTFT alone
// cannot resolve, at the catalog's 7 ms although the runs' best fit is
// about 1 ms: the jitter then fell to none and the fit missed its own
// lane's TTFT p50 by 52% (MAPE 10.4% against 6.5%); CI on a2deecb missed
// the check shape's by 21% the same way. A start the evidence rules out is
// no longer held.
func TestFitOfRealVLLMRunsReproducesTheirTTFT(t *testing.T) {
	for _, c := range []struct {
		name                       string
		ttft50, ttftTail, perToken float64
		requestMs, stepMs, maxMAPE float64
		// maxTTFT bounds the miss of the runs' TTFT p50: the wider
		// variant's p50 lies below what the step loop allows at its
		// tokens' speed (a request waits for the running decode step),
		// so no parameters reach it.
		maxTTFT float64
	}{
		{"as measured, catalog start", 1, 1, 1, 7, 2, 0.058, 0.10},
		{"as measured, 1 ms a request and 4 a step", 1, 1, 1, 1, 4, 0.058, 0.10},
		{"wider TTFT, slower tokens, catalog start", 0.85, 1.05, 1.15, 7, 2, 0.07, 0.20},
		{"lower TTFT p50, faster tokens, 15 ms a request", 0.9, 1, 0.85, 15, 1, 0.058, 0.10},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l, load, obs := cpuVLLMFit(t, c.ttft50, c.ttftTail, c.perToken)
			a := l.Hardware.Assume
			start := ParamsOf(a)
			start.RequestOverheadMs, start.StepOverheadMs = c.requestMs, c.stepMs
			res, err := Fit(obs, start)
			if err != nil {
				t.Fatal(err)
			}
			mean := 0.0
			for _, o := range obs {
				mean += o.Measured["ttft_p50_ms"] / float64(len(obs))
			}
			lane := l
			lane.Hardware.Assume = res.Params.Apply(a)
			e, err := lane.Estimate(load, 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("fit %+v, MAPE %.1f%%: TTFT p50 %.1f ms against the runs' mean %.1f; request overhead %+v", res.Params, 100*res.MAPE, e.TTFTMs, mean, res.Identification["request_overhead_ms"])
			if rel := e.TTFTMs/mean - 1; math.Abs(rel) > c.maxTTFT {
				t.Errorf("the fit's TTFT p50 %.1f ms is %+.0f%% off the runs' %.1f ms", e.TTFTMs, 100*rel, mean)
			}
			if res.MAPE > c.maxMAPE {
				t.Errorf("fit error %.1f%% MAPE, over %.1f%%: a worse minimum", 100*res.MAPE, 100*c.maxMAPE)
			}
			if id := res.Identification["request_overhead_ms"]; id.Held && math.Abs(res.Params.RequestOverheadMs/c.requestMs-1) < 1e-9 && res.MAPE > 0.058 {
				t.Errorf("request overhead held at the start's %.1f ms though the fit misses by %.1f%%", c.requestMs, 100*res.MAPE)
			}
			if res.Params.RequestJitterMs < 2 {
				t.Errorf("request jitter %.2f ms: the runs' TTFT p95 is 10 ms over their p50", res.Params.RequestJitterMs)
			}
		})
	}
}
