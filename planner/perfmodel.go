package planner

import (
	"github.com/infercrane/infercrane/planner/perf"
)

// resolvePerf resolves the lane's runtime settings and performance model.
// A runtime arg that cannot be parsed or an engine that would refuse to
// start is kept in l.perfErr for preflight.
func resolvePerf(l *lanePlan) {
	if len(l.missing) > 0 || !l.hwOK {
		return
	}
	in := l.Inputs
	rb := perf.RuntimeBlock{Engine: in.RuntimeEngine, Version: in.RuntimeVersion, Args: in.RuntimeArgs,
		MaxNumSeqs: in.MaxNumSeqs, MaxNumBatchedTokens: in.MaxBatchedTokens}
	if r := l.blocks.runtime; r != nil {
		rb.GPUMemoryUtilization = r.GPUMemoryUtilization
	}
	rs, err := perf.ResolveRuntime(rb, l.hw.GPU, l.hw.Count, in.MaxContext)
	if err != nil {
		l.perfErr = err
		return
	}
	l.hw.Assume.GPUMemoryUtilization = rs.GPUMemoryUtilization
	hw := l.hw
	hw.Count = rs.TensorParallel
	srv, err := perf.NewLane(l.arch, hw, rs.Engine(), in.MaxContext)
	if err != nil {
		l.perfErr = err
		return
	}
	srv.Runtime = &rs
	l.Perf = &srv
}

// estimateKey identifies a virtual-time estimate: lanes with equal keys
// (the same model, hardware, engine and load in several screens) share one.
type estimateKey struct {
	model    perf.ModelArch
	hardware perf.Hardware
	engine   perf.EngineConfig
	load     perf.Load
	runs     int
}

// laneLoad is the load generator's side of a lane's runs (run 1's seed).
func laneLoad(in LaneInputs) perf.Load {
	return perf.Load{
		InputTokens: in.InputTokens, OutputTokens: in.OutputTokens,
		Concurrency: in.Concurrency, RequestRate: in.RequestRate, Arrival: in.Arrival, Burstiness: in.Burstiness,
		Requests: in.Requests, Warmup: in.Warmup, Seed: in.Seed,
	}
}
