package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang"
)

// brokenSpec is a screen on one executor with one gate; each case of
// TestBrokenSpecsFailValidate breaks the executor block, the gate or the
// shape (whose lengths and workload blocks replace SHAPE, okShape unless
// a case says).
const brokenSpec = `model "m" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 4096
}

gpu "g" {
  type = "L40S"
}

executor "e" {
EXEC
}

shape "s" {
  concurrency   = 1
  requests      = 2
SHAPE
}

gate "g" {
  condition     = COND
  error_message = "The lane must be clean."
}

screen "x" {
  models   = [model.m]
  shapes   = [shape.s]
  gpus     = [gpu.g]
  executor = executor.e
  gates    = [gate.g]
}
`

// TestBrokenSpecsFailValidate: every value the plan can know to be wrong
// (gate metric names, each built-in executor's settings, durations) fails
// validate with the file:line:col of the offending expression and a fix,
// and neither plan -out nor apply gets anywhere near a deployment with it.
func TestBrokenSpecsFailValidate(t *testing.T) {
	const okGate = "lane.failed == 0"
	const okShape = "  input_tokens  = 100\n  output_tokens = 10"
	cases := []struct {
		name  string
		exec  string // executor block body
		cond  string // gate condition
		at    string // where the error points: the first occurrence of this text (at its | when it has one)
		want  string // in the diagnostic's detail: the problem and the fix
		shape string // the shape's token counts and workload blocks ("": okShape)
	}{
		// Gate metric names, checked against the report's lane metrics.
		{"gate typo", `type = "sim"`, "lane.faild == 0", "lane.faild", `Did you mean "failed"?`, ""},
		{"gate unit typo", `type = "sim"`, "lane.ttft_p95_msec < 500", "lane.ttft_p95_msec", `Did you mean "ttft_p95_ms"?`, ""},
		{"gate failure class", `type = "sim"`, "lane.failures.timout == 0", "lane.failures.timout", `Did you mean "timeout"?`, ""},
		{"gate cv member", `type = "sim"`, "lane.cv.output_token_thruput < 0.1", "lane.cv.output_token_thruput", `Did you mean "output_token_throughput"?`, ""},
		{"gate pooled member", `type = "sim"`, "lane.pooled.ttft_p95 < 1", "lane.pooled.ttft_p95", `lane.pooled has no member "ttft_p95"`, ""},
		{"gate group alone", `type = "sim"`, "lane.failures == 0", "lane.failures", `name one, such as lane.failures.`, ""},
		// A condition that is not true or false can never be judged.
		{"gate number", `type = "sim"`, "lane.failed", "lane.failed", `this one is a number`, ""},
		{"gate string", `type = "sim"`, `"yes"`, `"yes"`, `this one is the string "yes"`, ""},
		{"gate conditional string", `type = "sim"`, `lane.failed == 0 ? "ok" : "bad"`, `lane.failed == 0 ?`, `this one is a string`, ""},
		// The executor type itself.
		{"executor type typo", `type = "modall"`, okGate, `"modall"`, `Did you mean "modal"?`, ""},
		// modal
		{"modal timeout too long", "type = \"modal\"\n  timeout = \"48h\"", okGate, `"48h"`, `use a value from 1m to 24h`, ""},
		{"modal timeout spaced", "type = \"modal\"\n  timeout = \"30 m\"", okGate, `"30 m"`, `write a number and a unit without spaces`, ""},
		{"modal timeout zero", "type = \"modal\"\n  timeout = \"0s\"", okGate, `"0s"`, `use a value from 1m to 24h`, ""},
		{"modal idle over timeout", "type = \"modal\"\n  timeout = \"30m\"\n  idle_timeout = \"1h\"", okGate, `"1h"`, `at most timeout`, ""},
		{"modal health over timeout", "type = \"modal\"\n  health_timeout = \"40m\"", okGate, `"40m"`, `shorter than timeout`, ""},
		// The checks run on the resolved settings: a default that breaks a
		// rule against what the block sets (idle_timeout's 5m under a 2m
		// timeout) is found at validate, at the block, saying so.
		{"modal default idle over short timeout", "type = \"modal\"\n  timeout = \"2m\"", okGate, `executor "e"`, `The block leaves idle_timeout out, so it takes its default "5m"`, ""},
		{"modal gpu", "type = \"modal\"\n  gpu = \"H1000\"", okGate, `"H1000"`, `known types:`, ""},
		{"modal gpu count", "type = \"modal\"\n  gpu = \"L40S:9\"", okGate, `"L40S:9"`, `from 1 to 8`, ""},
		{"modal volume mount", "type = \"modal\"\n  volume_mount = \"cache\"", okGate, `"cache"`, `must be an absolute path`, ""},
		{"modal empty secret", "type = \"modal\"\n  secrets = [\"\"]", okGate, `[""]`, `empty name`, ""},
		{"modal empty app", "type = \"modal\"\n  app = \"\"", okGate, `app = |""`, `leave it out`, ""},
		{"modal unknown attribute", "type = \"modal\"\n  timout = \"10m\"", okGate, `timout`, `Did you mean "timeout"?`, ""},
		// sim
		{"sim ttft spaced", "type = \"sim\"\n  timing = \"constant\"\n  ttft = \"20 ms\"", okGate, `"20 ms"`, `is not a duration`, ""},
		{"sim timing enum", "type = \"sim\"\n  timing = \"fast\"", okGate, `"fast"`, `is not one of "model", "constant"`, ""},
		{"sim speedup zero", "type = \"sim\"\n  speedup = 0", okGate, `speedup = |0`, `use a value from 0.001 to 1000000`, ""},
		{"sim max_waiting fraction", "type = \"sim\"\n  max_waiting = 1.5", okGate, `1.5`, `a whole number, got 1.5`, ""},
		{"sim itl negative", "type = \"sim\"\n  itl = \"-5ms\"", okGate, `"-5ms"`, `use a value from 0s to 1m`, ""},
		// endpoint
		{"endpoint url scheme", "type = \"endpoint\"\n  base_url = \"ftp://10.0.0.5\"", okGate, `"ftp://10.0.0.5"`, `must be an http:// or https:// URL`, ""},
		{"endpoint check_timeout", "type = \"endpoint\"\n  base_url = \"http://127.0.0.1:1\"\n  check_timeout = \"0s\"", okGate, `"0s"`, `use a value from 1s to 1h`, ""},
		{"endpoint base_url missing", "type = \"endpoint\"", okGate, "", `needs the argument "base_url"`, ""},
		// local
		{"local port", "type = \"local\"\n  port = 70000", okGate, `70000`, `use a value from 1 to 65535`, ""},
		{"local placeholder", "type = \"local\"\n  command = [\"vllm\", \"serve\", \"{modle}\"]", okGate, `[`, `unknown placeholder {modle}`, ""},
		{"local health_timeout", "type = \"local\"\n  health_timeout = \"soon\"", okGate, `"soon"`, `is not a duration`, ""},
		{"local stop_timeout", "type = \"local\"\n  stop_timeout = \"2h\"", okGate, `"2h"`, `use a value from 0s to 1h`, ""},
		// Shapes: what the load generator would clamp or refuse at apply.
		{"prefix longer than the prompt", `type = "sim"`, okGate, `1024`, `shared_tokens (1024) must be below input_tokens (512)`,
			"  input_tokens  = 512\n  output_tokens = 10\n  prefix {\n    groups        = 2\n    shared_tokens = 1024\n  }"},
		{"prefix the whole prompt", `type = "sim"`, okGate, `shared_tokens = |512`, `Set shared_tokens to at most 511`,
			"  input_tokens  = 512\n  output_tokens = 10\n  prefix {\n    groups        = 2\n    shared_tokens = 512\n  }"},
		{"session on completions", `type = "sim"`, okGate, `"completions"`, `Set api = "chat" (the default), or remove the session block`,
			okShape + "\n  api = \"completions\"\n  session {\n    turns = 2\n  }"},
		{"lengths unknown key", `type = "sim"`, okGate, `{ p50 = 5`, `it takes p50, p90, p95, p99 (and samples and quantiles, as a profile's distribution has them). Did you mean`,
			"  output_tokens = 10\n  lengths {\n    input = { p50 = 5, p90 = 200, p95 = 300, p99 = 400, p75 = 3 }\n  }"},
	}
	if len(cases) < 20 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shape := c.shape
			if shape == "" {
				shape = okShape
			}
			src := strings.NewReplacer("EXEC", "  "+c.exec, "COND", c.cond, "SHAPE", shape).Replace(brokenSpec)
			dir := filepath.Join(t.TempDir(), "spec")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "main.hcl")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI(t, "validate", "-json", dir)
			if code != 1 {
				t.Fatalf("validate exit %d, want 1\n%s%s", code, stdout, stderr)
			}
			var out validateJSON
			if err := json.Unmarshal([]byte(stdout), &out); err != nil {
				t.Fatalf("validate -json: %v\n%s", err, stdout)
			}
			var found *lang.JSONDiagnostic
			for i, d := range out.Diagnostics {
				if d.Severity == "error" && strings.Contains(d.Detail, c.want) {
					found = &out.Diagnostics[i]
				}
			}
			if found == nil {
				t.Fatalf("no error saying %q:\n%s", c.want, stdout)
			}
			if found.Range == nil || found.Range.Filename != path || found.Range.Start.Line < 1 || found.Range.Start.Column < 1 {
				t.Fatalf("error without file:line:col: %+v", found)
			}
			if c.at != "" {
				line, col := position(src, c.at)
				if found.Range.Start.Line != line || found.Range.Start.Column != col {
					t.Errorf("error at %d:%d, want %d:%d (%q)", found.Range.Start.Line, found.Range.Start.Column, line, col, c.at)
				}
			}
			// Nothing gets further: no plan file, no state, no deployment.
			planFile := filepath.Join(t.TempDir(), "p.plan")
			if code, _, stderr := runCLI(t, "plan", "-out", planFile, dir); code != 1 || !strings.Contains(stderr, c.want) {
				t.Errorf("plan -out exit %d, want 1 with %q:\n%s", code, c.want, stderr)
			}
			if _, err := os.Stat(planFile); err == nil {
				t.Errorf("plan -out wrote %s", planFile)
			}
			if code, _, stderr := runCLI(t, "apply", "-auto-approve", dir); code != 1 || !strings.Contains(stderr, c.want) {
				t.Errorf("apply exit %d, want 1 with %q:\n%s", code, c.want, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, ".infercrane")); err == nil {
				t.Errorf("apply created a state directory")
			}
		})
	}
}

// runCLI runs infercrane in this process with an empty environment and
// the shipped wiring.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCLIWithEnv(t, nil, args...)
}

// position is the 1-based line and column of the first occurrence of s,
// or of the point marked | in it.
func position(src, s string) (int, int) {
	before, after, marked := strings.Cut(s, "|")
	i := strings.Index(src, before+after)
	if i < 0 {
		return 0, 0
	}
	if marked {
		i += len(before)
	}
	line := strings.Count(src[:i], "\n") + 1
	col := i - strings.LastIndex(src[:i], "\n")
	return line, col
}
