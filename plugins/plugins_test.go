package plugins

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
	"github.com/infercrane/infercrane/plugins/local"
)

// TestMain doubles as a plugin process serving the sim executor.
func TestMain(m *testing.M) {
	if os.Getenv("PLUGINS_TEST_SERVE") == "local" {
		Serve(func(typ string, cfg map[string]any) (executor.Executor, error) { return local.New(cfg) }, local.Schema())
		return
	}
	if os.Getenv("PLUGINS_TEST_SERVE") != "" {
		Serve(func(typ string, cfg map[string]any) (executor.Executor, error) {
			x, err := sim.New(cfg)
			if log := os.Getenv("PLUGINS_TEST_CALLS"); log != "" && err == nil {
				x = &callLog{Executor: x, path: log}
			}
			return x, err
		}, sim.Schema())
		return
	}
	if os.Getenv("PLUGINS_TEST_HOST") != "" {
		hostAndHang()
		return
	}
	os.Exit(m.Run())
}

// callLog is an executor that appends "deploy ID" and "teardown ID" lines
// to a file, so a test can see from outside what a plugin process did.
type callLog struct {
	executor.Executor
	path string
}

func (c *callLog) note(line string) {
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
}

func (c *callLog) Deploy(ctx context.Context, d executor.Deployment) (*executor.Server, error) {
	executor.ReportStarted(ctx, &executor.Server{DeploymentID: d.ID, Handle: "starting-" + d.ID})
	s, err := c.Executor.Deploy(ctx, d)
	if err == nil {
		c.note("deploy " + d.ID + " " + s.BaseURL)
	}
	return s, err
}

func (c *callLog) Teardown(ctx context.Context, s *executor.Server) error {
	err := c.Executor.Teardown(ctx, s)
	c.note(fmt.Sprintf("teardown %s %v", s.DeploymentID, err))
	return err
}

// hostAndHang is a host process: it launches the plugin, deploys once,
// prints the plugin's PID and waits to be killed.
func hostAndHang() {
	c, err := Launch(context.Background(), "testsim", func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PLUGINS_TEST_SERVE=1", "PLUGINS_TEST_HOST=")
		return cmd
	}, "testsim", sim.Schema().Resolve(map[string]any{"timing": "constant"}), nil)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	if _, err := c.Deploy(context.Background(), executor.Deployment{ID: "d1", ModelID: "m", MaxContext: 4096}); err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("DEPLOYED", c.pc.ReattachConfig().Pid)
	time.Sleep(time.Minute)
	os.Exit(0)
}

// TestPluginTearsDownWhenItsHostIsKilled runs a host process that deploys
// through a plugin whose Deploy and Teardown are logged to a file, kills
// the host with SIGKILL and checks that the plugin tears the deployment
// down (its engine stops answering) and exits.
func TestPluginTearsDownWhenItsHostIsKilled(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls.log")
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), "PLUGINS_TEST_HOST=1", "PLUGINS_TEST_CALLS="+calls)
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	var pluginPID int
	if _, serr := fmt.Sscanf(line, "DEPLOYED %d", &pluginPID); err != nil || serr != nil {
		t.Fatalf("host said %q (%v)", line, err)
	}
	t.Cleanup(func() { syscall.Kill(pluginPID, syscall.SIGKILL) })
	data, _ := os.ReadFile(calls)
	var id, url string
	if _, err := fmt.Sscanf(string(data), "deploy %s %s", &id, &url); err != nil || id != "d1" {
		t.Fatalf("calls before the kill: %q", data)
	}
	if resp, err := http.Get(url + "/health"); err != nil {
		t.Fatalf("the deployed engine does not answer: %v", err)
	} else {
		resp.Body.Close()
	}
	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	host.Wait()
	deadline := time.Now().Add(60 * time.Second) // a hang, not a slow machine
	for {
		data, _ = os.ReadFile(calls)
		if strings.Contains(string(data), "teardown d1 <nil>") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no teardown within 60s of the host's death; calls:\n%s", data)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp, err := http.Get(url + "/health"); err == nil {
		resp.Body.Close()
		t.Fatalf("the engine still answers after the teardown")
	}
	for syscall.Kill(pluginPID, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the plugin process %d did not exit", pluginPID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func launch(t *testing.T) *Client {
	t.Helper()
	c, err := Launch(context.Background(), "testsim", func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PLUGINS_TEST_SERVE=1")
		return cmd
	}, "testsim", sim.Schema().Resolve(map[string]any{"timing": "constant", "ttft": "1ms", "itl": "30ms"}), nil)
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

// TestDeployStreamsWhatItStarted: what a plugin's executor reports started
// before its server is healthy crosses the boundary (DeployStream) and
// reaches the host's executor.ReportStarted, before Deploy returns.
func TestDeployStreamsWhatItStarted(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls.log")
	c, err := Launch(context.Background(), "testsim", func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PLUGINS_TEST_SERVE=1", "PLUGINS_TEST_CALLS="+calls)
		return cmd
	}, "testsim", sim.Schema().Resolve(map[string]any{"timing": "constant"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var reported []string
	ctx := executor.WithStarted(context.Background(), func(s *executor.Server) { reported = append(reported, s.DeploymentID+" "+s.Handle) })
	s, err := c.Deploy(ctx, executor.Deployment{ID: "d7", ModelID: "m", MaxContext: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Teardown(context.Background(), s)
	if fmt.Sprint(reported) != "[d7 starting-d7]" {
		t.Fatalf("reported before health: %v", reported)
	}
}

// TestPluginWhoseHostDiedBeforeItStartedExits starts a plugin process whose
// host (by HostPIDEnv) is not its parent, as when the host is killed while
// the plugin process starts: it must exit rather than wait forever for a
// host that will never connect.
func TestPluginWhoseHostDiedBeforeItStartedExits(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PLUGINS_TEST_SERVE=1", Handshake.MagicCookieKey+"="+Handshake.MagicCookieValue,
		"PLUGIN_PROTOCOL_VERSIONS=1", HostPIDEnv+"=999999999")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second): // a hang, not a slow machine
		cmd.Process.Kill()
		t.Fatal("the plugin kept running with its host gone")
	}
}

// TestPluginRedactsWhatItWrites: a deployment's secrets cross the plugin
// boundary (they are not in Deployment's JSON), so an external plugin
// built on the local executor redacts the server log it writes (the
// server's output and the command line it starts) and the error it
// returns, whose log tail would show them (issue 25, defect 2).
func TestPluginRedactsWhatItWrites(t *testing.T) {
	const secret = "PLANTED-ARG-4b3c2d"
	settings := local.Schema().Resolve(map[string]any{
		"command":        []any{"sh", "-c", "echo token=$PLANTED; echo arg=$0; exit 3", secret},
		"env":            map[string]any{"PLANTED": "http://u:PLANTED-PASS-9e8d7c@host/v1"},
		"health_timeout": "5s",
	})
	c, err := Launch(context.Background(), "mylocal", func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PLUGINS_TEST_SERVE=local")
		return cmd
	}, "mylocal", settings, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	dir := t.TempDir()
	_, err = c.Deploy(context.Background(), executor.Deployment{ID: "d", ModelID: "m", LogDir: dir,
		Redact: []string{secret, "http://u:PLANTED-PASS-9e8d7c@host/v1"}})
	if err == nil || !strings.Contains(err.Error(), "exited before becoming healthy") {
		t.Fatalf("deploy: %v", err)
	}
	log, rerr := os.ReadFile(filepath.Join(dir, "server-d.log"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, leak := range []string{"PLANTED-ARG", "PLANTED-PASS"} {
		if strings.Contains(string(log), leak) || strings.Contains(err.Error(), leak) {
			t.Errorf("%s left in the log:\n%s\nor the error: %v", leak, log, err)
		}
	}
	if !strings.Contains(string(log), "starting sh -c") || !strings.Contains(string(log), "arg=(sensitive)") {
		t.Errorf("the log does not show the redacted command and output:\n%s", log)
	}
}

// TestPluginClosedByItsHostTearsDownWhatIsLeft closes a plugin (as apply
// does on exit) while a deployment the host never tore down is up (a
// deploy cut short by an interrupt before its server reached the host):
// the plugin tears it down before it exits, so no server outlives it.
// Before the fix the plugin exited on the host's shutdown call and left
// the server running.
func TestPluginClosedByItsHostTearsDownWhatIsLeft(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls.log")
	c, err := Launch(context.Background(), "testsim", func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PLUGINS_TEST_SERVE=1", "PLUGINS_TEST_CALLS="+calls)
		return cmd
	}, "testsim", sim.Schema().Resolve(map[string]any{"timing": "constant"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := c.Deploy(context.Background(), executor.Deployment{ID: "d1", ModelID: "m", MaxContext: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(calls); !strings.Contains(string(data), "teardown d1 <nil>") {
		t.Fatalf("the plugin exited without tearing d1 down; calls:\n%s", data)
	}
	if resp, err := http.Get(s.BaseURL + "/health"); err == nil {
		resp.Body.Close()
		t.Fatal("the engine still answers after its plugin was closed")
	}
}
