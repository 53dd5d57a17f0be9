package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
)

func isRunFinished(e executor.Event) bool { return e.Type == executor.EventRunFinished }

// resume runs apply again and checks it completes exactly the runs that
// were missing, leaves nothing running, and that plan then has no work.
func (r *applyRig) resume(wantRuns int) string {
	r.t.Helper()
	code, out, errOut := r.apply()
	if code != 0 {
		r.t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
	}
	if want := fmt.Sprintf("%d run(s) completed, 0 failed", wantRuns); !strings.Contains(out, want) {
		r.t.Fatalf("resume: want %q in\n%s", want, out)
	}
	r.noLeftovers()
	if line := r.planLine(); !strings.HasPrefix(line, "Plan: 0 lanes to run") {
		r.t.Fatalf("after resume, plan says %q", line)
	}
	return errOut
}

func TestApplySIGINTTearsDownAndResumes(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigSpec(localBlock(), 3))
	run := r.start()
	run.until(t, "a finished run", isRunFinished)
	if err := run.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	evs, code := run.wait(t)
	if code != 130 {
		t.Fatalf("exit %d, want 130; stderr:\n%s", code, run.stderr)
	}
	if count(evs, executor.EventTeardownFinished) != 1 {
		t.Fatalf("no teardown after SIGINT; stderr:\n%s", run.stderr)
	}
	if !strings.Contains(run.stderr.String(), "Completed runs are kept") {
		t.Errorf("stderr does not explain the interruption:\n%s", run.stderr)
	}
	r.noLeftovers()
	done := 1 + count(evs, executor.EventRunFinished)
	r.resume(3 - done)
}

func TestApplySIGKILLLeavesNothingAndResumes(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigSpec(localBlock(), 3))
	run := r.start()
	run.until(t, "a finished run", isRunFinished)
	run.cmd.Process.Kill()
	evs, _ := run.wait(t)
	// The server child dies with its parent (and nothing tears it down).
	r.noLeftovers()
	done := 1 + count(evs, executor.EventRunFinished)
	errOut := r.resume(3 - done)
	if !strings.Contains(errOut, "took over the lock of PID") {
		t.Errorf("the stale lock was not noted:\n%s", errOut)
	}
}

func TestApplyServerNeverHealthy(t *testing.T) {
	t.Parallel()
	r := newRig(t, strings.Replace(rigSpec(localBlock("--slow-start", "1h"), 2), `health_timeout = "20s"`, `health_timeout = "1s"`, 1))
	code, _, errOut := r.apply()
	if code != 1 || !strings.Contains(errOut, "did not answer GET") || !strings.Contains(errOut, "/health with 200 within 1s") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	r.noLeftovers()
	r.write(rigSpec(localBlock(), 2))
	r.resume(2)
}

func TestApplyServerCrashMidRun(t *testing.T) {
	t.Parallel()
	// The server reads extra flags from a file, so the fault can be removed
	// without changing the spec (and so the lane's identity).
	block := `executor "x" {
  type           = "local"
  command        = ["sh", "-c", "exec infercrane sim serve --port {port} --model {model} --ttft 5ms --itl 20ms $(cat fault.flags)"]
  health_timeout = "20s"
  stop_timeout   = "5s"
}`
	r := newRig(t, rigSpec(block, 3))
	// Requests 1-6 are served; the 7th (in run 2) crashes the server.
	os.WriteFile(filepath.Join(r.dir, "fault.flags"), []byte("--crash-after 6"), 0o644)
	code, out, errOut := r.apply()
	if code != 1 || !strings.Contains(errOut, "server process exited during the run") || !strings.Contains(errOut, "run 2 of lane") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "1 run(s) completed, 1 failed") {
		t.Fatalf("stdout:\n%s", out)
	}
	r.noLeftovers()
	os.WriteFile(filepath.Join(r.dir, "fault.flags"), nil, 0o644)
	r.resume(2)
}

func TestApplyPluginKilledMidRun(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigSpec(simBlock, 3))
	r.env = append(r.env, "INFERCRANE_EXECUTOR_ISOLATION=process")
	run := r.start()
	run.until(t, "run 2 starting", func(e executor.Event) bool { return e.Type == executor.EventRunStarted && e.Run == 2 })
	var plugin int
	for _, pid := range r.marked() {
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(cl), "executor\x00serve\x00sim") {
			plugin = pid
		}
	}
	if plugin == 0 {
		run.cmd.Process.Kill()
		t.Fatal("no plugin process found")
	}
	syscall.Kill(plugin, syscall.SIGKILL)
	evs, code := run.wait(t)
	stderr := run.stderr.String()
	if code != 1 || !strings.Contains(stderr, "executor plugin sim") || !strings.Contains(stderr, "exited unexpectedly during Run") || !strings.Contains(stderr, "run 2 of lane") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if count(evs, executor.EventTeardownFinished)+count(evs, executor.EventTeardownFailed) != 1 {
		t.Fatalf("no teardown after the plugin died")
	}
	r.noLeftovers()
	r.resume(2)
}

func TestApplyUnwritableJournalDir(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigSpec(simBlock, 2))
	runs := filepath.Join(r.dir, ".infercrane", "runs")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(runs, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// root writes anywhere: run apply as an unprivileged user instead.
		r.unprivileged()
	}
	code, out, errOut := r.apply()
	os.Chmod(runs, 0o755)
	if code != 1 || !strings.Contains(errOut, "write the records of run 1 of lane") || !strings.Contains(errOut, "permission denied") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "Tore down") {
		t.Fatalf("no teardown:\n%s", out)
	}
	r.noLeftovers()
	r.resume(2)
}

// unprivileged makes the rig's apply processes run as nobody, with a copy
// of the test binary they can execute and a state directory they own.
func (r *applyRig) unprivileged() {
	r.t.Helper()
	self, err := exec.LookPath("infercrane")
	if err != nil {
		r.t.Fatal(err)
	}
	bin := filepath.Join(r.dir, "bin")
	os.MkdirAll(bin, 0o755)
	data, err := os.ReadFile(self)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "infercrane"), data, 0o755); err != nil {
		r.t.Fatal(err)
	}
	for d := r.dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if strings.HasPrefix(d, os.TempDir()) && d != os.TempDir() {
			os.Chmod(d, 0o755)
		}
	}
	filepath.Walk(r.dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	r.env = append(r.env, "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+r.dir)
	r.cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	r.bin = filepath.Join(bin, "infercrane")
}

func TestSecondApplyFailsFastNamingHolder(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigSpec(simBlock, 3))
	run := r.start()
	run.until(t, "a run starting", func(e executor.Event) bool { return e.Type == executor.EventRunStarted })
	code, _, errOut := r.apply()
	want := fmt.Sprintf("is locked by PID %d", run.cmd.Process.Pid)
	if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "(started ") {
		t.Errorf("second apply: exit %d, want %q in stderr:\n%s", code, want, errOut)
	}
	_, code = run.wait(t)
	if code != 0 {
		t.Fatalf("first apply: exit %d\n%s", code, run.stderr)
	}
	r.noLeftovers()
}

// TestDeletedLockFileStillRefusesSecondApply deletes the state's lock file
// while an apply runs: a second apply is still refused (the lock is an
// flock on the state directory) and names the holder.
func TestDeletedLockFileStillRefusesSecondApply(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigSpec(simBlock, 3))
	run := r.start()
	run.until(t, "a run starting", func(e executor.Event) bool { return e.Type == executor.EventRunStarted })
	if err := os.Remove(filepath.Join(r.dir, ".infercrane", "lock")); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := r.apply()
	want := fmt.Sprintf("is locked by PID %d", run.cmd.Process.Pid)
	if code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("second apply after the lock file was deleted: exit %d, want %q in stderr:\n%s", code, want, errOut)
	}
	evs, code := run.wait(t)
	if code != 0 {
		t.Fatalf("first apply: exit %d\n%s", code, run.stderr)
	}
	if n := count(evs, executor.EventRunFinished); n != 3 {
		t.Fatalf("first apply finished %d runs, want 3", n)
	}
	r.noLeftovers()
	if line := r.planLine(); !strings.HasPrefix(line, "Plan: 0 lanes to run") {
		t.Fatalf("after the apply, plan says %q", line)
	}
}

func TestApplyInterruptTwiceSaysWhatIsLeftThriceForceQuits(t *testing.T) {
	t.Parallel()
	// The server's group ignores SIGTERM (only SIGKILL ends it), so the
	// teardown after the first interrupt waits for stop_timeout.
	block := `executor "x" {
  type           = "local"
  command        = ["sh", "-c", "trap '' TERM; infercrane sim serve --port {port} --model {model} --ttft 5ms --itl 20ms & exec sleep 300"]
  health_timeout = "20s"
  stop_timeout   = "60s"
}`
	r := newRig(t, rigSpec(block, 3))
	run := r.start()
	run.until(t, "a run starting", func(e executor.Event) bool { return e.Type == executor.EventRunStarted })
	run.cmd.Process.Signal(os.Interrupt)
	run.until(t, "the teardown starting", func(e executor.Event) bool { return e.Type == executor.EventTeardownStarted })
	run.cmd.Process.Signal(os.Interrupt)
	deadline := time.Now().Add(60 * time.Second) // a hang, not a slow machine
	for !strings.Contains(run.stderr.String(), "Still cleaning up: teardown of deployment") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	run.cmd.Process.Signal(os.Interrupt)
	_, code := run.wait(t)
	stderr := run.stderr.String()
	if code != 130 || !strings.Contains(stderr, "Still cleaning up: teardown of deployment") || !strings.Contains(stderr, "Force quitting") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	r.noLeftovers()
	// The state is consistent: the next apply takes over and completes.
	r.write(rigSpec(localBlock(), 3))
	r.resume(3)
}

// TestGapInCompletedRunsCountsOneRun loses the records of run 1 of 3: plan,
// the progress display and apply all count the one run that is redone
// (they counted 3 while apply made 1).
func TestGapInCompletedRunsCountsOneRun(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigSpec(simBlock, 3))
	if code, out, errOut := r.apply(); code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	lost, _ := filepath.Glob(filepath.Join(r.dir, ".infercrane", "runs", "*", "1.jsonl"))
	if len(lost) != 1 {
		t.Fatalf("records of run 1: %v", lost)
	}
	if err := os.Remove(lost[0]); err != nil {
		t.Fatal(err)
	}
	if line := r.planLine(); !strings.Contains(line, "1 lane to run (1 run, 4 requests)") {
		t.Fatalf("plan after losing run 1: %q", line)
	}
	run := r.start()
	evs, code := run.wait(t)
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, run.stderr)
	}
	var started executor.Event
	var runs []int
	for _, e := range evs {
		switch e.Type {
		case executor.EventApplyStarted:
			started = e
		case executor.EventRunFinished:
			runs = append(runs, e.Run)
		}
	}
	if started.RunsToDo != 1 || fmt.Sprint(runs) != "[1]" {
		t.Fatalf("apply_started says %d runs to do; runs finished %v (want 1 and [1])", started.RunsToDo, runs)
	}
	if line := r.planLine(); !strings.HasPrefix(line, "Plan: 0 lanes to run") {
		t.Fatalf("after the apply, plan says %q", line)
	}
}

// wrappedBlock is a local executor whose server runs under a wrapper shell
// that does not exec it (like `source venv/bin/activate && vllm serve`):
// the server is the wrapper's child, not the process apply started.
func wrappedBlock() string {
	return `executor "x" {
  type           = "local"
  command        = ["sh", "-c", "infercrane sim serve --port {port} --model {model} --ttft 5ms --itl 20ms; echo server exited"]
  health_timeout = "20s"
  stop_timeout   = "5s"
}`
}

// TestApplySIGKILLWrappedServerIsReaped kills apply with SIGKILL while a
// wrapped server runs. The kernel kills the wrapper (Pdeathsig), not the
// server under it; plan warns that a deployment of a dead apply was never
// torn down, and the next apply reaps it from the deployments journal
// (cgroup, or process group and mark), says so and resumes, leaving
// nothing running. It runs with the cgroup and without (the fallback).
func TestApplySIGKILLWrappedServerIsReaped(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"cgroup", "no-cgroup"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigSpec(wrappedBlock(), 3))
			if mode == "no-cgroup" {
				r.env = append(r.env, "INFERCRANE_NO_CGROUP=1")
			}
			run := r.start()
			run.until(t, "a finished run", isRunFinished)
			run.cmd.Process.Kill()
			evs, _ := run.wait(t)
			time.Sleep(200 * time.Millisecond)
			if len(r.marked()) == 0 {
				t.Fatal("nothing was left running after SIGKILL: the test does not test the reap")
			}
			logs, _ := filepath.Glob(filepath.Join(r.dir, ".infercrane", "logs", "server-*.log"))
			var log []byte
			if len(logs) == 1 {
				log, _ = os.ReadFile(logs[0])
			}
			if mode == "cgroup" && strings.Contains(string(log), "no writable cgroup v2 here") {
				t.Skip("this machine gives no writable cgroup v2; the no-cgroup variant covers the fallback")
			}
			if want := map[string]string{"cgroup": "server tree in cgroup", "no-cgroup": "no writable cgroup v2 here"}[mode]; !strings.Contains(string(log), want) {
				t.Fatalf("server log does not say %q:\n%s", want, log)
			}
			out, err := r.command("plan").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "never torn down and may still be up") {
				t.Fatalf("plan after SIGKILL does not warn of the deployment left: %v\n%s", err, out)
			}
			done := 1 + count(evs, executor.EventRunFinished)
			resumed := r.start()
			revs, code := resumed.wait(t)
			if code != 0 || count(revs, executor.EventDeploymentReaped) != 1 {
				t.Fatalf("resume: exit %d, %d reaped; stderr:\n%s", code, count(revs, executor.EventDeploymentReaped), resumed.stderr)
			}
			if n := count(revs, executor.EventRunFinished); n != 3-done {
				t.Fatalf("resume made %d runs, want %d", n, 3-done)
			}
			r.noLeftovers()
			out, _ = r.command("plan").CombinedOutput()
			if strings.Contains(string(out), "never torn down") {
				t.Fatalf("plan still warns after the reap:\n%s", out)
			}
		})
	}
}

// TestCleanupStateReapsWhatAKilledApplyLeft: after SIGKILL of an apply
// whose server runs under a wrapper, `cleanup -state` tears the server's
// tree down (and says so), nothing is left running, and plan no longer
// warns.
func TestCleanupStateReapsWhatAKilledApplyLeft(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigSpec(wrappedBlock(), 3))
	run := r.start()
	run.until(t, "a finished run", isRunFinished)
	run.cmd.Process.Kill()
	run.wait(t)
	time.Sleep(200 * time.Millisecond)
	if len(r.marked()) == 0 {
		t.Fatal("nothing was left running after SIGKILL: the test does not test the reap")
	}
	out, err := r.command("cleanup", "-state", ".infercrane", "-dry-run").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "would tear down deployment") {
		t.Fatalf("cleanup -dry-run: %v\n%s", err, out)
	}
	out, err = r.command("cleanup", "-state", ".infercrane").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tore down deployment") || !strings.Contains(string(out), "(executor local) left by apply") {
		t.Fatalf("cleanup: %v\n%s", err, out)
	}
	r.noLeftovers()
	out, _ = r.command("plan").CombinedOutput()
	if strings.Contains(string(out), "never torn down") {
		t.Fatalf("plan still warns after cleanup:\n%s", out)
	}
	out, err = r.command("cleanup", "-state", ".infercrane").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "no deployment left running") {
		t.Fatalf("second cleanup: %v\n%s", err, out)
	}
}
