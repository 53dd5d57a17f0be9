package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
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
)

// applyRig runs real `infercrane apply` processes (the test binary on PATH,
// see TestMain) on a spec in a temporary directory. Every process it starts,
// and everything they start, carries a unique environment marker, so the
// process table can be checked for leftovers.
type applyRig struct {
	t    *testing.T
	dir  string
	mark string
	env  []string
	cred *syscall.Credential // run as this user (nil: as the test)
	bin  string              // the infercrane binary (default: from PATH)
}

// rigSpec is a one-model, one-shape screen; executor is the executor block
// (named "x").
func rigSpec(executorBlock string, runs int) string {
	return fmt.Sprintf(`
model "a" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 4096
}
gpu "l40s" { type = "L40S" }
runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
}
%s
shape "chat" {
  input_tokens      = 32
  output_tokens     = 16
  template_headroom = 16
  concurrency       = 2
  requests          = 4
}
screen "s" {
  models   = [model.a]
  shapes   = [shape.chat]
  gpus     = [gpu.l40s]
  runtime  = runtime.vllm
  executor = executor.x
  runs     = %d
  seed     = 1
}
`, executorBlock, runs)
}

// localBlock is a local executor whose server is `infercrane sim serve`
// with extra flags.
func localBlock(extra ...string) string {
	args := []string{"infercrane", "sim", "serve", "--port", "{port}", "--model", "{model}", "--ttft", "5ms", "--itl", "20ms"}
	args = append(args, extra...)
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return fmt.Sprintf("executor \"x\" {\n  type = \"local\"\n  command = [%s]\n  health_timeout = \"20s\"\n  stop_timeout = \"5s\"\n}\n", strings.Join(q, ", "))
}

// simBlock is a sim executor in constant timing, slow enough to interrupt.
const simBlock = `executor "x" {
  type   = "sim"
  timing = "constant"
  ttft   = "5ms"
  itl    = "20ms"
}`

func newRig(t *testing.T, spec string) *applyRig {
	t.Helper()
	r := &applyRig{t: t, dir: t.TempDir(), mark: fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())}
	r.env = append(os.Environ(), "INFERCRANE_TEST_MARK="+r.mark)
	r.write(spec)
	t.Cleanup(func() {
		for _, pid := range r.marked() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return r
}

func (r *applyRig) write(spec string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, "main.hcl"), []byte(spec), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *applyRig) command(args ...string) *exec.Cmd {
	bin := "infercrane"
	if r.bin != "" {
		bin = r.bin
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = r.dir
	cmd.Env = r.env
	if r.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	}
	return cmd
}

// apply runs apply to completion and returns its exit code, stdout and stderr.
func (r *applyRig) apply(args ...string) (int, string, string) {
	r.t.Helper()
	cmd := r.command(append([]string{"apply", "-auto-approve"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// running is an apply started in the background with -json.
type running struct {
	cmd    *exec.Cmd
	events chan executor.Event
	stderr *syncBuffer
	done   chan int
}

// syncBuffer is a bytes.Buffer safe to read while a process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (r *applyRig) start(args ...string) *running {
	r.t.Helper()
	cmd := r.command(append([]string{"apply", "-auto-approve", "-json"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	run := &running{cmd: cmd, events: make(chan executor.Event, 1000), stderr: &syncBuffer{}, done: make(chan int, 1)}
	cmd.Stderr = run.stderr
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e executor.Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				run.events <- e
			}
		}
		close(run.events)
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = -int(ws.Signal())
			}
		}
		run.done <- code
	}()
	return run
}

// until waits for an event matching ok and returns it.
func (run *running) until(t *testing.T, what string, ok func(executor.Event) bool) executor.Event {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case e, open := <-run.events:
			if !open {
				t.Fatalf("apply ended before %s; stderr:\n%s", what, run.stderr)
			}
			if ok(e) {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s within 60s; stderr:\n%s", what, run.stderr)
		}
	}
}

// wait drains the events and returns them with the exit code.
func (run *running) wait(t *testing.T) ([]executor.Event, int) {
	t.Helper()
	var evs []executor.Event
	for e := range run.events {
		evs = append(evs, e)
	}
	select {
	case code := <-run.done:
		return evs, code
	case <-time.After(60 * time.Second):
		t.Fatal("apply did not exit within 60s")
	}
	return nil, 0
}

// marked lists the live processes carrying this rig's marker.
func (r *applyRig) marked() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	needle := []byte("INFERCRANE_TEST_MARK=" + r.mark + "\x00")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, needle) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue // a zombie holds nothing
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// noLeftovers fails unless every marked process is gone within
// goneWithin (a killed parent's children get SIGKILL from the kernel,
// which takes a moment to land, longer on a loaded machine).
func (r *applyRig) noLeftovers() {
	r.t.Helper()
	left := waitGone(r, goneWithin)
	if len(left) == 0 {
		return
	}
	var desc []string
	for _, pid := range left {
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		desc = append(desc, fmt.Sprintf("%d: %s", pid, bytes.ReplaceAll(cl, []byte{0}, []byte{' '})))
	}
	r.t.Fatalf("processes left running:\n%s", strings.Join(desc, "\n"))
}

// count counts events of a type.
func count(evs []executor.Event, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// planTotals returns the first line of `infercrane plan`.
func (r *applyRig) planLine() string {
	r.t.Helper()
	return r.planLineArgs()
}

// planLineArgs is planLine with plan arguments.
func (r *applyRig) planLineArgs(args ...string) string {
	r.t.Helper()
	out, err := r.command(append([]string{"plan"}, args...)...).Output()
	if err != nil {
		r.t.Fatalf("plan: %v", err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line
}
