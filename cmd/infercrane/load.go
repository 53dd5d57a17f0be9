package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
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
// vf (which may be nil) and the environment.
func loadConfig(env *cliEnv, path string, vf *varFlags) (*lang.Config, hcl.Diagnostics) {
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
	cfg, diags := lang.Load(path, opts)
	env.addSecrets(cfg)
	return cfg, diags
}
