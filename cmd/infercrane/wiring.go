package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/report"
	"github.com/infercrane/infercrane/executor/sim"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/perf"
	"github.com/infercrane/infercrane/planner/workload"
	"github.com/infercrane/infercrane/plugins"
	"github.com/infercrane/infercrane/plugins/endpoint"
	"github.com/infercrane/infercrane/plugins/local"
	"github.com/infercrane/infercrane/plugins/modal"
)

// This file is the composition root: the one place where the commands, the
// built-in executors, the external-plugin lookup and the spec language's
// options are assembled. Nothing registers itself from init or a blank
// import.

// wiring is what differs between the shipped binary and the CLI's tests:
// main uses productionWiring; the tests' wiring (in a _test.go file) swaps
// the Modal cloud for the local stand-in, so the release binary links no
// test double and no environment variable can switch it onto one.
type wiring struct {
	// ModalCloud connects to Modal for the modal executor and cleanup,
	// given the Modal environment (nil: Modal's SDK).
	ModalCloud func(environment string) (modal.Cloud, error)
	// ModalCredentials checks that Modal credentials are there (nil:
	// modal.CheckCredentials). A stand-in cloud needs none.
	ModalCredentials func(getenv func(string) string) error
	// ModalSeesLocalFiles is true when the Modal cloud runs on this machine
	// (the tests' stand-in), so its sandboxes can read local traces.
	ModalSeesLocalFiles bool
	// PluginStartTimeout bounds a plugin process's handshake (0:
	// plugins.DefaultStartTimeout); the tests shorten it.
	PluginStartTimeout time.Duration
}

// productionWiring is the shipped binary's wiring: Modal itself.
func productionWiring() wiring {
	return wiring{ModalCloud: modal.NewSDKCloud, ModalCredentials: modal.CheckCredentials}
}

// modalCloud returns the wiring's Modal connection.
func (w wiring) modalCloud(environment string) (modal.Cloud, error) {
	if w.ModalCloud == nil {
		return modal.NewSDKCloud(environment)
	}
	return w.ModalCloud(environment)
}

// modalCredentials checks Modal credentials through the wiring.
func (w wiring) modalCredentials(_ map[string]any, getenv func(string) string) error {
	if w.ModalCredentials == nil {
		return modal.CheckCredentials(getenv)
	}
	return w.ModalCredentials(getenv)
}

var commandsOnce sync.Once

// setupCommands assembles the subcommands, once.
func setupCommands() {
	commandsOnce.Do(func() {
		for _, add := range []func(){
			addVersionCommands, addValidateCommands, addPlanCommands, addApplyCommands, addShowCommands,
			addGraphCommands, addDiffCommands, addFmtCommands, addReportCommands, addVerifyCommands, addCalibrateCommands,
			addMetricsCommands, addProfileCommands, addProfileShardCommands, addProfileSynthCommands, addBenchCommands,
			addSimCommands, addExecutorCommands, addCleanupCommands, addProbeCommands, addCompletionCommands,
			addStateCommands, addBackendCommands,
		} {
			add()
		}
	})
}

// builtins lists the executors compiled into infercrane.
func (env *cliEnv) builtins() []plugins.Builtin {
	w := env.Wire
	return []plugins.Builtin{
		{Name: sim.Type, New: sim.New, Schema: sim.Schema, Validate: sim.Validate, CheckDeployment: sim.CheckDeployment},
		{Name: endpoint.Type, New: endpoint.New, Schema: endpoint.Schema, Validate: endpoint.Validate, Credentials: endpoint.Credentials},
		{Name: local.Type, New: local.New, Schema: local.Schema, Validate: local.Validate},
		{Name: modal.Type, Schema: modal.Schema, Validate: modal.Validate, CheckDeployment: modal.CheckDeployment, Credentials: w.modalCredentials,
			New: func(cfg map[string]any) (executor.Executor, error) {
				return modal.NewExecutor(cfg, modal.WithCloudFactory(w.modalCloud))
			}},
	}
}

// registry is the executor registry: the built-ins, and external
// infercrane-executor-NAME plugins in $INFERCRANE_PLUGIN_DIR and $PATH
// (none inside a plugin process). logOut receives plugin logs (nil: none).
func (env *cliEnv) registry(logOut io.Writer) *plugins.Registry {
	reg := &plugins.Registry{Builtins: env.builtins(), Dirs: plugins.DefaultDirs(env.Getenv), LogOut: logOut, StartTimeout: env.Wire.PluginStartTimeout}
	if env.Getenv(plugins.Handshake.MagicCookieKey) != "" {
		reg.Dirs = nil
	}
	return reg
}

// resolveTraceOnModal profiles an unpinned trace that names a modal
// executor by fanning it out over Modal CPU sandboxes.
func (env *cliEnv) resolveTraceOnModal(t *lang.Trace, specDir string, ro workload.ReadOptions) (cty.Value, hcl.Diagnostics) {
	if err := env.Wire.modalCredentials(nil, env.Getenv); err != nil {
		return cty.DynamicVal, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot profile trace " + t.Name + " on Modal",
			Detail: err.Error(), Subject: t.DeclRange.Ptr()}}
	}
	return modal.ResolveTrace(context.Background(), t, specDir, ro, modal.SpecTraceJob{
		Attrs: t.Executor.Attrs, Cloud: env.Wire.modalCloud,
		Progress: func(line string) { fmt.Fprintln(env.Stderr, line) },
	})
}

// traceProfiler is the planner's trace step's profiler: an unpinned trace
// that names a modal executor fans out over Modal CPU sandboxes, any other
// is profiled here from its source (a local file or S3).
func (env *cliEnv) traceProfiler() workload.Profiler {
	return func(ctx context.Context, t *lang.Trace, specDir string) (cty.Value, hcl.Diagnostics) {
		ro := s3Options(env, "", false, "", false)
		if t.Executor != nil {
			return env.resolveTraceOnModal(t, specDir, ro)
		}
		return workload.Resolve(ctx, t, specDir, ro)
	}
}

// langOptions are the spec language's checks against knowledge that lives
// above lang: executor schemas, the GPU catalog and the report's lane
// metric names. They read no trace (see loadResolved).
func (env *cliEnv) langOptions() lang.Options {
	reg := env.registry(nil)
	return lang.Options{
		ExecutorSchemas:   reg.SpecSchemas(),
		ExternalExecutors: reg.SpecExternal(),
		GPUTypes:          perf.GPUNames(),
		IsGPUType:         func(t string) bool { _, ok := perf.LookupGPU(t); return ok },
		LaneMetrics:       report.LaneMetricNames(),
		Version:           Version,
	}
}
