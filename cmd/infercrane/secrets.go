package main

import (
	"io"
	"os"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/term"

	"github.com/infercrane/infercrane/executor/redact"
	"github.com/infercrane/infercrane/executor/report"
	"github.com/infercrane/infercrane/lang"
)

// redactStreams makes env's stdout and stderr remove every secret in
// secrets from what they write; loadConfig adds the spec's sensitive
// values to it, and the environment's credentials are in it from the start.
func redactStreams(env *cliEnv) {
	env.secrets = redact.New()
	if env.Environ != nil {
		env.secrets.Add(report.SecretsFromEnv(env.Environ())...)
	}
	env.Stdout = env.secrets.Writer(env.Stdout)
	env.Stderr = env.secrets.Writer(env.Stderr)
}

// addSecrets records the secrets of a loaded spec: its sensitive values,
// and the values of the environment variables its executors name for
// credentials (api_key_env and other *_env settings).
func (env *cliEnv) addSecrets(cfg *lang.Config) {
	if env.secrets == nil || cfg == nil {
		return
	}
	env.secrets.Add(cfg.Secrets...)
	for _, e := range cfg.Executors {
		if e == nil {
			continue
		}
		for name, v := range e.Attrs {
			v, _ = v.UnmarkDeep()
			if len(name) > 4 && name[len(name)-4:] == "_env" && v.IsKnown() && !v.IsNull() && v.Type() == cty.String && env.Getenv != nil {
				env.secrets.Add(env.Getenv(v.AsString()))
			}
		}
	}
}

// terminalOf finds the terminal under w (looking through the redacting
// writers), if w writes to one.
func terminalOf(w io.Writer) (*os.File, bool) {
	for {
		switch x := w.(type) {
		case *os.File:
			return x, term.IsTerminal(int(x.Fd()))
		case interface{ Unwrap() io.Writer }:
			w = x.Unwrap()
		default:
			return nil, false
		}
	}
}

// loggableArgs is args with the values of -var flags left out (a value
// may be a secret, and the spec that says so is not loaded yet).
func loggableArgs(args []string) []string {
	out := make([]string, len(args))
	hide := false
	for i, a := range args {
		switch {
		case hide:
			name, _, _ := strings.Cut(a, "=")
			out[i], hide = name+"=…", false
		case a == "-var" || a == "--var":
			out[i], hide = a, true
		case strings.HasPrefix(a, "-var=") || strings.HasPrefix(a, "--var="):
			flag, rest, _ := strings.Cut(a, "=")
			name, _, _ := strings.Cut(rest, "=")
			out[i] = flag + "=" + name + "=…"
		default:
			out[i] = a
		}
	}
	return out
}
