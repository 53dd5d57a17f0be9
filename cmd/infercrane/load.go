package main

import (
	"flag"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/perf"
	"github.com/zclconf/go-cty/cty"
)

// executorSchemas describes the executor types the registry knows; the
// plugins wiring sets it from its init. Nil accepts the built-in types
// with any attributes.
var executorSchemas map[string]lang.ExecutorSchema

// resolveTrace reads a trace's pinned workload profile; the workload wiring
// sets it from its init. Nil leaves every trace unprofiled.
var resolveTrace func(*lang.Trace, string) (cty.Value, hcl.Diagnostics)

// laneMetrics lists the names gate conditions may use after lane.; the
// report wiring sets it from its init. Nil skips the check.
var laneMetrics []string

// varFlags collects -var and -var-file flags.
type varFlags struct {
	vars  multiFlag
	files multiFlag
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// addVarFlags registers -var and -var-file on fs.
func addVarFlags(fs *flag.FlagSet) *varFlags {
	vf := &varFlags{}
	fs.Var(&vf.vars, "var", "set a variable: -var NAME=VALUE (repeatable)")
	fs.Var(&vf.files, "var-file", "read variables from a file of NAME = VALUE lines, or a JSON object when FILE ends in .json (repeatable)")
	return vf
}

// loadConfig loads the spec at path (default ".") with the variables from
// vf (which may be nil) and the environment.
func loadConfig(env *cliEnv, path string, vf *varFlags) (*lang.Config, hcl.Diagnostics) {
	if path == "" {
		path = "."
	}
	opts := lang.Options{
		ExecutorSchemas: executorSchemas,
		ResolveTrace:    resolveTrace,
		GPUTypes:        perf.GPUNames(),
		IsGPUType:       func(t string) bool { _, ok := perf.LookupGPU(t); return ok },
		LaneMetrics:     laneMetrics,
		Version:         Version,
	}
	if env.Environ != nil {
		opts.Environ = env.Environ()
	}
	if vf != nil {
		opts.Vars = vf.vars
		opts.VarFiles = vf.files
	}
	return lang.Load(path, opts)
}
