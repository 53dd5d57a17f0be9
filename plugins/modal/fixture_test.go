package modal_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/plugins/modal"
	"github.com/infercrane/infercrane/plugins/modal/localcloud"
)

// bin is a real infercrane binary built for these tests: inside the local
// sandboxes its `sim serve` stands in for `vllm serve`; loadgenBin is the
// real infercrane-loadgen the executor copies in and runs as the load
// generator, exactly as inside Modal's sandboxes. They are built on first
// use, so unit tests and fuzzing do not pay for them.
var (
	bin        string
	loadgenBin string
	binDir     string
	binOnce    sync.Once
	binError   error
)

func buildBinary(t testing.TB) {
	t.Helper()
	binOnce.Do(func() {
		binDir, binError = os.MkdirTemp("", "modal-test-")
		if binError != nil {
			return
		}
		bin, loadgenBin = filepath.Join(binDir, "infercrane"), filepath.Join(binDir, modal.LoadgenName)
		out, err := exec.Command("go", "build", "-o", binDir, "github.com/infercrane/infercrane/cmd/infercrane", "github.com/infercrane/infercrane/cmd/infercrane-loadgen").CombinedOutput()
		if err != nil {
			binError = fmt.Errorf("building infercrane and infercrane-loadgen for the modal tests: %v\n%s", err, out)
		}
	})
	if binError != nil {
		t.Fatal(binError)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// fixture is an executor wired to a local cloud.
type fixture struct {
	t     testing.TB
	cloud *localcloud.Cloud
	exec  *modal.Executor
	logs  string

	mu       sync.Mutex
	progress []string
}

var fast = modal.Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond, Attempts: 4}

func newFixture(t testing.TB, cfg map[string]any, tweak func(*localcloud.Cloud)) *fixture {
	t.Helper()
	buildBinary(t)
	f := &fixture{t: t, cloud: localcloud.New(t.TempDir(), bin), logs: filepath.Join(t.TempDir(), "logs")}
	f.cloud.SimArgs = []string{"--ttft", "5ms", "--itl", "1ms"}
	if tweak != nil {
		tweak(f.cloud)
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	if _, set := cfg["binary"]; !set {
		cfg["binary"] = loadgenBin
	}
	e, err := modal.NewExecutor(modal.Schema().Resolve(cfg), modal.WithCloud(f.cloud), modal.WithPollInterval(50*time.Millisecond),
		modal.WithCapacityBackoff(fast), modal.WithTerminateBackoff(fast),
		modal.WithProgress(func(dep, line string) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.progress = append(f.progress, dep+": "+line)
		}))
	if err != nil {
		t.Fatal(err)
	}
	f.exec = e
	t.Cleanup(func() {
		// Nothing may outlive a test; kill what a failing test left.
		if left := f.cloud.Running(); len(left) > 0 {
			t.Errorf("sandboxes left running: %v", left)
			for _, id := range left {
				f.cloud.Kill(id)
			}
		}
	})
	return f
}

func (f *fixture) deployment(id string) executor.Deployment {
	return executor.Deployment{
		ID: id, ApplyID: "apply-1", Screen: "smoke", ModelID: "Qwen/Qwen3-0.6B", Revision: "c1899de289a04d12100db370d81485cdf75e47ca",
		MaxContext: 4096, GPUType: "L4", GPUCount: 1, Runtime: engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: "0.22.1", RuntimeDtype: "bfloat16", GPUMemoryUtil: 0.9, MaxNumSeqs: 64, MaxBatchedTokens: 4096},
		Seed: 17, ExecutorType: "modal", LogDir: f.logs,
	}
}

func load(requests int) loadgen.Config {
	return loadgen.Config{API: "chat", Streaming: true, InputTokens: 32, OutputTokens: 8, Concurrency: 2, Requests: requests, Seed: 7}
}

func (f *fixture) progressText() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.progress, "\n")
}

// groupsAlive reports which of a sandbox's process groups still exist.
func (f *fixture) groupsAlive(id string) []int {
	m, err := f.cloud.Meta(id)
	if err != nil {
		f.t.Fatal(err)
	}
	var alive []int
	for _, pg := range m.Pgids {
		if err := syscall.Kill(-pg, 0); err == nil {
			alive = append(alive, pg)
		}
	}
	return alive
}

// mustBeGone fails unless the sandbox is terminated and none of its
// processes is left.
func (f *fixture) mustBeGone(id string) {
	f.t.Helper()
	// The cloud that started the sandbox learns of its end asynchronously
	// (its own wait on the process, which a loaded machine may schedule
	// late when another process terminated it), as Modal's listing is
	// eventually consistent: both conditions get the same deadline.
	deadline := time.Now().Add(60 * time.Second) // a hang, not a slow machine
	for (len(f.groupsAlive(id)) > 0 || f.listedRunning(id)) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive := f.groupsAlive(id); len(alive) > 0 {
		f.t.Fatalf("sandbox %s still has process groups %v", id, alive)
	}
	if f.listedRunning(id) {
		f.t.Fatalf("sandbox %s still listed as running", id)
	}
}

// listedRunning reports whether the cloud lists the sandbox as running.
func (f *fixture) listedRunning(id string) bool {
	return slices.Contains(f.cloud.Running(), id)
}

func (f *fixture) logFile(dep string) string {
	b, err := os.ReadFile(filepath.Join(f.logs, "modal-"+dep+".log"))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func (f *fixture) teardownRecord(dep string) string {
	b, err := os.ReadFile(filepath.Join(f.logs, "modal-"+dep+".json"))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}
