package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBrokenPlansFailPlan: what only the lane makes wrong (the deployment
// an executor would refuse, a gate the lane's runs can never judge) passes
// validate and is a preflight error at plan, naming the lane and the fix;
// no plan file is saved and apply deploys nothing. A gate whose min_runs
// or max_cv the screen's runs cannot meet is a warning.
func TestBrokenPlansFailPlan(t *testing.T) {
	// Each case edits brokenSpec: the model id, the shape's output_tokens
	// and more shape lines, the executor block, the gate's condition (and
	// lines after it) and the screen's lines.
	type edit struct{ id, out, exec, shape, cond, screen string }
	ok := edit{id: "Qwen/Qwen3-0.6B", out: "10", exec: `type = "sim"`, cond: "lane.failed == 0", screen: "runs = 2"}
	with := func(f func(e *edit)) edit { e := ok; f(&e); return e }
	cases := []struct {
		name string
		edit edit
		want string
		warn bool // a warning only: plan succeeds and apply may run
	}{
		// Executors' deploy-time checks of the plan's deployment.
		{"sim model timing without an architecture", with(func(e *edit) { e.id = "foo/bar-7b" }),
			`foo/bar-7b is neither in the catalog nor given one; set the architecture attributes`, false},
		{"modal gpu not the lane's", with(func(e *edit) { e.exec = "type = \"modal\"\n  gpu = \"H100\"" }),
			`gpu = "H100" asks for 1 x H100 but the lane was planned on 1 x L40S`, false},
		{"modal gpu count not the lane's", with(func(e *edit) { e.exec = "type = \"modal\"\n  gpu = \"L40S:2\"" }),
			`asks for 2 x L40S but the lane was planned on 1 x L40S`, false},
		// Gates the lane can never judge.
		{"gate on ttft without streaming", with(func(e *edit) { e.shape, e.cond = "streaming = false", "lane.ttft_p95_ms < 500" }),
			`does not stream (streaming = false)`, false},
		{"gate on pooled itl without streaming", with(func(e *edit) { e.shape, e.cond = "streaming = false", "lane.pooled.itl_p95_ms < 50" }),
			`ttft, tpot and itl are not measured`, false},
		{"gate on tpot with one output token", with(func(e *edit) { e.out, e.cond = "1", "lane.tpot_p95_ms < 50" }),
			`output_tokens = 1, which leaves no gap between tokens`, false},
		{"gate on cv with one run", with(func(e *edit) { e.cond, e.screen = "lane.cv.output_token_throughput < 0.1", "runs = 1" }),
			`needs at least 2 runs, and screen "x" plans 1`, false},
		// The gate's own bar for a conclusive result, which an exploratory
		// screen may knowingly miss: a warning.
		{"gate max_cv with one run", with(func(e *edit) { e.cond, e.screen = "lane.failed == 0\n  max_cv = 0.1", "runs = 1" }),
			`max_cv judges the variation of throughput across runs, which needs at least 2 runs`, true},
		{"gate on goodput without slo", with(func(e *edit) { e.cond = "lane.goodput > 1" }),
			`shape "s" has no slo block`, false},
		{"gate on capacity without a search", with(func(e *edit) { e.cond = "lane.capacity_rps > 1" }),
			`only a lane with a capacity search has lane.capacity_rps`, false},
		{"gate min_runs above runs", with(func(e *edit) { e.cond = "lane.failed == 0\n  min_runs = 5" }),
			`the gate needs min_runs = 5 completed runs and screen "x" plans 2`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := strings.NewReplacer(`"Qwen/Qwen3-0.6B"`, `"`+c.edit.id+`"`, "EXEC", "  "+c.edit.exec,
				"SHAPE", "  input_tokens  = 100\n  output_tokens = "+c.edit.out+"\n  "+c.edit.shape,
				"COND", c.edit.cond, "  gates    = [gate.g]\n", "  gates    = [gate.g]\n  "+c.edit.screen+"\n")
			src := r.Replace(brokenSpec)
			dir := filepath.Join(t.TempDir(), "spec")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			if code, stdout, stderr := runCLI(t, "validate", dir); code != 0 {
				t.Fatalf("validate exit %d, want 0 (the spec itself is valid)\n%s%s", code, stdout, stderr)
			}
			planFile := filepath.Join(t.TempDir(), "p.plan")
			if c.warn {
				code, stdout, stderr := runCLI(t, "plan", dir)
				if code != 0 || !strings.Contains(stdout, "  Warning: gate \"g\" will be INCONCLUSIVE") || !strings.Contains(stdout, c.want) {
					t.Fatalf("plan exit %d, want 0 with a warning saying %q:\n%s%s", code, c.want, stdout, stderr)
				}
				return
			}
			code, stdout, stderr := runCLI(t, "plan", "-out", planFile, dir)
			if code != 1 || !strings.Contains(stdout, "  Error: ") || !strings.Contains(stdout, c.want) {
				t.Fatalf("plan exit %d, want 1 with a preflight error saying %q:\n%s%s", code, c.want, stdout, stderr)
			}
			if _, err := os.Stat(planFile); err == nil {
				t.Errorf("plan -out wrote %s", planFile)
			}
			// Modal's credentials are there (placeholders: nothing contacts
			// Modal), so it is the preflight error that stops apply.
			env := map[string]string{"MODAL_TOKEN_ID": "ak-placeholder", "MODAL_TOKEN_SECRET": "as-placeholder"}
			code, stdout, stderr = runCLIWithEnv(t, env, "apply", "-auto-approve", dir)
			if code != 1 || !strings.Contains(stdout, c.want) || !strings.Contains(stderr, "the plan has preflight errors") {
				t.Errorf("apply exit %d, want 1 refusing the preflight error %q:\n%s%s", code, c.want, stdout, stderr)
			}
			if fi, err := os.Stat(filepath.Join(dir, ".infercrane", "journal.jsonl")); err == nil && fi.Size() > 0 {
				t.Errorf("apply journaled something")
			}
		})
	}
}

// runCLIWithEnv is runCLI with the environment variables in vars.
func runCLIWithEnv(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := &cliEnv{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return vars[k] }, Environ: func() []string { return nil }, Wire: productionWiring()}
	code := run(env, args)
	return code, stdout.String(), stderr.String()
}
