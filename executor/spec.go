package executor

import (
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/perf"
)

// DeploymentFor returns the deployment a lane runs on. Every lane of one
// deployment has the same model, GPU, runtime and executor inputs.
func DeploymentFor(l *planner.Lane, applyID, logDir string) Deployment {
	in := l.Inputs.Revealed()
	return Deployment{
		ID:           l.Deployment,
		ApplyID:      applyID,
		Screen:       l.Screen,
		ModelID:      in.ModelID,
		Revision:     in.Revision,
		MaxContext:   in.MaxContext,
		GPUType:      in.GPUType,
		GPUCount:     max(in.GPUCount, 1),
		Runtime:      in.Runtime,
		Seed:         in.Seed,
		ExecutorType: in.ExecutorType,
		Config:       l.RevealedSettings(),
		LogDir:       logDir,
		Perf:         lanePerf(l),
	}
}

// lanePerf is the lane's resolved performance model, or nil.
func lanePerf(l *planner.Lane) *perf.Lane {
	if l.Perf == nil {
		return nil
	}
	s := *l.Perf
	s.Runtime = nil // provenance, not needed to serve
	return &s
}

// RunSpecFor returns run n (1-based) of a lane. Each run gets its own seed
// (the lane's seed + n - 1), so repeated runs do not send identical prompts
// and a resumed apply sends exactly what an uninterrupted one would, and
// prompts salted with the lane's id, so lanes sharing a server do not
// share prompts (and its prefix cache) either.
func RunSpecFor(l *planner.Lane, n int) RunSpec {
	in := l.Inputs
	return RunSpec{
		Lane: l.ID,
		Run:  n,
		Load: loadgen.Config{
			Seed:       in.Seed + int64(n-1),
			PromptSalt: l.ID,
			SLO:        loadgen.SLO{TTFTMs: in.SLOTTFTMs, TPOTMs: in.SLOTPOTMs, LatencyMs: in.SLOLatencyMs},
			Workload:   in.Workload,
		}.WithShape(in.Settings),
	}
}
