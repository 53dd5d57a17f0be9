package plugins

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/plugins/sim"
)

// TestMain doubles as a plugin process serving the sim executor.
func TestMain(m *testing.M) {
	if os.Getenv("PLUGINS_TEST_SERVE") != "" {
		Serve(func(typ string, cfg map[string]any) (executor.Executor, error) { return sim.New(cfg) }, sim.Schema())
		return
	}
	os.Exit(m.Run())
}

func launch(t *testing.T) *Client {
	t.Helper()
	c, err := Launch(context.Background(), "testsim", func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PLUGINS_TEST_SERVE=1")
		return cmd
	}, "testsim", map[string]any{"timing": "constant", "ttft": "1ms", "itl": "30ms"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var runSpec = executor.RunSpec{Lane: "l", Run: 1, Load: loadgen.Config{API: "chat", Streaming: true, InputTokens: 8, OutputTokens: 8, Concurrency: 2, Requests: 8, Seed: 1}}

func TestPluginRoundTripWithProgress(t *testing.T) {
	c := launch(t)
	if len(c.Schema().Attributes) == 0 {
		t.Fatal("no schema over the protocol")
	}
	s, err := c.Deploy(context.Background(), executor.Deployment{ID: "d", ModelID: "m", MaxContext: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var last executor.Progress
	ctx := executor.WithProgress(context.Background(), func(p executor.Progress) { last = p })
	res, err := c.Run(ctx, s, runSpec)
	if err != nil || res.Summary.Succeeded != 8 || len(res.Records) != 8 {
		t.Fatalf("%v %+v", err, res)
	}
	if last.Total != 8 || last.Done == 0 {
		t.Errorf("progress did not cross the boundary: %+v", last)
	}
	if err := c.Teardown(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	// The engine is gone: a run against it fails with the executor's words.
	if _, err := c.Run(context.Background(), s, runSpec); err == nil || !strings.Contains(err.Error(), "is not running") {
		t.Fatalf("got %v", err)
	}
}

func TestKilledPluginIsNamedAndTeardownRestartsIt(t *testing.T) {
	c := launch(t)
	s, err := c.Deploy(context.Background(), executor.Deployment{ID: "d", ModelID: "m", MaxContext: 4096})
	if err != nil {
		t.Fatal(err)
	}
	pid := c.pc.ReattachConfig().Pid
	go func() {
		time.Sleep(100 * time.Millisecond)
		syscall.Kill(pid, syscall.SIGKILL)
	}()
	_, err = c.Run(context.Background(), s, runSpec)
	var pe *PluginExitedError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "executor plugin testsim") || !strings.Contains(err.Error(), "during Run") {
		t.Fatalf("got %v", err)
	}
	if err := c.Teardown(context.Background(), s); err != nil {
		t.Fatalf("teardown after the plugin died: %v", err)
	}
	if c.pc.ReattachConfig().Pid == pid {
		t.Fatal("no fresh plugin process")
	}
}

func TestHandshakeRefusesNonPlugins(t *testing.T) {
	_, err := Launch(context.Background(), "true", func() *exec.Cmd { return exec.Command("true") }, "x", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "start executor plugin true") {
		t.Fatalf("got %v", err)
	}
}

func TestRegistryUnknownType(t *testing.T) {
	r := &Registry{Dirs: []string{t.TempDir()}}
	_, err := r.Open(context.Background(), "nosuch", nil)
	if err == nil || !strings.Contains(err.Error(), `no executor of type "nosuch"`) || !strings.Contains(err.Error(), "infercrane-executor-nosuch") {
		t.Fatalf("got %v", err)
	}
}
