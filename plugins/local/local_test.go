package local

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
	"github.com/infercrane/infercrane/lang/engine"
)

// TestMain doubles as the server process: with LOCAL_TEST_SERVE set, the
// test binary starts a grandchild (`sleep`) in its process group, writes its
// PID, optionally ignores SIGTERM, and serves a simulated engine on the port
// its last argument names (or, for "none", listens nowhere: a server that
// never becomes healthy).
func TestMain(m *testing.M) {
	if os.Getenv("LOCAL_TEST_SERVE") == "" {
		os.Exit(m.Run())
	}
	port := os.Args[len(os.Args)-1]
	sleep := exec.Command("sleep", "300")
	if err := sleep.Start(); err == nil {
		os.WriteFile(os.Getenv("LOCAL_TEST_PIDFILE"), []byte(strconv.Itoa(sleep.Process.Pid)), 0o644)
	}
	if os.Getenv("LOCAL_TEST_IGNORE_TERM") != "" {
		signal.Ignore(syscall.SIGTERM)
	}
	if port == "none" {
		select {}
	}
	if _, err := sim.Listen("127.0.0.1:"+port, sim.Options{Model: "m", TTFT: time.Millisecond, ITL: time.Millisecond}); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("serving on", port)
	select {}
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(st), ')')
	return !(i > 0 && len(st) > i+2 && st[i+2] == 'Z')
}

func newTestExec(t *testing.T, extra map[string]any) (*Executor, string) {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
	cfg := map[string]any{
		"command":      []any{os.Args[0], "-test.run=^$", "{port}"},
		"env":          map[string]any{"LOCAL_TEST_SERVE": "1", "LOCAL_TEST_PIDFILE": pidfile},
		"stop_timeout": "500ms",
	}
	for k, v := range extra {
		cfg[k] = v
	}
	x, err := New(Schema().Resolve(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return x.(*Executor), pidfile
}

func deployment(t *testing.T) executor.Deployment {
	return executor.Deployment{ID: "d1", ModelID: "m", MaxContext: 4096, LogDir: t.TempDir()}
}

func grandchild(t *testing.T, pidfile string) int {
	t.Helper()
	for i := 0; i < 100; i++ {
		if b, err := os.ReadFile(pidfile); err == nil && len(b) > 0 {
			pid, _ := strconv.Atoi(string(b))
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the server did not start its grandchild")
	return 0
}

func TestDeployRunTeardownStopsTheWholeGroup(t *testing.T) {
	x, pidfile := newTestExec(t, nil)
	d := deployment(t)
	s, err := x.Deploy(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if s.Info["runtime_version"] != sim.Version {
		t.Errorf("version not recorded: %v", s.Info)
	}
	gc := grandchild(t, pidfile)
	res, err := x.Run(context.Background(), s, executor.RunSpec{Lane: "l", Run: 1, Load: loadgen.Config{API: "chat", Streaming: true, InputTokens: 16, OutputTokens: 4, Concurrency: 2, Requests: 4, Seed: 1}})
	if err != nil || res.Summary.Succeeded != 4 {
		t.Fatalf("run: %v %+v", err, res)
	}
	if err := x.Teardown(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if alive(gc) {
		t.Fatalf("grandchild %d outlived teardown", gc)
	}
	if err := x.Teardown(context.Background(), s); err != nil {
		t.Fatalf("second teardown: %v", err)
	}
	log, _ := os.ReadFile(filepath.Join(d.LogDir, "server-d1.log"))
	if !strings.Contains(string(log), "serving on") || !strings.Contains(string(log), "server stopped") {
		t.Errorf("log: %s", log)
	}
}

func TestSIGTERMIgnoredMeansSIGKILL(t *testing.T) {
	x, pidfile := newTestExec(t, map[string]any{"env": map[string]any{"LOCAL_TEST_SERVE": "1", "LOCAL_TEST_IGNORE_TERM": "1"}})
	_ = pidfile
	s, err := x.Deploy(context.Background(), deployment(t))
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := parseHandle(s.Handle)
	if !ok {
		t.Fatalf("handle %q", s.Handle)
	}
	pgid := tr.pgid
	start := time.Now()
	if err := x.Teardown(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if groupAlive(pgid) {
		t.Fatal("group alive after teardown")
	}
	if time.Since(start) < 400*time.Millisecond {
		t.Errorf("teardown did not wait for SIGTERM first (%v)", time.Since(start))
	}
}

func TestTeardownFromAnotherExecutorByHandle(t *testing.T) {
	x, pidfile := newTestExec(t, nil)
	s, err := x.Deploy(context.Background(), deployment(t))
	if err != nil {
		t.Fatal(err)
	}
	gc := grandchild(t, pidfile)
	// A fresh executor (as after a plugin restart) knows only the handle.
	y, _ := newTestExec(t, nil)
	if err := y.Teardown(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1500 && alive(gc); i++ { // 30 s: a hang, not a slow machine
		time.Sleep(20 * time.Millisecond)
	}
	if alive(gc) {
		t.Fatal("grandchild alive after teardown by handle")
	}
	x.Teardown(context.Background(), s)
}

func TestNeverHealthyFailsAndCleansUp(t *testing.T) {
	x, pidfile := newTestExec(t, map[string]any{
		// The server runs but listens nowhere (a fixed other port, as
		// before, was taken when two runs of the test overlapped, and
		// the server's exit failed the test).
		"command":        []any{os.Args[0], "-test.run=^$", "none"},
		"health_timeout": "700ms",
	})
	_, err := x.Deploy(context.Background(), deployment(t))
	if err == nil || !strings.Contains(err.Error(), "did not answer GET") {
		t.Fatalf("want a health timeout, got %v", err)
	}
	if b, rerr := os.ReadFile(pidfile); rerr == nil {
		pid, _ := strconv.Atoi(string(b))
		if alive(pid) {
			t.Fatal("grandchild left after a failed deploy")
		}
	}
	if len(x.procs) != 0 {
		t.Fatal("process still tracked")
	}
}

// TestDeployRetriesAPortTakenBeforeTheServerBoundIt: the port Deploy
// picked is taken by another process before the server binds it (here the
// test's listener; on a busy machine any process's). The server exits, and
// Deploy starts it again on another port instead of failing the lane
// (before the fix: "the server exited before becoming healthy"). A server
// that exits while its port is free is not started again.
func TestDeployRetriesAPortTakenBeforeTheServerBoundIt(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	go http.Serve(taken, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	takenPort := taken.Addr().(*net.TCPAddr).Port
	x, _ := newTestExec(t, nil)
	picks := 0
	x.pickPort = func(host string) (int, error) {
		if picks++; picks == 1 {
			return takenPort, nil
		}
		return freePort(host)
	}
	d := deployment(t)
	s, err := x.Deploy(context.Background(), d)
	if err != nil {
		t.Fatalf("deploy with its first port taken: %v", err)
	}
	defer x.Teardown(context.Background(), s)
	if picks != 2 || strings.HasSuffix(s.BaseURL, ":"+strconv.Itoa(takenPort)) {
		t.Errorf("%d ports picked, server at %s (port %d was taken)", picks, s.BaseURL, takenPort)
	}
	log, _ := os.ReadFile(filepath.Join(d.LogDir, "server-d1.log"))
	if n := strings.Count(string(log), "infercrane: starting"); n != 2 || !strings.Contains(string(log), "was taken by another process") {
		t.Errorf("want two starts and the reason in the log:\n%s", log)
	}

	// An exit with the port free is the server's own failure: one start.
	y, _ := newTestExec(t, map[string]any{"command": []any{"sh", "-c", "echo no model; exit 3"}})
	picks = 0
	y.pickPort = func(host string) (int, error) { picks++; return freePort(host) }
	d = deployment(t)
	if _, err := y.Deploy(context.Background(), d); err == nil || !strings.Contains(err.Error(), "exited before becoming healthy") || picks != 1 {
		t.Fatalf("want one start and its exit, got %d starts: %v", picks, err)
	}
}

func TestBadCommandSaysWhatToDo(t *testing.T) {
	x, _ := newTestExec(t, map[string]any{"command": []any{"/nonexistent/vllm", "serve"}})
	_, err := x.Deploy(context.Background(), deployment(t))
	if err == nil || !strings.Contains(err.Error(), "set command in the executor block") {
		t.Fatalf("got %v", err)
	}
	// An unknown placeholder is refused when the block is read (at validate),
	// not at deploy.
	if _, err := New(Schema().Resolve(map[string]any{"command": []any{"x", "{nope}"}})); err == nil || !strings.Contains(err.Error(), "unknown placeholder {nope}") {
		t.Fatalf("got %v", err)
	}
}

func TestDefaultCommandIsPinnedVLLM(t *testing.T) {
	d := executor.Deployment{ModelID: "Qwen/Qwen3-0.6B", Revision: "abc", MaxContext: 8192, Seed: 17, Runtime: engine.Runtime{RuntimeDtype: "bfloat16", GPUMemoryUtil: 0.9, MaxNumSeqs: 64, RuntimeArgs: []string{"--enforce-eager"}}}
	got := strings.Join(vllmCommand(d, "127.0.0.1", 8001), " ")
	want := "vllm serve Qwen/Qwen3-0.6B --revision abc --host 127.0.0.1 --port 8001 --max-model-len 8192 --seed 17 --no-enable-log-requests --dtype bfloat16 --gpu-memory-utilization 0.9 --max-num-seqs 64 --enforce-eager"
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

// FuzzExpand checks that placeholder expansion never panics, keeps the
// argument count, and leaves arguments without braces unchanged.
func FuzzExpand(f *testing.F) {
	f.Add("--port={port}")
	f.Add("{model}{revision}")
	f.Add("{unclosed")
	f.Add("}{")
	d := executor.Deployment{ModelID: "m", Revision: "r", MaxContext: 1, Seed: 2}
	f.Fuzz(func(t *testing.T, arg string) {
		out, err := expand([]string{"x", arg}, d, "h", 9)
		if err != nil {
			if !strings.Contains(err.Error(), "unknown placeholder") {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		if len(out) != 2 || out[0] != "x" {
			t.Fatalf("argument count changed: %q", out)
		}
		if !strings.ContainsAny(arg, "{}") && out[1] != arg {
			t.Fatalf("%q became %q", arg, out[1])
		}
	})
}
