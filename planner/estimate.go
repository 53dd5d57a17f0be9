package planner

import (
	"crypto/sha256"
	"fmt"
	"math"
	"strings"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner/arch"
	"github.com/infercrane/infercrane/planner/perf"
)

// lookupGPU finds a GPU type in the catalog (planner/perf).
func lookupGPU(t string) (perf.GPU, bool) { return perf.LookupGPU(t) }

// ResolveModelArch returns the architecture the estimator uses for m: its
// config.json's (pinned: the block's config file, the catalog's or the
// Hugging Face cache's; nil: none) with the model block's attribute
// overrides applied. It reports the missing attribute names when neither
// source gives the parameters, layers, KV heads and head dimension.
func ResolveModelArch(m *lang.Model, pinned *arch.Pinned) (perf.ModelArch, []string) {
	var a perf.ModelArch
	if pinned != nil {
		a = perf.FromConfig(*pinned)
	}
	a.ID = m.ID
	overridden := false
	for _, n := range []string{"params", "layers", "hidden", "heads", "kv_heads", "head_dim", "vocab"} {
		_, set := m.AttrRanges[n]
		overridden = overridden || set
	}
	if overridden && a.Source != "" {
		a.Source += ", with the model block's overrides"
	}
	if m.Params > 0 {
		a.Params = m.Params
		a.ActiveParams, a.LinearParams = 0, 0 // the config's split no longer adds up
	}
	if m.Params > 0 || m.Hidden > 0 {
		a.MLPWidth = 0 // derived from the overridden parameters and width (perf.ModelArch.MLPWidth)
	}
	if m.Layers > 0 {
		a.Layers = m.Layers
	}
	if m.Hidden > 0 {
		a.Hidden = m.Hidden
	}
	if m.Heads > 0 {
		a.Heads = m.Heads
	}
	if m.KVHeads > 0 {
		a.KVHeads = m.KVHeads
	}
	if m.HeadDim > 0 {
		a.HeadDim = m.HeadDim
	}
	if m.Vocab > 0 {
		a.Vocab = m.Vocab
	}
	if a.KVHeads == 0 {
		a.KVHeads = a.Heads
	}
	if a.HeadDim == 0 && a.Heads > 0 && a.Hidden > 0 {
		a.HeadDim = a.Hidden / a.Heads
	}
	var missing []string
	if a.Params <= 0 {
		missing = append(missing, "params")
	}
	if a.Layers <= 0 {
		missing = append(missing, "layers")
	}
	if a.KVHeads <= 0 {
		missing = append(missing, "kv_heads (or heads)")
	}
	if a.HeadDim <= 0 {
		missing = append(missing, "head_dim (or hidden and heads)")
	}
	return a, missing
}

// hardware builds the performance model's view of a lane's deployment, applying
// the GPU block's overrides and the runtime's memory utilisation. It
// returns false when the GPU type is not in the catalog.
func hardware(g *lang.GPU, in LaneInputs) (perf.Hardware, bool) {
	cat, ok := lookupGPU(g.Type)
	if !ok {
		return perf.Hardware{}, false
	}
	a := perf.DefaultAssumptions(cat)
	if g.PrefillMFU != nil {
		a.PrefillMFU = *g.PrefillMFU
	}
	if g.DecodeEfficiency != nil {
		a.DecodeEfficiency = *g.DecodeEfficiency
	}
	if g.PricePerSecond != nil {
		cat.PricePerSecond = *g.PricePerSecond
	}
	a.GPUMemoryUtilization = in.GPUMemoryUtil
	if o, ok := perf.FrontEnd(in.RuntimeEngine, in.RuntimeVersion, in.frontEndAPI()); ok {
		// The engine version's costs outside the GPU (its front end, its
		// per-step overhead); a calibration's fit replaces the first two.
		o.Apply(&a, cat)
	}
	return perf.Hardware{GPU: cat, Count: in.GPUCount, BytesPerElem: perf.BytesPerElem(in.RuntimeDtype), Assume: a}, true
}

// frontEndAPI is the API whose front end serves the lane's requests
// (LaneInputs.FrontEndAPI, else the shape's api).
func (in LaneInputs) frontEndAPI() string {
	if in.FrontEndAPI != "" {
		return in.FrontEndAPI
	}
	return in.API
}

// warmsAtConcurrency reports whether the lane's warmup sends at least as
// many requests as its concurrency, or runs for a time (whose requests
// the planner cannot count), before the measured requests.
func (in LaneInputs) warmsAtConcurrency() bool {
	return in.Warmup >= in.Concurrency || in.WarmupSeconds > 0
}

// assumption describes the constants used for one GPU block.
func assumption(g *lang.GPU) (Assumption, bool) {
	h, ok := hardware(g, LaneInputs{GPUCount: max(g.Count, 1), Runtime: engine.Default()})
	if !ok {
		return Assumption{}, false
	}
	a := Assumption{
		GPU: g.Name, GPUType: h.GPU.Name, Count: h.Count,
		MemoryGB: h.GPU.MemoryGB, BandwidthGBs: h.GPU.BandwidthGBs, BF16TFLOPS: h.GPU.BF16TFLOPS,
		PricePerSecond:      h.GPU.PricePerSecond,
		PrefillMFU:          h.Assume.PrefillMFU,
		DecodeEfficiency:    h.Assume.DecodeEfficiency,
		StepOverheadMs:      h.Assume.StepOverheadMs,
		RequestOverheadMs:   h.Assume.RequestOverheadMs,
		LoadBandwidthGBs:    h.Assume.LoadBandwidthGBs,
		ServerStartSeconds:  h.Assume.ServerStartSeconds,
		ActivationReserveGB: h.Assume.ActivationReserveGB,
	}
	if g.PrefillMFU != nil {
		a.Overridden = append(a.Overridden, "prefill_mfu")
	}
	if g.DecodeEfficiency != nil {
		a.Overridden = append(a.Overridden, "decode_efficiency")
	}
	if g.PricePerSecond != nil {
		a.Overridden = append(a.Overridden, "price_per_second")
	}
	return a, true
}

// Billed reports whether a lane's executor pays for GPU time: a simulated
// one (lang.Capabilities.Simulated) does not, and what its lanes would
// cost on their GPU is notional.
func Billed(in LaneInputs) bool { return !in.Capabilities.Simulated }

// deploys reports whether an executor type starts a server (and so pays
// for model load and start-up); the endpoint executor uses a running one.
func deploys(in LaneInputs) bool { return !in.Capabilities.ExistingServer }

// round rounds x to d decimal places, so plans are byte-identical across
// platforms whose floating-point results differ in the last bits.
func round(x float64, d int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	p := math.Pow10(d)
	return math.Round(x*p) / p
}

// roundEstimate rounds every figure of e for display and hashing.
func roundEstimate(e Estimate) Estimate {
	for _, f := range []*float64{&e.TTFTMs, &e.TTFTP95Ms, &e.TTFTP99Ms, &e.TPOTMs, &e.TPOTP95Ms, &e.TPOTP99Ms,
		&e.ITLP50Ms, &e.ITLP95Ms, &e.ITLP99Ms, &e.LatencyMs, &e.LatencyP95Ms, &e.LatencyP99Ms, &e.Preemptions} {
		*f = round(*f, 3)
	}
	e.OutputTokenThroughput = round(e.OutputTokenThroughput, 3)
	e.RequestThroughput = round(e.RequestThroughput, 4)
	e.RunSeconds = round(e.RunSeconds, 3)
	e.WallSeconds = round(e.WallSeconds, 3)
	e.GPUSeconds = round(e.GPUSeconds, 3)
	e.StartupSeconds = round(e.StartupSeconds, 3)
	e.CostUSD = round(e.CostUSD, 6)
	return e
}

// estimate fills every lane's Estimate. A deployment's start-up (model load
// and server start) is shared equally by its lanes that have work.
func estimate(lanes []*lanePlan) {
	cache := map[[sha256.Size]byte]perf.Estimate{}
	working := map[string]int{}
	for _, l := range lanes {
		if l.Work() && l.RunsToDo() > 0 {
			working[l.Deployment]++
		}
	}
	loads, peers := estimateLoads(lanes)
	for i, l := range lanes {
		e := Estimate{}
		switch {
		case len(l.Inputs.Pending) > 0:
			// noted by preflight
		case len(l.missing) > 0:
			l.Notes = append(l.Notes, "estimate unavailable: model architecture unknown ("+strings.Join(l.missing, ", ")+")")
		case !l.hwOK:
			l.Notes = append(l.Notes, "estimate unavailable: GPU type unknown")
		case l.Perf == nil:
			// preflight reports the runtime settings
		case l.Inputs.Search != nil:
			e = estimateSearch(l, working[l.Deployment])
		default:
			ld := &loads[i]
			// Only a lane with a peer can share its estimate: the others'
			// keys are not worth computing.
			shared := peers[ld.peer] > 1
			var key [sha256.Size]byte
			est, ok := perf.Estimate{}, false
			if shared {
				key = estimateKey(l.Perf, ld.load, ld.workload, l.Runs)
				est, ok = cache[key]
			}
			if !ok {
				var err error
				if est, err = l.Perf.Estimate(ld.load, l.Runs); err != nil {
					l.Notes = append(l.Notes, "estimate unavailable: "+err.Error())
					break
				}
				if shared {
					cache[key] = est
				}
			}
			e.Estimate = est
			if n := ttftNote(est.TTFTParts); n != "" {
				l.Notes = append(l.Notes, n)
			}
			// A warmup bounded by time lasts at most that long (a count may end it sooner).
			e.RunSeconds += l.Inputs.WarmupSeconds
			e.Available = true
			u := l.uncertainty
			e.Uncertainty = &u
			if n := l.RunsToDo(); n > 0 {
				if deploys(l.Inputs) {
					e.StartupSeconds = perf.StartupSeconds(l.arch, l.hw) / float64(working[l.Deployment])
				}
				e.WallSeconds = e.StartupSeconds + float64(n)*e.RunSeconds
				if Billed(l.Inputs) {
					e.GPUSeconds = e.WallSeconds * float64(l.hw.Count)
					e.CostUSD = e.GPUSeconds * l.hw.GPU.PricePerSecond
				}
			}
		}
		if l.Inputs.Search != nil && !e.Available {
			planSearch(l, nil)
		}
		l.Estimate = roundEstimate(e)
	}
}

// laneEstimateLoad is a lane's load as the estimator takes it (laneLoad)
// and its estimatePeer.
type laneEstimateLoad struct {
	load     perf.Load
	workload string
	peer     estimatePeer
}

// estimatePeer is a few of the inputs estimateKey identifies an estimate
// by, a comparable value cheap to make: lanes with equal keys have equal
// peers, so a lane whose peer no other lane has shares its estimate with
// none, and estimate does not compute its key (the JSON of every input and
// its SHA-256 were 6% of a plan of 10,000 distinct lanes).
type estimatePeer struct {
	model, gpu                                           string
	params                                               int64
	gpus, kvBlocks, input, output, concurrency, requests int
	warmup, runs                                         int
	seed                                                 int64
	workload                                             string
}

// estimateLoads returns the load of each lane with a performance model
// (the zero value for the others) and how many lanes have each peer.
func estimateLoads(lanes []*lanePlan) ([]laneEstimateLoad, map[estimatePeer]int) {
	loads := make([]laneEstimateLoad, len(lanes))
	peers := make(map[estimatePeer]int, len(lanes))
	for i, l := range lanes {
		if l.Perf == nil || l.Inputs.Search != nil {
			continue
		}
		ld, wk := laneLoad(l.Inputs, l.Perf.Engine.PrefixCaching)
		loads[i] = laneEstimateLoad{load: ld, workload: wk, peer: peerOf(l.Perf, ld, wk, l.Runs)}
		peers[loads[i].peer]++
	}
	return loads, peers
}

// peerOf is the estimatePeer of estimateKey's inputs.
func peerOf(p *perf.Lane, l perf.Load, workload string, runs int) estimatePeer {
	return estimatePeer{model: p.Model.ID, gpu: p.Hardware.GPU.Name, params: p.Model.Params,
		gpus: p.Hardware.GPUs(), kvBlocks: p.Engine.KVBlocks, input: l.InputTokens, output: l.OutputTokens,
		concurrency: l.Concurrency, requests: l.Requests, warmup: l.Warmup, runs: runs,
		seed: l.Seed, workload: workload}
}

// totals sums the lanes of one screen ("" for the whole plan).
func totals(p *Plan, screen string) Totals {
	var t Totals
	for _, l := range p.Lanes {
		if screen != "" && l.Screen != screen {
			continue
		}
		switch l.Action {
		case ActionNoop:
			t.Unchanged++
		case ActionDrop:
			t.Dropped++
		}
		if !l.Work() {
			continue
		}
		t.LanesToRun++
		t.Runs += l.ExpectedRuns()
		t.Requests += l.ExpectedRuns() * l.RequestsPerRun
		t.RunsAtMost += l.RunsToDo()
		t.RequestsAtMost += l.RunsToDo() * l.RequestsPerRun
		t.GPUSeconds += l.Estimate.GPUSeconds
		t.CostUSD += l.Estimate.CostUSD
		if !l.Estimate.Available {
			t.WithoutEstimate++
		}
	}
	if t.RunsAtMost == t.Runs {
		t.RunsAtMost, t.RequestsAtMost = 0, 0
	}
	t.GPUSeconds = round(t.GPUSeconds, 3)
	t.CostUSD = round(t.CostUSD, 6)
	return t
}

// assumptions lists the estimator constants of every GPU block a lane uses.
func assumptions(cfg *lang.Config, lanes []*lanePlan) []Assumption {
	used := map[string]bool{}
	for _, l := range lanes {
		used[l.GPU] = true
	}
	out := []Assumption{}
	for _, name := range sortedKeys(used) {
		if a, ok := assumption(cfg.GPUs[name]); ok {
			out = append(out, a)
		}
	}
	return out
}

// ttftNote says when most of a lane's TTFT (half of the mean and at least
// ttftNoteMs) is spent queued in the engine before a step schedules the
// request: requests sent together wait for each other's prefills, or the
// deployment is saturated at the lane's load (perf.TTFTParts).
func ttftNote(p *perf.TTFTParts) string {
	if p == nil || p.QueuedMs < p.MeanMs/2 || p.QueuedMs < ttftNoteMs {
		return ""
	}
	return fmt.Sprintf("TTFT mostly queueing: of a request's mean TTFT of %s, %s is queued in the engine behind other requests (for a batch slot, KV cache or the step's token budget), not its own prefill (%s)", fmtMs(p.MeanMs), fmtMs(p.QueuedMs), fmtMs(p.PrefillMs))
}

// ttftNoteMs is the least queueing ttftNote reports.
const ttftNoteMs = 50
