package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
)

// livenessSpec is a screen on an endpoint executor at base URL url whose
// lane must have no failed request: 3 runs of 8 requests, 2 at a time, 100
// output tokens each.
func livenessSpec(url string) string {
	return fmt.Sprintf(`
model "a" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 4096
}
gpu "l40s" { type = "L40S" }
executor "ep" {
  type     = "endpoint"
  base_url = %q
}
shape "chat" {
  input_tokens  = 32
  output_tokens = 100
  concurrency   = 2
  requests      = 8
}
gate "clean" {
  condition     = lane.failed == 0
  error_message = "a request failed"
}
screen "s" {
  models   = [model.a]
  shapes   = [shape.chat]
  gpus     = [gpu.l40s]
  executor = executor.ep
  runs     = 3
  seed     = 1
  gates    = [gate.clean]
}
`, url)
}

// freePort asks the kernel for an unused loopback port, for a server that
// cannot pick its own and say it (vLLM in the integration tests); the port
// is free when asked, not necessarily when the server binds it.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// simServe starts a real `infercrane sim serve` process (carrying the
// rig's marker) on port, or on a port it picks itself when port is 0 (read
// from its "listening on" line: a port asked of the kernel and released
// for the child to take could be taken first), waits until it answers
// /health and returns it with its port.
func (r *applyRig) simServe(port int, extra ...string) (*exec.Cmd, int) {
	r.t.Helper()
	args := append([]string{"sim", "serve", "--port", strconv.Itoa(port), "--model", "Qwen/Qwen3-0.6B", "--ttft", "5ms", "--itl", "5ms"}, extra...)
	cmd := r.command(args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	listening := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listeningOn.FindStringSubmatch(sc.Text()); m != nil {
				p, _ := strconv.Atoi(m[1])
				listening <- p
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
		close(listening)
	}()
	select {
	case p, ok := <-listening:
		if !ok {
			r.t.Fatalf("sim serve --port %d exited without listening", port)
		}
		port = p
	case <-time.After(30 * time.Second):
		r.t.Fatalf("sim serve --port %d did not say where it listens within 30 s", port)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/health", port)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) { // a hang, not a slow machine
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd, port
			}
		}
	}
	r.t.Fatalf("sim serve on port %d did not answer /health", port)
	return nil, 0
}

var listeningOn = regexp.MustCompile(`^listening on http://127\.0\.0\.1:(\d+)$`)

// TestApplyEndpointServerKilledMidRunIsRedone is the outside tester's
// repro: the endpoint's server (a real sim serve process) is killed with
// SIGKILL during run 2. That run must fail as an infrastructure failure,
// saying why it is redone, instead of being kept as a measurement of a
// model whose requests "failed"; after the server is back, the next apply
// redoes runs 2 and 3 and the gate (no failed request) passes.
func TestApplyEndpointServerKilledMidRunIsRedone(t *testing.T) {
	t.Parallel()
	r := newRig(t, "")
	sim, port := r.simServe(0)
	r.write(livenessSpec(fmt.Sprintf("http://127.0.0.1:%d", port)))
	run := r.start()
	// Two of run 2's eight requests are done: six are still to be sent or
	// in flight when the server dies.
	run.until(t, "progress in run 2", func(e executor.Event) bool {
		return e.Type == executor.EventRunProgress && e.Run == 2 && e.Done >= 2
	})
	if err := sim.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = sim.Wait()
	evs, code := run.wait(t)
	if code != 1 {
		t.Fatalf("apply exit %d, want 1 (a failed run); stderr:\n%s", code, run.stderr)
	}
	var failed *executor.Event
	for i, e := range evs {
		if e.Type == executor.EventRunFinished && e.Run >= 2 {
			t.Fatalf("run %d was kept as a measurement of a dead server: %+v", e.Run, e)
		}
		if e.Type == executor.EventRunFailed && e.Run == 2 {
			failed = &evs[i]
		}
	}
	if failed == nil {
		t.Fatalf("run 2 did not fail; stderr:\n%s", run.stderr)
	}
	for _, want := range []string{"the server was unreachable during the run", "could not be made", "connection", "not a measurement", "the next apply redoes it"} {
		if !strings.Contains(failed.Error, want) {
			t.Errorf("run 2's failure does not say %q: %s", want, failed.Error)
		}
	}
	plan, _ := r.command("plan").Output()
	if !strings.Contains(string(plan), "run 2 failed in an earlier apply (the server was unreachable during the run: ") || !strings.Contains(string(plan), "requests failed); it is rerun") {
		t.Errorf("plan does not say why run 2 is rerun:\n%s", plan)
	}
	// The server is back on the same port: runs 2 and 3 are redone and
	// nothing of the dead server's run is left to fail the gate.
	r.simServe(port)
	code, out, errOut := r.apply()
	if code != 0 {
		t.Fatalf("rerun exit %d, want 0 (gate passed)\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "2 run(s) completed, 0 failed") {
		t.Fatalf("the rerun did not redo runs 2 and 3:\n%s", out)
	}
}

// TestApplyEndpointErrorsAreMeasured is the other side of the rule: a
// server that stays up and answers a request with HTTP 500 was measured;
// the run counts and the gate judges it (exit 3), nothing is redone.
func TestApplyEndpointErrorsAreMeasured(t *testing.T) {
	t.Parallel()
	r := newRig(t, "")
	_, port := r.simServe(0, "--fail-at", "3=500")
	r.write(strings.Replace(livenessSpec(fmt.Sprintf("http://127.0.0.1:%d", port)), "runs     = 3", "runs     = 1", 1))
	code, out, errOut := r.apply()
	if code != 3 || !strings.Contains(out, "1 run(s) completed, 0 failed") {
		t.Fatalf("exit %d, want 3 (the gate failed on a measured run)\n%s\n%s", code, out, errOut)
	}
	if line := r.planLine(); !strings.HasPrefix(line, "Plan: 0 lanes to run") {
		t.Fatalf("the measured run is to be redone: %q", line)
	}
}

// TestValidateHangingPluginIsStopped is the outside tester's M7: an
// executor plugin that is a shell script whose child never ends (`sleep
// 1000`, not exec'd, so the child holds the plugin's stdout) hung validate
// indefinitely. Now validate fails within the start timeout (2 s here),
// naming the binary, and neither the script nor its child is left running.
func TestValidateHangingPluginIsStopped(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigSpec(`executor "x" { type = "hang" }`, 1))
	bin := t.TempDir()
	plugin := filepath.Join(bin, "infercrane-executor-hang")
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\nsleep 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.env = append(r.env, "INFERCRANE_PLUGIN_DIR="+bin, "INFERCRANE_TEST_PLUGIN_START_TIMEOUT=2s")
	cmd := r.command("validate")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(60 * time.Second): // a hang, not a slow machine
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("validate still hangs after 60 s with a 2 s plugin start timeout")
	}
	took := time.Since(start)
	if cmd.ProcessState.ExitCode() == 0 {
		t.Fatalf("validate passed with a plugin that never answered:\n%s%s", out.String(), errb.String())
	}
	all := out.String() + errb.String()
	for _, want := range []string{plugin, "did not answer the handshake within 2s", "were killed"} {
		if !strings.Contains(all, want) {
			t.Errorf("validate's error does not say %q:\n%s", want, all)
		}
	}
	if took > 30*time.Second { // 2 s and the kill, with room for a busy machine's process starts
		t.Errorf("validate took %s with a 2 s start timeout", took)
	}
	r.noLeftovers()
}
