//go:build linux

package plugins

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/sim"
)

// markedProcesses lists the live (not zombie) processes whose environment
// holds PLUGINS_TEST_MARK=mark.
func markedProcesses(mark string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	needle := []byte("PLUGINS_TEST_MARK=" + mark + "\x00")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, needle) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
			continue
		}
		cl, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, fmt.Sprintf("%d: %s", pid, bytes.ReplaceAll(cl, []byte{0}, []byte{' '})))
	}
	return out
}

// noneLeft fails unless no process carrying mark is left within 60 s (a
// killed process is gone in milliseconds; a loaded 2-core machine may take
// seconds to reap it; a leaked one stays), and kills what is.
func noneLeft(t *testing.T, mark string) {
	t.Helper()
	var left []string
	for i := 0; i < 1200; i++ {
		if left = markedProcesses(mark); len(left) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range left {
		var pid int
		fmt.Sscanf(p, "%d:", &pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	t.Fatalf("plugin processes left running:\n%s", strings.Join(left, "\n"))
}

// script writes an executable shell script and returns a command making
// function for it, its processes marked.
func script(t *testing.T, body, mark string, env ...string) func() *exec.Cmd {
	t.Helper()
	path := filepath.Join(t.TempDir(), "infercrane-executor-script")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return func() *exec.Cmd {
		cmd := exec.Command(path)
		cmd.Env = append(append(os.Environ(), "PLUGINS_TEST_MARK="+mark), env...)
		return cmd
	}
}

// TestHangingPluginStopsAtTheCommandsDeadline: a shell-script plugin whose
// child never ends (the child holds the plugin's stdout) is given up on when
// the caller's context ends, before the start timeout, and its whole
// process tree is killed.
func TestHangingPluginStopsAtTheCommandsDeadline(t *testing.T) {
	mark := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	newCmd := script(t, "sleep 1000", mark)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := launchUnconfigured(ctx, "script", newCmd, nil, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "infercrane-executor-script) did not answer the handshake before the command's deadline") {
		t.Fatalf("got %v", err)
	}
	if took := time.Since(start); took > 30*time.Second { // a hang, not a slow machine
		t.Errorf("took %s after a 1 s deadline", took)
	}
	noneLeft(t, mark)
}

// TestClosedPluginLeavesNoProcess: a plugin started by a shell script that
// leaves a child behind (holding the plugin's stdout) works, and Close
// returns and kills the child too (go-plugin's Kill alone waited on that
// stdout forever).
func TestClosedPluginLeavesNoProcess(t *testing.T) {
	mark := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	newCmd := script(t, `sleep 1000 &
exec "$PLUGINS_TEST_BIN" -test.run='^$'`, mark, "PLUGINS_TEST_SERVE=1", "PLUGINS_TEST_BIN="+os.Args[0])
	c, err := Launch(context.Background(), "script", newCmd, "script", sim.Schema().Resolve(map[string]any{"timing": "constant"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Deploy(context.Background(), executor.Deployment{ID: "d1", ModelID: "m", MaxContext: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Teardown(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second): // a hang, not a slow machine
		t.Fatal("Close still waits after 60 s")
	}
	noneLeft(t, mark)
}
