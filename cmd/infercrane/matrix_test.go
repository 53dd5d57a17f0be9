package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/planner/state"
)

// matrixKind is one executor setup of the kill-anywhere matrix.
type matrixKind struct {
	name  string
	block string
	env   []string
	// store, when set, keeps the state in an S3 backend: every iteration
	// under its own prefix, resumed from the bucket (after a SIGKILL, once
	// force-unlock freed the killed apply's lock).
	store *s3Store
}

// TestKillAnywhereMatrix runs apply under SIGINT, SIGTERM or SIGKILL at a
// random moment (during plan, deploy, a run, teardown, or after it ended),
// then resumes, for each executor kind: sim, local (the server is the
// process apply starts), local under a wrapper shell, an external plugin
// binary, and the local executor served as a plugin process (so the
// plugin's own teardown on host death is exercised). After each iteration
// it checks that every run is journaled exactly once (none lost, none
// repeated: the resume makes only the runs the journal lacked), that
// `verify -state` passes, that no process of the apply's tree is left, and
// that the lock is released. INFERCRANE_MATRIX_ITERATIONS sets the
// iterations per kind (default 2; `make reliability` runs 20),
// INFERCRANE_MATRIX_SEED the random seed.
func TestKillAnywhereMatrix(t *testing.T) {
	t.Parallel()
	iters := 2
	if v, err := strconv.Atoi(os.Getenv("INFERCRANE_MATRIX_ITERATIONS")); err == nil && v > 0 {
		iters = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("INFERCRANE_MATRIX_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (INFERCRANE_MATRIX_SEED=%d reproduces it), %d iterations per kind", seed, seed, iters)
	kinds := []matrixKind{
		{name: "sim", block: simBlock},
		{name: "local", block: localBlock()},
		{name: "local-wrapped", block: wrappedBlock()},
	}
	if gobin, err := exec.LookPath("go"); err == nil {
		dir := t.TempDir()
		build := exec.Command(gobin, "build", "-o", filepath.Join(dir, "infercrane-executor-example"), "../../plugins/cmd/infercrane-executor-example")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build the plugin: %v\n%s", err, out)
		}
		kinds = append(kinds, matrixKind{name: "plugin", env: []string{"INFERCRANE_PLUGIN_DIR=" + dir},
			block: "executor \"x\" {\n  type = \"example\"\n  ttft = \"5ms\"\n  itl  = \"20ms\"\n}\n"})
	} else {
		t.Log("no go toolchain: the external plugin kind is left out")
	}
	kinds = append(kinds, matrixKind{name: "plugin-local-wrapped", block: wrappedBlock(), env: []string{"INFERCRANE_EXECUTOR_ISOLATION=process"}})
	kinds = append(kinds, matrixKind{name: "sim-s3-backend", block: simBlock, store: newS3Store(t, "team"), env: backendEnv})

	var mu sync.Mutex
	var summary []string
	for i, k := range kinds {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			var f matrixFigures
			for it := 0; it < iters; it++ {
				f.add(runMatrixIteration(t, k, rng))
				if t.Failed() {
					break
				}
			}
			line := fmt.Sprintf("%-21s %s", k.name, f)
			t.Log(line)
			mu.Lock()
			summary = append(summary, line)
			mu.Unlock()
		})
	}
	t.Cleanup(func() {
		t.Logf("kill-anywhere matrix, %d iterations per kind:\n%s", iters, strings.Join(summary, "\n"))
	})
}

// matrixFigures are what the matrix counts per kind.
type matrixFigures struct {
	bySignal                                                     map[string]int
	interrupted, finishedFirst                                   int
	reaped, orphans, lost, repeated, leftoverLocks, verifyFailed int
}

func (f *matrixFigures) add(o matrixOutcome) {
	if f.bySignal == nil {
		f.bySignal = map[string]int{}
	}
	f.bySignal[o.signal]++
	if o.finishedFirst {
		f.finishedFirst++
	} else {
		f.interrupted++
	}
	f.reaped += o.reaped
	f.orphans += o.orphans
	f.lost += o.lost
	f.repeated += o.repeated
	f.leftoverLocks += o.leftoverLock
	f.verifyFailed += o.verifyFailed
}

func (f matrixFigures) String() string {
	return fmt.Sprintf("%d iterations (SIGINT %d, SIGTERM %d, SIGKILL %d; %d interrupted mid-apply, %d after it finished): %d orphans, %d lost runs, %d repeated runs, %d leftover locks, %d verify failures; %d deployments reaped on resume",
		f.interrupted+f.finishedFirst, f.bySignal["SIGINT"], f.bySignal["SIGTERM"], f.bySignal["SIGKILL"], f.interrupted, f.finishedFirst,
		f.orphans, f.lost, f.repeated, f.leftoverLocks, f.verifyFailed, f.reaped)
}

type matrixOutcome struct {
	signal                                                      string
	finishedFirst                                               bool
	reaped, orphans, lost, repeated, leftoverLock, verifyFailed int
}

// runMatrixIteration is one kill and resume. Failures are reported with
// t.Errorf (so the figures still add up) and counted.
func runMatrixIteration(t *testing.T, k matrixKind, rng *rand.Rand) matrixOutcome {
	t.Helper()
	const runs = 3
	spec := rigSpec(k.block, runs)
	if k.store != nil {
		spec = backendBlock(k.store, fmt.Sprintf("matrix/%d", rng.Uint64())) + spec
	}
	r := newRig(t, spec)
	r.env = append(r.env, k.env...)
	sigs := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL}
	sig := sigs[rng.IntN(len(sigs))]
	delay := time.Duration(rng.Int64N(int64(2500 * time.Millisecond)))
	o := matrixOutcome{signal: map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGKILL: "SIGKILL"}[sig]}
	what := fmt.Sprintf("%s after %v", o.signal, delay.Round(time.Millisecond))

	run := r.start()
	var evs []executor.Event
	var code int
	done := make(chan struct{})
	go func() { evs, code = run.wait(t); close(done) }()
	select {
	case <-done:
		o.finishedFirst = true
	case <-time.After(delay):
		run.cmd.Process.Signal(sig)
		<-done
	}
	if !o.finishedFirst && code == 0 {
		o.finishedFirst = true // the signal came as it exited
	}
	switch {
	case o.finishedFirst && code != 0:
		t.Errorf("%s: the apply finished on its own with exit %d; stderr:\n%s", what, code, run.stderr)
	case !o.finishedFirst && sig != syscall.SIGKILL && code == -int(sig) && count(evs, executor.EventDeployStarted) > 0:
		// Killed by the signal's default action before apply installed its
		// handler is fine (a shell reports 130 too) only while nothing was
		// deployed.
		t.Errorf("%s: killed by the signal after a deploy started; stderr:\n%s", what, run.stderr)
	case !o.finishedFirst && sig != syscall.SIGKILL && code != 130 && code != -int(sig):
		t.Errorf("%s: exit %d, want 130; stderr:\n%s", what, code, run.stderr)
	}
	dir := filepath.Join(r.dir, ".infercrane")
	if held, pid := state.Held(dir); held {
		t.Errorf("%s: the lock is still held (PID %d) after the apply exited", what, pid)
		o.leftoverLock++
	}
	if sig != syscall.SIGKILL {
		// Interrupted applies tear down before they exit.
		if left := waitGone(r, goneWithin); len(left) > 0 {
			t.Errorf("%s: processes left after the apply exited: %s", what, describePIDs(left))
			o.orphans += len(left)
		}
	}
	before := journaledRuns(t, dir)
	for n, c := range before {
		if c > 1 {
			t.Errorf("%s: run %d journaled %d times by one apply", what, n, c)
			o.repeated += c - 1
		}
	}
	finishedBefore := map[int]bool{}
	for _, e := range evs {
		if e.Type == executor.EventRunFinished {
			finishedBefore[e.Run] = true
			if before[e.Run] == 0 {
				t.Errorf("%s: run %d finished (event) but is not journaled", what, e.Run)
				o.lost++
			}
		}
	}

	resumed := r.start()
	revs, rcode := resumed.wait(t)
	if m := lockIDIn.FindStringSubmatch(resumed.stderr.String()); k.store != nil && rcode == 1 && m != nil {
		// Only a killed apply leaves the backend's lock behind.
		if sig != syscall.SIGKILL {
			t.Errorf("%s: the backend's lock was left by an apply that exited: %s", what, resumed.stderr)
			o.leftoverLock++
		}
		if out, err := r.command("force-unlock", m[1]).CombinedOutput(); err != nil {
			t.Fatalf("%s: force-unlock: %v\n%s", what, err, out)
		}
		resumed = r.start()
		revs, rcode = resumed.wait(t)
	}
	if rcode != 0 {
		t.Errorf("%s: resume exit %d; stderr:\n%s", what, rcode, resumed.stderr)
	}
	o.reaped = count(revs, executor.EventDeploymentReaped)
	if n := count(revs, executor.EventReapFailed); n > 0 {
		t.Errorf("%s: %d reaps failed on resume; stderr:\n%s", what, n, resumed.stderr)
	}
	for _, e := range revs {
		if e.Type == executor.EventRunFinished && before[e.Run] > 0 {
			t.Errorf("%s: resume redid run %d, which was journaled", what, e.Run)
			o.repeated++
		}
	}
	after := journaledRuns(t, dir)
	for n := 1; n <= runs; n++ {
		switch c := after[n]; {
		case c == 0:
			t.Errorf("%s: run %d is not journaled after the resume", what, n)
			o.lost++
		case c > 1:
			t.Errorf("%s: run %d journaled %d times", what, n, c)
			o.repeated += c - 1
		}
	}
	if left := waitGone(r, goneWithin); len(left) > 0 {
		t.Errorf("%s: processes left after the resume: %s", what, describePIDs(left))
		o.orphans += len(left)
	}
	if held, pid := state.Held(dir); held {
		t.Errorf("%s: the lock is still held (PID %d) after the resume", what, pid)
		o.leftoverLock++
	}
	if live, _ := state.LiveDeployments(dir); len(live) > 0 {
		t.Errorf("%s: deployments journaled as not torn down after the resume: %+v", what, live)
		o.orphans += len(live)
	}
	evidence, _ := filepath.Glob(filepath.Join(dir, state.ReportsDir, "*.evidence.json"))
	if len(evidence) == 0 {
		t.Errorf("%s: no evidence file after the resume", what)
		o.verifyFailed++
	}
	for _, ev := range evidence {
		if out, err := r.command("verify", "-state", ".infercrane", ev).CombinedOutput(); err != nil {
			t.Errorf("%s: verify -state: %v\n%s", what, err, out)
			o.verifyFailed++
		}
	}
	return o
}

// goneWithin bounds how long the rig's processes may take to vanish after
// the apply exited: a killed parent's children get SIGKILL from the kernel
// and a stopping server finishes its exit, which on a loaded 2-core machine
// (load 10-20) takes seconds, not milliseconds. A process that really
// leaked is still there after any bound; this one only has to be generous.
const goneWithin = 60 * time.Second

// waitGone waits up to d for the rig's processes to be gone and returns
// those left.
func waitGone(r *applyRig, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		left := r.marked()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// journaledRuns counts the intact run entries per run number in the state's
// journal (all lanes: the matrix spec has one).
func journaledRuns(t *testing.T, dir string) map[int]int {
	t.Helper()
	scan, err := state.ReadJournal(filepath.Join(dir, state.JournalFile))
	if err != nil {
		t.Fatalf("read the journal: %v", err)
	}
	out := map[int]int{}
	for _, e := range scan.Entries {
		switch e.Type {
		case state.EntryRun:
			out[e.Result.Run]++
		case state.EntryDrop:
			clear(out)
		}
	}
	return out
}

// describePIDs names processes by PID, parent and command line.
func describePIDs(pids []int) string {
	var out []string
	for _, pid := range pids {
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		out = append(out, fmt.Sprintf("%d [%s] %s", pid, strings.TrimSpace(string(st)), strings.ReplaceAll(string(cl), "\x00", " ")))
	}
	return strings.Join(out, "; ")
}
