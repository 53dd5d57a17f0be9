package modal_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/plugins/modal"
	"github.com/infercrane/infercrane/plugins/modal/localcloud"
)

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q lacks %q", err, p)
		}
	}
}

func TestImagePullFailure(t *testing.T) {
	f := newFixture(t, map[string]any{"image": "vllm/vllm-openai:v9.9.9"}, func(c *localcloud.Cloud) {
		c.Hooks.BeforeCreate = func(s modal.SandboxSpec) error {
			return fmt.Errorf("%w: Image build for im-123 failed: manifest for %s not found", modal.ErrImage, s.Image)
		}
	})
	_, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	wantErr(t, err, "image vllm/vllm-openai:v9.9.9 could not be pulled", "runtime version")
	if !errors.Is(err, modal.ErrImage) {
		t.Fatalf("not ErrImage: %v", err)
	}
	if r := f.cloud.Running(); len(r) != 0 {
		t.Fatalf("running after a failed create: %v", r)
	}
}

func TestCapacityRetriedThenSucceeds(t *testing.T) {
	var calls atomic.Int32
	f := newFixture(t, nil, func(c *localcloud.Cloud) {
		c.Hooks.BeforeCreate = func(modal.SandboxSpec) error {
			if calls.Add(1) <= 2 {
				return fmt.Errorf("%w: Insufficient capacity to create sandbox.", modal.ErrCapacity)
			}
			return nil
		}
	})
	srv, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.exec.Teardown(t.Context(), srv)
	if calls.Load() != 3 {
		t.Fatalf("%d creates", calls.Load())
	}
	if p := f.progressText(); strings.Count(p, "no capacity or rate-limited us") != 2 {
		t.Fatalf("retries not reported:\n%s", p)
	}
}

func TestCapacityGivesUp(t *testing.T) {
	var calls atomic.Int32
	f := newFixture(t, nil, func(c *localcloud.Cloud) {
		c.Hooks.BeforeCreate = func(modal.SandboxSpec) error {
			calls.Add(1)
			return fmt.Errorf("%w: rate limit exceeded", modal.ErrCapacity)
		}
	})
	_, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	wantErr(t, err, "no L4 capacity on Modal, or rate limited, even after retries", "gave up after 4 attempts", "lower -parallelism")
	if calls.Load() != 4 {
		t.Fatalf("%d creates, want 4", calls.Load())
	}
}

// Modal queueing the sandbox for want of a GPU ends at health_timeout.
func TestCreateNeverScheduled(t *testing.T) {
	var calls atomic.Int32
	f := newFixture(t, map[string]any{"health_timeout": "1s"}, func(c *localcloud.Cloud) {
		c.Hooks.BeforeCreate = func(modal.SandboxSpec) error {
			calls.Add(1)
			time.Sleep(2 * time.Second) // waiting for scheduling
			return context.DeadlineExceeded
		}
	})
	_, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	wantErr(t, err, "no L4 was scheduled within health_timeout (1s)")
	if calls.Load() != 1 {
		t.Fatalf("%d creates; a scheduling timeout must not be retried", calls.Load())
	}
}

// A create that started a sandbox but reported failure leaves no orphan:
// Deploy finds it by its tags and terminates it.
func TestFailedCreateLeavesNoOrphan(t *testing.T) {
	f := newFixture(t, nil, func(c *localcloud.Cloud) {
		c.Hooks.AfterCreate = func(id string) error { return errors.New("connection reset while waiting for scheduling") }
	})
	_, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	wantErr(t, err, "creating a L4 sandbox failed", "connection reset")
	if r := f.cloud.Running(); len(r) != 0 {
		t.Fatalf("orphan left: %v", r)
	}
	if !strings.Contains(f.logFile("dep1"), "left behind by the failed create") {
		t.Fatal(f.logFile("dep1"))
	}
}

func TestHealthTimeout(t *testing.T) {
	f := newFixture(t, map[string]any{"health_timeout": "1s"}, func(c *localcloud.Cloud) {
		c.ServeCommand = func(port int, _ []string) []string { return []string{"sleep", "60"} }
	})
	start := time.Now()
	_, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	wantErr(t, err, "did not answer /health within health_timeout (1s)", "raise health_timeout", "connection refused")
	if time.Since(start) > 60*time.Second { // a hang, not a slow machine
		t.Fatalf("deploy took %s", time.Since(start))
	}
	id := sandboxID(t, err)
	f.mustBeGone(id)
}

func TestServerExitsBeforeHealthy(t *testing.T) {
	f := newFixture(t, nil, func(c *localcloud.Cloud) {
		c.ServeCommand = func(int, []string) []string {
			return []string{"sh", "-c", "echo 'CUDA out of memory' >&2; exit 3"}
		}
	})
	_, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	wantErr(t, err, "exited with code 3 before /health answered", "modal-dep1.log")
	if log := f.logFile("dep1"); !strings.Contains(log, "CUDA out of memory") {
		t.Fatalf("server output not in the log:\n%s", log)
	}
	f.mustBeGone(sandboxID(t, err))
}

// Ctrl-C while the server starts: Deploy returns and the sandbox is
// terminated although the context is gone.
func TestCancelDuringDeploy(t *testing.T) {
	f := newFixture(t, nil, func(c *localcloud.Cloud) {
		c.ServeCommand = func(int, []string) []string { return []string{"sleep", "60"} }
	})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err := f.exec.Deploy(ctx, f.deployment("dep1"))
	wantErr(t, err, "cancelled while", "sandbox sb-")
	f.mustBeGone(sandboxID(t, err))
}

func TestExecFailure(t *testing.T) {
	f := newFixture(t, nil, func(c *localcloud.Cloud) {
		c.Hooks.BeforeExec = func(id string, argv []string) error {
			if len(argv) > 1 && argv[1] == "bench" {
				return errors.New("task command router unavailable")
			}
			return nil
		}
	})
	srv, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.exec.Run(t.Context(), srv, executor.RunSpec{Lane: "l", Run: 1, Load: load(4)})
	wantErr(t, err, "run 1 of lane l in sandbox "+srv.Handle+" failed", "starting the load generator", "task command router unavailable")
	if err := f.exec.Teardown(t.Context(), srv); err != nil {
		t.Fatal(err)
	}
	f.mustBeGone(srv.Handle)
}

// The load generator itself failing is reported with its last output.
func TestLoadGeneratorFails(t *testing.T) {
	f := newFixture(t, nil, nil)
	srv, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.exec.Teardown(t.Context(), srv)
	bad := load(4)
	bad.InputTokens = -5
	_, err = f.exec.Run(t.Context(), srv, executor.RunSpec{Lane: "l", Run: 1, Load: bad})
	wantErr(t, err, "the load generator exited with code", "its last output")
}

// Modal killing the sandbox mid-run (timeout, preemption, OOM) is told apart
// from a failing load generator.
func TestSandboxKilledMidRun(t *testing.T) {
	f := newFixture(t, nil, func(c *localcloud.Cloud) { c.SimArgs = []string{"--ttft", "5ms", "--itl", "50ms"} })
	srv, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(400*time.Millisecond, func() { f.cloud.Kill(srv.Handle) })
	l := load(20)
	l.OutputTokens = 40
	_, err = f.exec.Run(t.Context(), srv, executor.RunSpec{Lane: "l", Run: 1, Load: l})
	wantErr(t, err, "sandbox "+srv.Handle+" stopped during run 1 of lane l (exit code 137)", "preemption")
	if err := f.exec.Teardown(t.Context(), srv); err != nil {
		t.Fatalf("teardown of a killed sandbox: %v", err)
	}
	f.mustBeGone(srv.Handle)
}

// Ctrl-C mid-run stops the load generator; teardown still terminates.
func TestCancelMidRun(t *testing.T) {
	f := newFixture(t, nil, func(c *localcloud.Cloud) { c.SimArgs = []string{"--ttft", "5ms", "--itl", "50ms"} })
	srv, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	l := load(20)
	l.OutputTokens = 40
	start := time.Now()
	_, err = f.exec.Run(ctx, srv, executor.RunSpec{Lane: "l", Run: 1, Load: l})
	wantErr(t, err, "cancelled", "context canceled")
	if time.Since(start) > 60*time.Second { // a hang, not a slow machine
		t.Fatalf("cancel took %s", time.Since(start))
	}
	if err := f.exec.Teardown(ctx, srv); err != nil {
		t.Fatal(err)
	}
	f.mustBeGone(srv.Handle)
}

func TestTerminateRetried(t *testing.T) {
	var calls atomic.Int32
	f := newFixture(t, nil, func(c *localcloud.Cloud) {
		c.Hooks.BeforeTerminate = func(string) error {
			if calls.Add(1) <= 2 {
				return errors.New("UNAVAILABLE: upstream connect error")
			}
			return nil
		}
	})
	srv, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.exec.Teardown(t.Context(), srv); err != nil {
		t.Fatal(err)
	}
	f.mustBeGone(srv.Handle)
	if rec := f.teardownRecord("dep1"); !strings.Contains(rec, `"terminate_attempts": 3`) {
		t.Fatal(rec)
	}
}

// A terminate that keeps failing is reported with what to do; the sandbox
// stays tracked, and `cleanup` terminates it once Modal answers again.
func TestTerminateFailsThenCleanup(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	f := newFixture(t, nil, func(c *localcloud.Cloud) {
		c.Hooks.BeforeTerminate = func(string) error {
			if broken.Load() {
				return errors.New("UNAVAILABLE: upstream connect error")
			}
			return nil
		}
	})
	srv, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	if err != nil {
		t.Fatal(err)
	}
	err = f.exec.Teardown(t.Context(), srv)
	wantErr(t, err, "could not terminate sandbox "+srv.Handle+" (4 attempts)", "timeout (30m0s)", "may still be running")
	if !errors.Is(err, executor.ErrLeftRunning) {
		t.Errorf("%v is not executor.ErrLeftRunning, after which the CLI says to run cleanup", err)
	}
	if rec := f.teardownRecord("dep1"); !strings.Contains(rec, `"terminated": false`) {
		t.Fatal(rec)
	}
	if r := f.cloud.Running(); len(r) != 1 {
		t.Fatalf("running: %v", r)
	}
	broken.Store(false)
	rep, err := modal.Cleanup(t.Context(), f.cloud, modal.CleanupOptions{Terminate: fast})
	if err != nil || rep.Terminated != 1 || rep.Sandboxes[0].ID != srv.Handle {
		t.Fatalf("cleanup: %+v, %v", rep, err)
	}
	f.mustBeGone(srv.Handle)
}

// sandboxID digs the sandbox id out of an error message.
func sandboxID(t *testing.T, err error) string {
	t.Helper()
	for _, w := range strings.Fields(err.Error()) {
		if strings.HasPrefix(w, "sb-") {
			return strings.TrimRight(w, ".,:;)")
		}
	}
	t.Fatalf("no sandbox id in %q", err)
	return ""
}
