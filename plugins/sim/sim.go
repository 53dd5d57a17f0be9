// Package sim is the built-in "sim" executor: each deployment is an
// in-process simulated engine (executor/sim) on a loopback port, in model
// timing mode by default, so a screen runs on any laptop in seconds.
package sim

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/infercrane/infercrane/executor"
	enginesim "github.com/infercrane/infercrane/executor/sim"
)

// Type is the executor type name.
const Type = "sim"

// Schema describes the sim executor block.
func Schema() executor.Schema {
	return executor.Schema{Attributes: []executor.Attribute{
		{Name: "timing", Type: executor.AttrString, Enum: []string{enginesim.TimingModel, enginesim.TimingConstant}, Doc: `"model" (default): token timing from the roofline model of the lane's model and GPU; "constant": fixed ttft and itl`},
		{Name: "speedup", Type: executor.AttrNumber, Min: executor.Bound(0.001), Max: executor.Bound(1e6), Doc: "divide simulated time by this factor in model timing (default 1: real time)"},
		{Name: "ttft", Type: executor.AttrDuration, Min: executor.Seconds(0), Max: executor.Seconds(10 * time.Minute), Doc: `time to first token in constant timing (default "20ms")`},
		{Name: "itl", Type: executor.AttrDuration, Min: executor.Seconds(0), Max: executor.Seconds(time.Minute), Doc: `inter-token latency in constant timing (default "5ms")`},
		{Name: "max_waiting", Type: executor.AttrNumber, Whole: true, Min: executor.Bound(0), Max: executor.Bound(1e9), Doc: "cap on queued requests; more are answered 503 (default 0: unlimited)"},
	}}
}

// Executor runs simulated engines in this process.
type Executor struct {
	attrs executor.Attrs

	mu      sync.Mutex
	servers map[string]*enginesim.Server
}

// New makes a sim executor from the executor block's attributes.
func New(cfg map[string]any) (executor.Executor, error) {
	a := executor.Attrs(cfg)
	if err := a.Check(Type, Schema()); err != nil {
		return nil, err
	}
	return &Executor{attrs: a, servers: map[string]*enginesim.Server{}}, nil
}

// Options returns the engine options for a deployment.
func (x *Executor) Options(d executor.Deployment) enginesim.Options {
	return enginesim.Options{
		Model:            d.ModelID,
		ModelID:          d.ModelID,
		MaxModelLen:      d.MaxContext,
		Timing:           x.attrs.String("timing", enginesim.TimingModel),
		TTFT:             x.attrs.Duration("ttft", 20*time.Millisecond),
		ITL:              x.attrs.Duration("itl", 5*time.Millisecond),
		GPU:              d.GPUType,
		GPUCount:         d.GPUCount,
		MaxNumSeqs:       d.MaxNumSeqs,
		MaxBatchedTokens: d.MaxBatchedTokens,
		GPUMemoryUtil:    d.GPUMemoryUtil,
		MaxWaiting:       int(x.attrs.Number("max_waiting", 0)),
		Seed:             d.Seed,
		Speedup:          x.attrs.Number("speedup", 1),
		Server:           d.Perf,
	}
}

// Deploy starts a simulated engine on a free loopback port.
func (x *Executor) Deploy(ctx context.Context, d executor.Deployment) (*executor.Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts := x.Options(d)
	s, err := enginesim.Listen("127.0.0.1:0", opts)
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	x.servers[s.URL] = s
	x.mu.Unlock()
	info := map[string]string{
		"runtime":         "infercrane-sim",
		"runtime_version": enginesim.Version,
		"timing":          opts.Timing,
		"gpu":             "simulated " + d.GPUType,
	}
	if opts.Timing == enginesim.TimingModel {
		info["speedup"] = strconv.FormatFloat(opts.Speedup, 'g', -1, 64)
	}
	return &executor.Server{DeploymentID: d.ID, BaseURL: s.URL, Model: s.Engine.Options().Model, Handle: s.URL, Info: info}, nil
}

// Run drives one run with the built-in load generator.
func (x *Executor) Run(ctx context.Context, s *executor.Server, r executor.RunSpec) (*executor.RunResult, error) {
	x.mu.Lock()
	_, ok := x.servers[s.Handle]
	x.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("simulated engine %s is not running (it was torn down or never deployed)", s.Handle)
	}
	return executor.RunLoad(ctx, s, r, "")
}

// Teardown stops the engine; stopping one already stopped is a no-op.
func (x *Executor) Teardown(ctx context.Context, s *executor.Server) error {
	x.mu.Lock()
	srv := x.servers[s.Handle]
	delete(x.servers, s.Handle)
	x.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}

// Schema implements executor.Describer.
func (x *Executor) Schema() executor.Schema { return Schema() }

// Validate checks an executor block's attributes as New reads them.
func Validate(cfg map[string]any) error {
	_, err := New(cfg)
	return err
}
