package sim

// The built-in "sim" executor, next to the engine it deploys: each
// deployment is an in-process simulated engine on a loopback port, in model
// timing mode by default, so a screen runs on any laptop in seconds.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/perf"
)

// Type is the sim executor's type name (executor "sim" in a spec).
const Type = "sim"

// Capabilities are what this executor does, declared where it registers
// (its Schema): see lang.Capabilities.
var Capabilities = lang.Capabilities{Simulated: true, Tokenizes: true}

// Schema describes the sim executor block; its defaults are the only ones
// the sim executor has (the planner applies them).
func Schema() executor.Schema {
	return executor.Schema{Attributes: []executor.Attribute{
		{Name: "timing", Type: executor.AttrString, Enum: []string{TimingModel, TimingConstant}, Default: TimingModel, Doc: `"model": token timing from the roofline model of the lane's model and GPU; "constant": fixed ttft and itl`},
		{Name: "speedup", Type: executor.AttrNumber, Min: executor.Bound(0.001), Max: executor.Bound(1e6), Default: 1.0, Doc: "divide simulated time by this factor in model timing (1: real time)"},
		{Name: "ttft", Type: executor.AttrDuration, Min: executor.Seconds(0), Max: executor.Seconds(10 * time.Minute), Default: "20ms", Doc: "time to first token in constant timing"},
		{Name: "itl", Type: executor.AttrDuration, Min: executor.Seconds(0), Max: executor.Seconds(time.Minute), Default: "5ms", Doc: "inter-token latency in constant timing"},
		{Name: "max_waiting", Type: executor.AttrNumber, Whole: true, Min: executor.Bound(0), Max: executor.Bound(1e9), Default: 0.0, Doc: "cap on queued requests; more are answered 503 (0: unlimited)"},
	}, Capabilities: Capabilities}
}

// Settings are a lane's resolved sim executor settings, as the plan
// carries them.
type Settings struct {
	Timing     string        `json:"timing"`
	Speedup    float64       `json:"speedup"`
	TTFT       time.Duration `json:"ttft"`
	ITL        time.Duration `json:"itl"`
	MaxWaiting int           `json:"max_waiting"`
}

// Executor runs simulated engines in this process.
type Executor struct {
	settings Settings

	mu      sync.Mutex
	servers map[string]*Server
}

// New makes a sim executor from a lane's resolved executor settings.
func New(settings map[string]any) (executor.Executor, error) {
	var s Settings
	if err := executor.DecodeSettings(Type, Schema(), settings, &s); err != nil {
		return nil, err
	}
	return &Executor{settings: s, servers: map[string]*Server{}}, nil
}

// Settings returns the settings the executor runs with.
func (x *Executor) Settings() Settings { return x.settings }

// Options returns the engine options for a deployment.
func (x *Executor) Options(d executor.Deployment) Options {
	return Options{
		Model:       d.ModelID,
		ModelID:     d.ModelID,
		MaxModelLen: d.MaxContext,
		Timing:      x.settings.Timing,
		TTFT:        x.settings.TTFT,
		ITL:         x.settings.ITL,
		GPU:         d.GPUType,
		GPUCount:    d.GPUCount,
		Runtime:     d.Runtime,
		MaxWaiting:  x.settings.MaxWaiting,
		Seed:        d.Seed,
		Speedup:     x.settings.Speedup,
		Server:      d.Perf,
	}
}

// Deploy starts a simulated engine on a free loopback port.
func (x *Executor) Deploy(ctx context.Context, d executor.Deployment) (*executor.Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts := x.Options(d)
	s, err := Listen("127.0.0.1:0", opts)
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	x.servers[s.URL] = s
	x.mu.Unlock()
	info := map[string]string{
		"runtime":         "infercrane-sim",
		"runtime_version": Version,
		"timing":          opts.Timing,
		"gpu":             "simulated " + d.GPUType,
	}
	if opts.Timing == TimingModel {
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

// Schema implements Describer.
func (x *Executor) Schema() executor.Schema { return Schema() }

// Validate checks resolved sim executor settings as New reads them.
func Validate(settings map[string]any) error {
	_, err := New(settings)
	return err
}

// CheckDeployment reports what Deploy would refuse of d that the plan
// alone decides, without starting an engine: the settings, and in model
// timing a performance model to serve from (the plan's, which needs the
// model's architecture, or a catalog model and GPU). validate and plan run
// it (plugins.Builtin.CheckDeployment), so apply never meets it.
func CheckDeployment(d executor.Deployment) error {
	e, err := New(d.Config)
	if err != nil {
		return err
	}
	x := e.(*Executor)
	if x.settings.Timing == TimingModel && d.Perf == nil {
		if _, ok := perf.LookupModel(d.ModelID); !ok {
			return fmt.Errorf("the sim executor's model timing serves from the model's architecture, and %s is neither in the catalog nor given one; set the architecture attributes the plan's \"estimates unavailable\" warning names on the model block, or timing = %q in the executor block", d.ModelID, TimingConstant)
		}
	}
	return x.Options(d).Validate()
}
