package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExternalPluginsStartOnlyWhenNamed: a slow executor plugin on $PATH
// (it records that it was started, then sleeps) is never started by
// `version`, nor by `validate` or `plan` of a spec that uses built-in
// executors only; a spec that names its type does start it (the control
// that shows the marker works).
func TestExternalPluginsStartOnlyWhenNamed(t *testing.T) {
	bin := t.TempDir()
	marker := filepath.Join(t.TempDir(), "started")
	script := "#!/bin/sh\necho started >> " + marker + "\nsleep 1\n"
	if err := os.WriteFile(filepath.Join(bin, "infercrane-executor-slow"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := func(execType string) string {
		dir := t.TempDir()
		src := `model "m" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 4096
}
gpu "g" {
  type = "L4"
}
executor "e" {
  type = "` + execType + `"
}
shape "s" {
  input_tokens  = 10
  output_tokens = 10
  concurrency   = 1
  requests      = 1
}
screen "x" {
  models   = [model.m]
  shapes   = [shape.s]
  gpus     = [gpu.g]
  executor = executor.e
}
`
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	cli := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		env := &cliEnv{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Wire: productionWiring(),
			Getenv: func(k string) string {
				if k == "PATH" {
					return bin
				}
				return ""
			}, Environ: func() []string { return nil }}
		return run(env, args), stdout.String() + stderr.String()
	}
	started := func() bool { _, err := os.Stat(marker); return err == nil }

	if code, out := cli("version"); code != 0 || started() {
		t.Fatalf("version: exit %d, plugin started %v\n%s", code, started(), out)
	}
	builtin := spec("sim")
	if code, out := cli("validate", builtin); code != 0 || started() {
		t.Fatalf("validate: exit %d, plugin started %v\n%s", code, started(), out)
	}
	if code, out := cli("plan", builtin); code != 0 || started() {
		t.Fatalf("plan: exit %d, plugin started %v\n%s", code, started(), out)
	}
	// A typo of a built-in still gets no plugin started, and the
	// suggestion lists the plugin found on PATH.
	if code, out := cli("validate", spec("simm")); code != 1 || started() || !strings.Contains(out, `Did you mean "sim"`) || !strings.Contains(out, "slow") {
		t.Fatalf("validate of a typo: exit %d, plugin started %v\n%s", code, started(), out)
	}
	// The control: naming the plugin's type starts it (this fake does not
	// speak the plugin protocol, so validate reports that).
	if code, out := cli("validate", spec("slow")); code != 1 || !started() || !strings.Contains(out, "Executor plugin did not answer") {
		t.Fatalf("validate naming the plugin: exit %d, plugin started %v\n%s", code, started(), out)
	}
}
