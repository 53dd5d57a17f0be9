package executor

// The built-in "sim" executor, embedded in the runner's package: each
// deployment is an in-process simulated engine (executor/sim) on a
// loopback port, in model timing mode by default, so a screen runs on any
// laptop in seconds.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	enginesim "github.com/infercrane/infercrane/executor/sim"
	"github.com/infercrane/infercrane/planner"
)

// SimType is the sim executor's type name (executor "sim" in a spec).
const SimType = "sim"

// SimSchema describes the sim executor block; its defaults are the only ones
// the sim executor has (the planner applies them).
func SimSchema() Schema {
	return Schema{Attributes: []Attribute{
		{Name: "timing", Type: AttrString, Enum: []string{enginesim.TimingModel, enginesim.TimingConstant}, Default: enginesim.TimingModel, Doc: `"model": token timing from the roofline model of the lane's model and GPU; "constant": fixed ttft and itl`},
		{Name: "speedup", Type: AttrNumber, Min: Bound(0.001), Max: Bound(1e6), Default: 1.0, Doc: "divide simulated time by this factor in model timing (1: real time)"},
		{Name: "ttft", Type: AttrDuration, Min: Seconds(0), Max: Seconds(10 * time.Minute), Default: "20ms", Doc: "time to first token in constant timing"},
		{Name: "itl", Type: AttrDuration, Min: Seconds(0), Max: Seconds(time.Minute), Default: "5ms", Doc: "inter-token latency in constant timing"},
		{Name: "max_waiting", Type: AttrNumber, Whole: true, Min: Bound(0), Max: Bound(1e9), Default: 0.0, Doc: "cap on queued requests; more are answered 503 (0: unlimited)"},
	}}
}

// SimSettings are a lane's resolved sim executor settings, as the plan
// carries them.
type SimSettings struct {
	Timing     string        `json:"timing"`
	Speedup    float64       `json:"speedup"`
	TTFT       time.Duration `json:"ttft"`
	ITL        time.Duration `json:"itl"`
	MaxWaiting int           `json:"max_waiting"`
}

// SimExecutor runs simulated engines in this process.
type SimExecutor struct {
	settings SimSettings

	mu      sync.Mutex
	servers map[string]*enginesim.Server
}

// NewSim makes a sim executor from a lane's resolved executor settings.
func NewSim(settings map[string]any) (Executor, error) {
	var s SimSettings
	if err := DecodeSettings(SimType, SimSchema(), settings, &s); err != nil {
		return nil, err
	}
	return &SimExecutor{settings: s, servers: map[string]*enginesim.Server{}}, nil
}

// Settings returns the settings the executor runs with.
func (x *SimExecutor) Settings() SimSettings { return x.settings }

// Options returns the engine options for a deployment.
func (x *SimExecutor) Options(d Deployment) enginesim.Options {
	return enginesim.Options{
		Model:            d.ModelID,
		ModelID:          d.ModelID,
		MaxModelLen:      d.MaxContext,
		Timing:           x.settings.Timing,
		TTFT:             x.settings.TTFT,
		ITL:              x.settings.ITL,
		GPU:              d.GPUType,
		GPUCount:         d.GPUCount,
		MaxNumSeqs:       d.MaxNumSeqs,
		MaxBatchedTokens: d.MaxBatchedTokens,
		GPUMemoryUtil:    d.GPUMemoryUtil,
		MaxWaiting:       x.settings.MaxWaiting,
		Seed:             d.Seed,
		Speedup:          x.settings.Speedup,
		Server:           d.Perf,
	}
}

// Deploy starts a simulated engine on a free loopback port.
func (x *SimExecutor) Deploy(ctx context.Context, d Deployment) (*Server, error) {
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
	return &Server{DeploymentID: d.ID, BaseURL: s.URL, Model: s.Engine.Options().Model, Handle: s.URL, Info: info}, nil
}

// Run drives one run with the built-in load generator.
func (x *SimExecutor) Run(ctx context.Context, s *Server, r RunSpec) (*RunResult, error) {
	x.mu.Lock()
	_, ok := x.servers[s.Handle]
	x.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("simulated engine %s is not running (it was torn down or never deployed)", s.Handle)
	}
	return RunLoad(ctx, s, r, "")
}

// Teardown stops the engine; stopping one already stopped is a no-op.
func (x *SimExecutor) Teardown(ctx context.Context, s *Server) error {
	x.mu.Lock()
	srv := x.servers[s.Handle]
	delete(x.servers, s.Handle)
	x.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}

// Schema implements Describer.
func (x *SimExecutor) Schema() Schema { return SimSchema() }

// ValidateSim checks resolved sim executor settings as NewSim reads them.
func ValidateSim(settings map[string]any) error {
	_, err := NewSim(settings)
	return err
}

// CheckSimDeployment reports what Deploy would refuse of d that the plan
// alone decides, without starting an engine: the settings, and in model
// timing a performance model to serve from (the plan's, which needs the
// model's architecture, or a catalog model and GPU). validate and plan run
// it (plugins.Builtin.CheckDeployment), so apply never meets it.
func CheckSimDeployment(d Deployment) error {
	e, err := NewSim(d.Config)
	if err != nil {
		return err
	}
	x := e.(*SimExecutor)
	if x.settings.Timing == enginesim.TimingModel && d.Perf == nil {
		if _, ok := planner.LookupModel(d.ModelID); !ok {
			return fmt.Errorf("the sim executor's model timing serves from the model's architecture, and %s is neither in the catalog nor given one; set the architecture attributes the plan's \"estimates unavailable\" warning names on the model block, or timing = %q in the executor block", d.ModelID, enginesim.TimingConstant)
		}
	}
	return x.Options(d).Validate()
}
