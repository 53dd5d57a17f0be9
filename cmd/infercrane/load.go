package main

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/workload"
)

// varFlags collects -var and -var-file flags.
type varFlags struct {
	vars  multiFlag
	files multiFlag
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// varFlag is the repeatable -var NAME=VALUE flag: a value without "=" is a
// mistake of the command line (exit 2), found as the flags are parsed.
type varFlag struct{ *multiFlag }

func (v varFlag) String() string {
	if v.multiFlag == nil {
		return ""
	}
	return v.multiFlag.String()
}

func (v varFlag) Set(s string) error {
	if name, _, ok := strings.Cut(s, "="); !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("-var %s: write NAME=VALUE, such as -var runs=5", s)
	}
	return v.multiFlag.Set(s)
}

// addVarFlags registers -var and -var-file on fs.
func addVarFlags(fs *flag.FlagSet) *varFlags {
	vf := &varFlags{}
	fs.Var(varFlag{&vf.vars}, "var", "set a variable: -var NAME=VALUE (repeatable)")
	fs.Var(&vf.files, "var-file", "read variables from a file of NAME = VALUE lines, or a JSON object when FILE ends in .json (repeatable)")
	return vf
}

// loadConfig loads the spec at path (default ".") with the variables from
// vf (which may be nil) and the environment, offline: pinned traces are
// read from their profile files, unpinned ones stay unprofiled (their
// shapes list them as pending). validate and the state commands use it.
func loadConfig(env *cliEnv, path string, vf *varFlags) (*lang.Config, hcl.Diagnostics) {
	return loadSpec(env, path, vf, nil)
}

// loadResolved is loadConfig with the planner's trace step: unpinned traces
// are profiled from their sources (S3, a Modal fan-out) and the spec is
// evaluated again with their values. plan and apply use it.
func loadResolved(env *cliEnv, path string, vf *varFlags) (*lang.Config, hcl.Diagnostics) {
	return loadSpec(env, path, vf, env.traceProfiler())
}

// loadSpec loads the spec with the planner's trace step
// (workload.LoadSpec); unpinned traces are profiled only with profile.
func loadSpec(env *cliEnv, path string, vf *varFlags, profile workload.Profiler) (*lang.Config, hcl.Diagnostics) {
	if path == "" {
		path = "."
	}
	opts := env.langOptions()
	if env.Environ != nil {
		opts.Environ = env.Environ()
	}
	if vf != nil {
		opts.Vars = vf.vars
		opts.VarFiles = vf.files
	}
	cfg, diags := workload.LoadSpec(func(o lang.Options) (*lang.Config, hcl.Diagnostics) { return lang.Load(path, o) }, opts, profile)
	if profile != nil {
		printProfiledTraces(env, cfg)
	}
	env.addSecrets(cfg)
	return cfg, diags
}

// printProfiledTraces shows the planner's trace step on stderr: each
// unpinned trace and the profile it resolved to.
func printProfiledTraces(env *cliEnv, cfg *lang.Config) {
	names := make([]string, 0, len(cfg.Traces))
	for n, t := range cfg.Traces {
		if t.Profile == "" && t.ProfileDigest != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(env.Stderr, "trace.%s: profiled, profile %s\n", n, cfg.Traces[n].ProfileDigest)
	}
}
