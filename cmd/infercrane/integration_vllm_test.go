//go:build integration

// The integration tests run InferCrane against real vLLM (the CPU build) on a
// tiny random-weight Qwen3 model. `make integration` prepares both (see
// scripts/integration/setup-vllm.sh) and sets VLLM_VENV and TINY_MODEL.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

const tinyModelName = "tiny-qwen3"

// integrationEnv returns the vLLM virtualenv and the tiny model directory.
func integrationEnv(t *testing.T) (venv, model string) {
	t.Helper()
	venv, model = os.Getenv("VLLM_VENV"), os.Getenv("TINY_MODEL")
	if venv == "" || model == "" {
		t.Fatal("VLLM_VENV and TINY_MODEL must be set: run `make integration`")
	}
	return venv, model
}

// buildInfercrane compiles the CLI so the apply under test is a real process.
func buildInfercrane(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "infercrane")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// copySpec copies an example spec directory into a fresh directory.
func copySpec(t *testing.T, example string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(example))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(example, "*.hcl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// itestMark is set in the environment of every binary runBinary starts, and
// so inherited by every server those start: vllmProcesses counts only
// processes carrying it, not another test run's vLLM on the same machine
// (the tiny model's path is shared through the cache).
var itestMark = "INFERCRANE_ITEST_MARK=" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)

// vllmProcesses lists the PIDs whose command line mentions the tiny model
// and whose environment carries this test binary's itestMark.
func vllmProcesses(model string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte(model)) {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && !bytes.Contains(append(append([]byte{0}, environ...), 0), []byte("\x00"+itestMark+"\x00")) {
			continue // another run's server
		}
		pids = append(pids, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return pids
}

func runBinary(t *testing.T, bin string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), env...), itestMark)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return string(out), code
}

// applySpec applies spec with bin, logs its output and how long it took,
// and fails the test with the tails of the servers' logs when it exits
// non-zero. It returns the output.
func applySpec(t *testing.T, bin string, env []string, spec string) string {
	t.Helper()
	start := time.Now()
	out, code := runBinary(t, bin, env, "apply", "-auto-approve", spec)
	t.Logf("apply took %s:\n%s", time.Since(start).Round(time.Second), out)
	if code != 0 {
		logs, _ := filepath.Glob(filepath.Join(spec, ".infercrane", "logs", "*"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("== %s (tail)\n%s", l, lastBytes(string(b), 4000))
		}
		t.Fatalf("apply exited %d", code)
	}
	return out
}

// TestIntegrationVLLMApply screens the tiny model on real vLLM with the local
// executor and checks the evidence against what the requests asked for.
func TestIntegrationVLLMApply(t *testing.T) {
	venv, model := integrationEnv(t)
	bin := buildInfercrane(t)
	spec := copySpec(t, "../../examples/local-vllm-cpu")
	env := []string{
		"PATH=" + filepath.Join(venv, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"INFERCRANE_VAR_model_dir=" + model,
	}

	out := applySpec(t, bin, env, spec)
	// Only the server this apply deployed counts: on a shared machine other
	// tests may serve the same model meanwhile.
	if m := regexp.MustCompile(`Deployed \S+ at http://127\.0\.0\.1:(\d+)`).FindStringSubmatch(out); m != nil {
		var ours []string
		for _, p := range vllmProcesses(model) {
			if strings.Contains(p, "--port "+m[1]+" ") {
				ours = append(ours, p)
			}
		}
		if len(ours) > 0 {
			t.Fatalf("vLLM processes left after apply:\n%s", strings.Join(ours, "\n"))
		}
	} else if left := vllmProcesses(model); len(left) > 0 {
		t.Fatalf("vLLM processes left after apply:\n%s", strings.Join(left, "\n"))
	}

	evPath := filepath.Join(spec, ".infercrane", "reports", "vllm_cpu.evidence.json")
	raw, err := os.ReadFile(evPath)
	if err != nil {
		t.Fatalf("no evidence: %v", err)
	}
	var ev struct {
		Models []struct {
			Campaigns []struct {
				Profile  string `json:"profile"`
				Workload struct {
					InputTokens  int `json:"input_tokens"`
					OutputTokens int `json:"output_tokens"`
				} `json:"workload"`
				Aggregate map[string]any `json:"aggregate"`
				Runs      []struct {
					WarmupRequests int                     `json:"warmup_requests"`
					ServerView     *loadgen.ServerView     `json:"server_view"`
					ClientVsServer *loadgen.Reconciliation `json:"client_vs_server"`
				} `json:"runs"`
			} `json:"campaigns"`
		} `json:"models"`
		Cleanup map[string]any `json:"cleanup"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.Models) != 1 || len(ev.Models[0].Campaigns) != 2 {
		t.Fatalf("want 1 model with 2 campaigns, got %s", lastBytes(string(raw), 2000))
	}
	for _, c := range ev.Models[0].Campaigns {
		if len(c.Runs) != 2 {
			t.Errorf("%s: %d runs, want 2", c.Profile, len(c.Runs))
		}
		if f, _ := c.Aggregate["failed"].(float64); f != 0 {
			t.Errorf("%s: %v failed requests", c.Profile, f)
		}
		// vLLM's own histograms over each run's measured requests sit
		// beside the client's figures, and the warmup request is counted.
		for i, r := range c.Runs {
			v, rc := r.ServerView, r.ClientVsServer
			if r.WarmupRequests != 1 || v == nil || v.TTFTMs == nil || v.TPOTMs == nil || v.ITLMs == nil || v.LatencyMs == nil || rc == nil {
				t.Errorf("%s run %d: warmup %d, server view %+v, reconciliation %+v", c.Profile, i+1, r.WarmupRequests, v, rc)
				continue
			}
			if want, _ := c.Aggregate["succeeded"].(float64); !rc.Comparable || float64(v.LatencyMs.Count)*float64(len(c.Runs)) != want {
				t.Errorf("%s run %d: vLLM finished %d requests (comparable %v: %s); the runs measured %v in all", c.Profile, i+1, v.LatencyMs.Count, rc.Comparable, rc.Reason, want)
			}
			t.Logf("%s run %d: client vs vLLM: %+v; flagged %v", c.Profile, i+1, rc.Checks, rc.Flagged)
		}
	}
	if !bytes.Contains(raw, []byte("vllm:")) {
		t.Errorf("evidence has no scraped vllm: metrics")
	}
	if n, _ := ev.Cleanup["active_gpu_tasks"].(float64); n != 0 {
		t.Errorf("cleanup reports %v active tasks", n)
	}

	// Every request: output tokens equal max_tokens (ignore_eos), and the
	// server-reported prompt length equals the requested one (calibrated with
	// vLLM's real tokenizer and chat template).
	recFiles, _ := filepath.Glob(filepath.Join(spec, ".infercrane", "runs", "*", "*.jsonl"))
	if len(recFiles) != 4 {
		t.Fatalf("want 4 record files (2 lanes x 2 runs), got %v", recFiles)
	}
	total, warm := 0, 0
	for _, f := range recFiles {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := loadgen.ReadRecords(fh)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Warmup {
				warm++ // one per run, the default; checked like the others
			} else {
				total++
			}
			if !r.OK() {
				t.Errorf("%s #%d failed: %s %s", f, r.Index, r.ErrorClass, r.Error)
			}
			if r.OutputTokens != r.MaxTokens || r.UsageMissing {
				t.Errorf("%s #%d: %d output tokens, max_tokens %d (usage missing %v)", f, r.Index, r.OutputTokens, r.MaxTokens, r.UsageMissing)
			}
			if r.PromptTokens != r.InputTokens {
				t.Errorf("%s #%d: server counted %d prompt tokens, requested %d", f, r.Index, r.PromptTokens, r.InputTokens)
			}
		}
	}
	if total != 2*4+2*8 || warm != 4 {
		t.Errorf("%d measured and %d warmup records, want %d and 4 (one per run)", total, warm, 2*4+2*8)
	}

	// DuckDB reads the per-request Parquet file and recomputes the pooled
	// percentiles and counts of the evidence on its own.
	pq := filepath.Join(spec, ".infercrane", "reports", "vllm_cpu.records.parquet")
	cc := exec.Command(os.Getenv("DUCKDB_PYTHON"), "../../scripts/integration/crosscheck_parquet.py", evPath, pq)
	if out, err := cc.CombinedOutput(); err != nil {
		t.Errorf("DuckDB cross-check of the Parquet records: %v\n%s", err, out)
	} else {
		t.Logf("%s", out)
	}

	// The next plan shows both lanes as unchanged.
	out, code := runBinary(t, bin, env, "plan", "-detailed-exitcode", spec)
	if code != 0 {
		t.Errorf("plan after apply: exit %d, want 0 (nothing to do)\n%s", code, out)
	}
}

// TestIntegrationVLLMPlanRejectsOverflow: a shape with no room for the chat
// template is rejected at plan time, before any server starts.
func TestIntegrationVLLMPlanRejectsOverflow(t *testing.T) {
	_, model := integrationEnv(t)
	bin := buildInfercrane(t)
	spec := copySpec(t, "../../examples/local-vllm-cpu")
	extra := `
shape "overflow" {
  input_tokens      = 900
  output_tokens     = 140
  template_headroom = 32
  concurrency       = 1
  requests          = 1
}

screen "overflow" {
  models   = [model.tiny_qwen3]
  shapes   = [shape.overflow]
  gpus     = [gpu.cpu]
  runtime  = runtime.vllm_cpu
  executor = executor.local
  runs     = 1
}
`
	if err := os.WriteFile(filepath.Join(spec, "overflow.hcl"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runBinary(t, bin, []string{"INFERCRANE_VAR_model_dir=" + model}, "plan", spec)
	if code != 1 {
		t.Fatalf("plan exit %d, want 1:\n%s", code, out)
	}
	// vllm serve's prompts are calibrated (input_tokens includes the chat
	// template), so template_headroom is not added: 900 + 140 > 1024.
	for _, want := range []string{"input 900 + output 140 = 1040 > 1024", "overflow"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	if left := vllmProcesses(model); len(left) > 0 {
		t.Fatalf("plan started vLLM:\n%s", strings.Join(left, "\n"))
	}
}

// startVLLM starts `vllm serve` on the tiny model in its own process group and
// stops the whole group when the test ends; extra are further serve flags.
func startVLLM(t *testing.T, venv, model string, extra ...string) string {
	t.Helper()
	port := freePort(t)
	logf, err := os.Create(filepath.Join(t.TempDir(), "vllm.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(venv, "bin", "vllm"), "serve", model,
		"--served-model-name", tinyModelName, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--max-model-len", "1024", "--dtype", "float32", "--seed", "17", "--max-num-seqs", "8",
		"--no-enable-log-requests", "-O0", "--enforce-eager")
	cmd.Args = append(cmd.Args, extra...)
	cmd.Env = append(os.Environ(), "VLLM_TARGET_DEVICE=cpu", "VLLM_CPU_KVCACHE_SPACE=1",
		"HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "VLLM_NO_USAGE_STATS=1", "DO_NOT_TRACK=1")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url
			}
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(2 * time.Second)
	}
	b, _ := os.ReadFile(logf.Name())
	t.Fatalf("vLLM did not become healthy:\n%s", lastBytes(string(b), 4000))
	return ""
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// exchange is one HTTP request and what came back.
type exchange struct {
	status int
	body   []byte
}

func post(t *testing.T, url, path string, body any) exchange {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return exchange{resp.StatusCode, out}
}

func get(t *testing.T, url, path string) exchange {
	t.Helper()
	resp, err := http.Get(url + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return exchange{resp.StatusCode, out}
}

// sseFrames splits an SSE body into its data payloads, failing on any line
// that is not `data: ...` or the blank separator.
func sseFrames(t *testing.T, who string, body []byte) []string {
	t.Helper()
	var frames []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	expectBlank := false
	for sc.Scan() {
		line := sc.Text()
		if expectBlank {
			if line != "" {
				t.Errorf("%s: SSE event not followed by a blank line: %q", who, line)
			}
			expectBlank = false
			continue
		}
		if !strings.HasPrefix(line, "data: ") {
			t.Errorf("%s: SSE line without `data: `: %q", who, line)
			continue
		}
		frames = append(frames, strings.TrimPrefix(line, "data: "))
		expectBlank = true
	}
	return frames
}

// keysOf returns the sorted top-level keys of a JSON object.
func keysOf(t *testing.T, who string, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: not a JSON object: %v: %s", who, err, b)
	}
	return m
}

// promptOfTokens finds a completions prompt of exactly n tokens on the
// server, by counting with its /tokenize.
func promptOfTokens(t *testing.T, url string, n int) string {
	t.Helper()
	count := func(p string) int {
		m := keysOf(t, url, post(t, url, "/tokenize", map[string]any{"model": tinyModelName, "prompt": p}).body)
		c, _ := m["count"].(float64)
		return int(c)
	}
	words := n
	for i := 0; i < 20; i++ {
		p := strings.TrimSuffix(strings.Repeat("the ", words), " ")
		got := count(p)
		if got == n {
			return p
		}
		words += n - got
		if words < 1 {
			words = 1
		}
	}
	t.Fatalf("%s: could not size a prompt of %d tokens", url, n)
	return ""
}

// TestIntegrationSimMatchesVLLM sends the same requests to real vLLM and to
// the simulated engine and compares what a client can observe: status codes,
// SSE framing, the usage chunk, error bodies, /v1/models and /tokenize.
func TestIntegrationSimMatchesVLLM(t *testing.T) {
	venv, model := integrationEnv(t)
	real := startVLLM(t, venv, model)
	eng, err := sim.NewEngine(sim.Options{Model: tinyModelName, MaxModelLen: 1024, Timing: "constant", TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: eng}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close(); eng.Close() })
	simURL := "http://" + l.Addr().String()
	servers := map[string]string{"vllm": real, "sim": simURL}

	long := strings.Repeat("hello ", 1100)
	fixed := func(body map[string]any) func(string) map[string]any {
		return func(string) map[string]any { return body }
	}
	// The two servers tokenize differently: size a 1000-token prompt for each.
	prompt1000 := map[string]string{}
	for who, url := range servers {
		prompt1000[who] = promptOfTokens(t, url, 1000)
	}
	cases := []struct {
		name       string
		path       string
		body       func(who string) map[string]any
		wantStatus int
		check      func(t *testing.T, who string, ex exchange)
	}{
		{"stream chat with usage", "/v1/chat/completions", fixed(map[string]any{
			"model": tinyModelName, "messages": []map[string]string{{"role": "user", "content": "hello"}},
			"max_tokens": 5, "ignore_eos": true, "stream": true, "stream_options": map[string]bool{"include_usage": true},
		}), 200, func(t *testing.T, who string, ex exchange) {
			frames := sseFrames(t, who, ex.body)
			if len(frames) < 3 || frames[len(frames)-1] != "[DONE]" {
				t.Fatalf("%s: stream does not end with [DONE]: %q", who, frames)
			}
			first := keysOf(t, who, []byte(frames[0]))
			if first["object"] != "chat.completion.chunk" {
				t.Errorf("%s: object %v", who, first["object"])
			}
			last := keysOf(t, who, []byte(frames[len(frames)-2]))
			if ch, _ := last["choices"].([]any); ch == nil || len(ch) != 0 {
				t.Errorf("%s: usage chunk choices = %v, want []", who, last["choices"])
			}
			u, _ := last["usage"].(map[string]any)
			if u["completion_tokens"] != float64(5) || u["prompt_tokens"] == nil || u["total_tokens"] == nil {
				t.Errorf("%s: usage %v", who, u)
			}
			tokens := 0
			for _, f := range frames[:len(frames)-2] {
				m := keysOf(t, who, []byte(f))
				for _, c := range m["choices"].([]any) {
					d := c.(map[string]any)["delta"].(map[string]any)
					if s, _ := d["content"].(string); s != "" {
						tokens++
					}
				}
			}
			if tokens != 5 {
				t.Errorf("%s: %d token chunks, want 5", who, tokens)
			}
		}},
		{"non-stream completions", "/v1/completions", fixed(map[string]any{
			"model": tinyModelName, "prompt": "hello", "max_tokens": 3, "ignore_eos": true,
		}), 200, func(t *testing.T, who string, ex exchange) {
			m := keysOf(t, who, ex.body)
			u, _ := m["usage"].(map[string]any)
			if m["object"] != "text_completion" || u["completion_tokens"] != float64(3) {
				t.Errorf("%s: %s", who, ex.body)
			}
		}},
		{"prompt over the context", "/v1/chat/completions", fixed(map[string]any{
			"model": tinyModelName, "messages": []map[string]string{{"role": "user", "content": long}}, "max_tokens": 10, "stream": true,
		}), 400, func(t *testing.T, who string, ex exchange) {
			e, _ := keysOf(t, who, ex.body)["error"].(map[string]any)
			if e["type"] != "BadRequestError" || e["param"] != "input_tokens" || e["code"] != float64(400) {
				t.Errorf("%s: error body %s", who, ex.body)
			}
			if c := loadgen.Classify(ex.status, ex.body, nil); c != loadgen.FailContextOverflow {
				t.Errorf("%s: classified %q, want context_overflow", who, c)
			}
		}},
		{"max_tokens over the context", "/v1/chat/completions", fixed(map[string]any{
			"model": tinyModelName, "messages": []map[string]string{{"role": "user", "content": "hello"}}, "max_tokens": 2000,
		}), 400, func(t *testing.T, who string, ex exchange) {
			e, _ := keysOf(t, who, ex.body)["error"].(map[string]any)
			if e["type"] != "BadRequestError" || e["param"] != "max_tokens" {
				t.Errorf("%s: error body %s", who, ex.body)
			}
		}},
		{"prompt plus max_tokens over the context", "/v1/completions", func(who string) map[string]any {
			return map[string]any{"model": tinyModelName, "prompt": prompt1000[who], "max_tokens": 100, "ignore_eos": true}
		}, 200, func(t *testing.T, who string, ex exchange) {
			// vLLM clamps max_tokens to the room left in the context.
			u, _ := keysOf(t, who, ex.body)["usage"].(map[string]any)
			if u["total_tokens"] != float64(1024) {
				t.Errorf("%s: usage %v, want total_tokens 1024 (max_tokens clamped)", who, u)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for who, url := range servers {
				ex := post(t, url, c.path, c.body(who))
				if ex.status != c.wantStatus {
					t.Errorf("%s: status %d, want %d: %s", who, ex.status, c.wantStatus, lastBytes(string(ex.body), 500))
					continue
				}
				c.check(t, who, ex)
			}
		})
	}

	// A prompt that fills the context exactly leaves no room for one output
	// token: both servers must refuse it the same way.
	t.Run("prompt fills the context", func(t *testing.T) {
		got := map[string]exchange{}
		for who, url := range servers {
			got[who] = post(t, url, "/v1/completions", map[string]any{
				"model": tinyModelName, "prompt": promptOfTokens(t, url, 1024), "max_tokens": 10, "ignore_eos": true})
		}
		v, s := got["vllm"], got["sim"]
		t.Logf("vllm: %d %s", v.status, v.body)
		if v.status != s.status {
			t.Fatalf("status: vllm %d, sim %d (%s)", v.status, s.status, s.body)
		}
		if v.status != 200 {
			ve, _ := keysOf(t, "vllm", v.body)["error"].(map[string]any)
			se, _ := keysOf(t, "sim", s.body)["error"].(map[string]any)
			if ve["type"] != se["type"] || ve["param"] != se["param"] || ve["message"] != se["message"] {
				t.Errorf("error bodies differ:\nvllm %s\nsim  %s", v.body, s.body)
			}
			if a, b := loadgen.Classify(v.status, v.body, nil), loadgen.Classify(s.status, s.body, nil); a != b || a != loadgen.FailContextOverflow {
				t.Errorf("classified vllm %q, sim %q; want context_overflow", a, b)
			}
		}
	})

	t.Run("models and tokenize", func(t *testing.T) {
		for who, url := range servers {
			m := keysOf(t, who, get(t, url, "/v1/models").body)
			data, _ := m["data"].([]any)
			if m["object"] != "list" || len(data) != 1 {
				t.Fatalf("%s: /v1/models %v", who, m)
			}
			d := data[0].(map[string]any)
			if d["id"] != tinyModelName || d["max_model_len"] != float64(1024) || d["object"] != "model" {
				t.Errorf("%s: model entry %v", who, d)
			}
			tk := keysOf(t, who, post(t, url, "/tokenize", map[string]any{"model": tinyModelName, "prompt": "hello world"}).body)
			toks, _ := tk["tokens"].([]any)
			if tk["count"] != float64(len(toks)) || tk["max_model_len"] != float64(1024) {
				t.Errorf("%s: /tokenize %v", who, tk)
			}
			tc := keysOf(t, who, post(t, url, "/tokenize", map[string]any{"model": tinyModelName, "messages": []map[string]string{{"role": "user", "content": "hello world"}}}).body)
			if n, _ := tc["count"].(float64); n <= float64(len(toks)) {
				t.Errorf("%s: chat /tokenize counts %v tokens, no more than the bare prompt's %d: the chat template is missing", who, n, len(toks))
			}
		}
	})

	// The load generator against the real server: calibrated prompts get the
	// exact prompt length through Qwen3's tokenizer and chat template, and a
	// prompt too long for the context is classified from vLLM's own 400.
	t.Run("loadgen calibration and forced overflow", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		res, err := loadgen.Run(ctx, loadgen.Config{BaseURL: real, Model: tinyModelName, API: "chat", Streaming: true,
			InputTokens: 200, OutputTokens: 8, Concurrency: 2, Requests: 4, Seed: 17})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			if !r.OK() || r.PromptTokens != 200 || r.OutputTokens != 8 {
				t.Errorf("record %d: ok=%v prompt %d output %d (%s)", r.Index, r.OK(), r.PromptTokens, r.OutputTokens, r.Error)
			}
		}
		res, err = loadgen.Run(ctx, loadgen.Config{BaseURL: real, Model: tinyModelName, API: "chat", Streaming: true,
			InputTokens: 1100, OutputTokens: 8, Concurrency: 1, Requests: 2, Seed: 17})
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Failures[loadgen.FailContextOverflow] != 2 {
			t.Errorf("failures %v, want 2 context_overflow", res.Summary.Failures)
		}
	})
}

// TestIntegrationVLLMCapacitySearch runs a small capacity search end to
// end against real vLLM: a closed-loop concurrency search of the tiny
// model on a server batching at most 2 sequences, at most 4 points of 24
// requests, journaled point by point; the evidence has the capacity, its
// bracket and every point, and the next plan has nothing left to do.
func TestIntegrationVLLMCapacitySearch(t *testing.T) {
	venv, model := integrationEnv(t)
	bin := buildInfercrane(t)
	spec := copySpec(t, "../../examples/local-vllm-cpu")
	main := filepath.Join(spec, "main.hcl")
	src, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	// Keep the example's model, runtime and executor; replace its screen.
	head, _, ok := strings.Cut(string(src), "\nscreen \"vllm_cpu\"")
	if !ok {
		t.Fatal("the example has no screen \"vllm_cpu\" to replace")
	}
	head = strings.Replace(head, "max_num_seqs = 8", "max_num_seqs = 2", 1)
	search := `
search "streams" {
  vary       = "concurrency"
  range      = [1, 16]
  max_points = 5
  requests   = 24
  goodput    = 0.9
  slo {
    ttft_p95_ms = 3000
  }
}

screen "capacity" {
  models   = [model.tiny_qwen3]
  shapes   = [shape.short]
  gpus     = [gpu.cpu]
  runtime  = runtime.vllm_cpu
  executor = executor.local
  search   = search.streams
  seed     = 17
}
`
	if err := os.WriteFile(main, []byte(head+search), 0o644); err != nil {
		t.Fatal(err)
	}
	// The mark tells this apply's servers from other tests' servers of the
	// same model (it is inherited by everything the apply starts).
	mark := fmt.Sprintf("INFERCRANE_SEARCH_TEST=%d", time.Now().UnixNano())
	env := []string{
		"PATH=" + filepath.Join(venv, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"INFERCRANE_VAR_model_dir=" + model, mark,
	}
	out, code := runBinary(t, bin, env, "plan", spec)
	if code != 0 || !strings.Contains(out, `search "streams" over concurrency [1, 16] streams`) || !strings.Contains(out, "predicted knee") {
		t.Fatalf("plan exit %d:\n%s", code, out)
	}
	applySpec(t, bin, env, spec)
	if left := markedProcesses(mark); len(left) > 0 {
		t.Fatalf("processes of this apply left after it:\n%s", strings.Join(left, "\n"))
	}
	raw, err := os.ReadFile(filepath.Join(spec, ".infercrane", "reports", "capacity.evidence.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Models []struct {
			Campaigns []struct {
				Capacity *struct {
					Status        string   `json:"status"`
					Capacity      float64  `json:"capacity"`
					Upper         *float64 `json:"upper"`
					PredictedKnee float64  `json:"predicted_knee"`
					Points        []struct {
						Load      float64 `json:"load"`
						Succeeded int     `json:"succeeded"`
						Failed    int     `json:"failed"`
						Pass      bool    `json:"pass"`
					} `json:"points"`
				} `json:"capacity"`
			} `json:"campaigns"`
		} `json:"models"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	c := ev.Models[0].Campaigns[0].Capacity
	if c == nil || c.Status == "running" || len(c.Points) == 0 || len(c.Points) > 5 {
		t.Fatalf("capacity evidence %+v", c)
	}
	seen := map[float64]bool{}
	for _, p := range c.Points {
		if seen[p.Load] || p.Load != float64(int(p.Load)) || p.Load < 1 || p.Load > 16 {
			t.Errorf("point at %g: repeated, fractional or outside the range", p.Load)
		}
		seen[p.Load] = true
		if p.Succeeded != 24 || p.Failed != 0 {
			t.Errorf("point at %g: %d succeeded, %d failed", p.Load, p.Succeeded, p.Failed)
		}
	}
	upper := "none"
	if c.Upper != nil {
		upper = fmt.Sprintf("%g", *c.Upper)
	}
	t.Logf("capacity %g streams (%s, upper %s, predicted knee %g) after %d points", c.Capacity, c.Status, upper, c.PredictedKnee, len(c.Points))
	out, code = runBinary(t, bin, env, "plan", "-detailed-exitcode", spec)
	if code != 0 || !strings.Contains(out, "search finished in the state") {
		t.Errorf("plan after the search: exit %d, want 0 (nothing to do)\n%s", code, out)
	}
}

// markedProcesses lists the processes whose environment holds mark.
func markedProcesses(mark string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(append(env, 0), []byte(mark+"\x00")) {
			cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			pids = append(pids, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return pids
}
