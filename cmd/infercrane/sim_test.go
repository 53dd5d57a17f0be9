package main

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startSimProcess runs `infercrane sim serve ARGS` as a real process (the
// test binary, which testscript.Main put on PATH as infercrane) and returns
// it with the URL it printed.
func startSimProcess(t *testing.T, args ...string) (*exec.Cmd, string, *strings.Builder) {
	t.Helper()
	cmd := exec.Command("infercrane", append([]string{"sim", "serve", "--port", "0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no listening line: %v; stderr: %s", err, stderr)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first stdout line %q, want \"listening on http://127.0.0.1:PORT\"", line)
	}
	go io.Copy(io.Discard, stdout)
	return cmd, url, stderr
}

func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second): // a hang, not a slow machine
		t.Fatal("sim serve did not exit within 60 s")
		return -1
	}
}

// TestSimServeProcessSignals starts the real command, streams from it and
// stops it with SIGTERM (what the local executor does): exit status 0.
func TestSimServeProcessSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd, url, stderr := startSimProcess(t, "--ttft", "1ms", "--itl", "1ms", "--model", "tiny")
		resp, err := http.Get(url + "/health")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("/health: %v %v", resp, err)
		}
		resp.Body.Close()
		body := `{"model":"tiny","prompt":"the cat","max_tokens":5,"ignore_eos":true,"stream":true}`
		resp, err = http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if n := strings.Count(string(b), `"text":" `); n != 5 || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
			t.Fatalf("stream with %d tokens: %s", n, b)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, cmd); code != 0 {
			t.Fatalf("%v: exit status %d, stderr: %s", sig, code, stderr)
		}
		if !strings.Contains(stderr.String(), "infercrane sim: stopped") {
			t.Fatalf("stderr: %s", stderr)
		}
	}
}

// TestSimServeProcessCrash checks that --crash-after makes the process exit
// with status 3 when the next request arrives.
func TestSimServeProcessCrash(t *testing.T) {
	cmd, url, stderr := startSimProcess(t, "--crash-after", "1", "--ttft", "0s", "--itl", "0s")
	body := `{"prompt":"a","max_tokens":1}`
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body)); err == nil {
		resp.Body.Close()
		t.Fatalf("the crashing request got status %d", resp.StatusCode)
	}
	if code := waitExit(t, cmd); code != 3 {
		t.Fatalf("exit status %d, want 3; stderr: %s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "crashed by fault injection") {
		t.Fatalf("stderr: %s", stderr)
	}
}
