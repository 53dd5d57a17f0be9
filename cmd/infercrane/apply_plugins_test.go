package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/sim"
)

// TestApplyWithExternalPluginBinary builds the example plugin from plugins/
// and applies a spec whose executor type it provides.
func TestApplyWithExternalPluginBinary(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain to build the plugin with")
	}
	dir := t.TempDir()
	build := exec.Command(gobin, "build", "-o", filepath.Join(dir, "infercrane-executor-example"), "../../plugins/cmd/infercrane-executor-example")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the plugin: %v\n%s", err, out)
	}
	r := newRig(t, rigSpec(`executor "x" {
  type = "example"
  ttft = "2ms"
  itl  = "1ms"
}`, 2))
	r.env = append(r.env, "INFERCRANE_PLUGIN_DIR="+dir)
	list, err := r.command("executor", "list").Output()
	if err != nil || !strings.Contains(string(list), "example (plugin "+filepath.Join(dir, "infercrane-executor-example")+")") {
		t.Fatalf("executor list: %v\n%s", err, list)
	}
	// The plan resolves the plugin's settings from the schema it serves
	// (its default timing "constant", the spec's durations): the plugin
	// receives exactly these, complete, and applies no defaults itself.
	plan, err := r.command("plan", "-json").Output()
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, plan)
	}
	if !strings.Contains(string(plan), `"executor_settings": {
        "itl": "1ms",
        "max_waiting": 0,
        "speedup": 1,
        "timing": "constant",
        "ttft": "2ms"
      }`) {
		t.Fatalf("the plan does not carry the plugin's resolved settings:\n%s", plan)
	}
	code, out, errOut := r.apply()
	if code != 0 || !strings.Contains(out, "2 run(s) completed, 0 failed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	r.noLeftovers()
	// Without the plugin directory the type is unknown, and the spec says so.
	r.env = r.env[:len(r.env)-1]
	code, _, errOut = r.apply()
	if code != 1 || !strings.Contains(errOut, `no executor of type "example"`) && !strings.Contains(errOut, "Unknown executor type") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
}

// TestApplyEndpointNeverWritesTheKey runs lanes against an existing server
// with an API key from the environment and checks the key appears in no
// file of the state directory and in no output.
func TestApplyEndpointNeverWritesTheKey(t *testing.T) {
	t.Parallel()
	srv, err := sim.Listen("127.0.0.1:0", sim.Options{Model: "Qwen/Qwen3-0.6B", TTFT: time.Millisecond, ITL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(t.Context())
	const key = "sk-test-7f3a9c1e5b"
	r := newRig(t, rigSpec(`variable "url" { type = string }
executor "x" {
  type        = "endpoint"
  base_url    = var.url
  api_key_env = "IC_TEST_KEY"
}`, 2))
	r.env = append(r.env, "IC_TEST_KEY="+key)
	code, out, errOut := r.apply("-var", "url="+srv.URL)
	if code != 0 || !strings.Contains(out, "2 run(s) completed, 0 failed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, key) {
		t.Fatal("the API key was printed")
	}
	filepath.Walk(filepath.Join(r.dir, ".infercrane"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
				t.Errorf("the API key is in %s", p)
			}
		}
		return nil
	})
	// Without the key apply refuses before deploying, naming the variable.
	r.env = r.env[:len(r.env)-1]
	code, _, errOut = r.apply("-var", "url="+srv.URL, "-replace", "s/a/chat/l40s")
	if code != 1 || !strings.Contains(errOut, "api_key_env names IC_TEST_KEY, which is unset or empty") || !strings.Contains(errOut, "Nothing was deployed") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
}

// TestApplyEndpointFailedRunsAreFailed: a run whose every request failed
// (the server answers 503 to all) is journaled as failed with its failure
// classes (it was journaled complete), and so is a run whose server died
// after the deploy; apply exits 1 each time, plan shows the run to do and
// why, and a resume against a live server completes every run.
func TestApplyEndpointFailedRunsAreFailed(t *testing.T) {
	t.Parallel()
	opts := sim.Options{Model: "Qwen/Qwen3-0.6B", TTFT: time.Millisecond, ITL: time.Millisecond}
	failing := opts
	failing.Faults.FailRate = 1
	srv, err := sim.Listen("127.0.0.1:0", failing)
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL, "http://")
	r := newRig(t, rigSpec(`variable "url" { type = string }
executor "x" {
  type     = "endpoint"
  base_url = var.url
}`, 2))
	failedApply := func(stop func()) {
		t.Helper()
		run := r.start("-var", "url="+srv.URL)
		run.until(t, "the deploy", func(e executor.Event) bool { return e.Type == executor.EventDeployFinished })
		if stop != nil {
			stop()
		}
		evs, code := run.wait(t)
		if code != 1 || count(evs, executor.EventRunFinished) != 0 || count(evs, executor.EventRunFailed) != 1 {
			t.Fatalf("exit %d, %d runs finished, %d failed; stderr:\n%s", code, count(evs, executor.EventRunFinished), count(evs, executor.EventRunFailed), run.stderr)
		}
		journal, _ := os.ReadFile(filepath.Join(r.dir, ".infercrane", "journal.jsonl"))
		if strings.Contains(string(journal), `"type":"run"`) {
			t.Fatalf("a failed run was journaled complete:\n%s", journal)
		}
	}
	// planSays checks the plan names the run to redo and why, in any of the
	// wordings given (a server shut down just as a request reaches it
	// answers EOF instead of refusing the connection).
	planSays := func(want ...string) {
		t.Helper()
		out, err := r.command("plan", "-var", "url="+srv.URL).Output()
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		if !strings.HasPrefix(string(out), "Plan: 1 lane to run (2 runs") || !slices.ContainsFunc(want, func(w string) bool { return strings.Contains(string(out), w) }) {
			t.Fatalf("plan after the failed run, want one of %q:\n%s", want, out)
		}
	}
	failedApply(nil)
	planSays("run 1 failed in an earlier apply (every request failed: server_error 4 of 4); it is rerun")

	srv.Shutdown(t.Context())
	if srv, err = sim.Listen(addr, opts); err != nil {
		t.Fatal(err)
	}
	failedApply(func() { srv.Shutdown(t.Context()) })
	planSays("connection refused", "EOF")

	if srv, err = sim.Listen(addr, opts); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(t.Context())
	code, stdout, errOut := r.apply("-var", "url="+srv.URL)
	if code != 0 || !strings.Contains(stdout, "2 run(s) completed, 0 failed") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, errOut)
	}
	if line := r.planLineArgs("-var", "url="+srv.URL); !strings.HasPrefix(line, "Plan: 0 lanes to run") {
		t.Fatalf("after the resume, plan says %q", line)
	}
}
