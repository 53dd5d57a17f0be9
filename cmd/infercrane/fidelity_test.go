//go:build integration

// The fidelity harness (`make fidelity`, and the end of `make integration`):
// InferCrane's load generator, `vllm bench serve` and, when they are installed,
// AIPerf and GuideLLM measure the same shapes against the simulated engine in constant
// timing (known ground truth) and against real vLLM on CPU, side by side.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/affinity"
	"github.com/infercrane/infercrane/executor/benchresult"
	"github.com/infercrane/infercrane/executor/loadgen"
)

// fidShape is one load the tools are given: conc streams, or (rate > 0)
// an open loop of rate requests a second whose gaps are gamma-distributed
// with shape burstiness (vllm bench's --burstiness; 1: Poisson).
type fidShape struct {
	in, out, conc, requests int
	rate, burstiness        float64
}

// fidRun is what one tool measured in one run.
type fidRun struct {
	Tool                   string
	TTFT, TPOT, ITL, Lat   fidStat
	OutputTokens           float64
	CPUSeconds, WallSecond float64
	// Server is the server's own view of the run (vLLM's histograms), when read.
	Server *loadgen.ServerView
}

// cpuMsPerKTok is the client's CPU time (user + system, its child processes
// included, start-up included) per 1,000 output tokens.
func (r fidRun) cpuMsPerKTok() float64 {
	if r.OutputTokens == 0 {
		return math.NaN()
	}
	return r.CPUSeconds * 1e3 / r.OutputTokens * 1e3
}

// pinned prefixes argv with taskset when cpus is set and taskset exists.
func pinned(cpus string, argv ...string) []string {
	if cpus == "" {
		return argv
	}
	if p, err := exec.LookPath("taskset"); err == nil {
		return append([]string{p, "-c", cpus}, argv...)
	}
	return argv
}

// runTool runs argv, failing the test with its output's tail on error, and
// returns its CPU time (children included) and wall time.
func runTool(t *testing.T, env []string, argv ...string) (cpu, wall float64, out string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	b, err := cmd.CombinedOutput()
	wall = time.Since(start).Seconds()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, lastBytes(string(b), 3000))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	return cpu, wall, string(b)
}

func ours(t *testing.T, bin, url, model string, s fidShape, cpus string) fidRun {
	t.Helper()
	res := filepath.Join(t.TempDir(), "result.json")
	argv := pinned(cpus, bin, "bench", "--url", url, "--model", model,
		"--input-tokens", strconv.Itoa(s.in), "--output-tokens", strconv.Itoa(s.out),
		"--concurrency", strconv.Itoa(s.conc), "--requests", strconv.Itoa(s.requests), "--warmup", "1",
		"--seed", strconv.FormatInt(time.Now().UnixNano()%1000, 10), "--result", res)
	cpu, wall, _ := runTool(t, nil, argv...)
	keepOutputs(t, "infercrane", res)
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	var r loadgen.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	sm := r.Summary
	if sm.Failed > 0 || sm.Succeeded != s.requests {
		t.Fatalf("infercrane bench: %d of %d succeeded, failures %v", sm.Succeeded, s.requests, sm.Failures)
	}
	d := func(x loadgen.Dist) fidStat { return fidStat{x.Mean, x.P50, x.P95} }
	return fidRun{Tool: "infercrane", TTFT: d(sm.TTFTMs), TPOT: d(sm.TPOTMs), ITL: d(sm.ITLMs), Lat: d(sm.LatencyMs),
		OutputTokens: float64(sm.OutputTokens), CPUSeconds: cpu, WallSecond: wall, Server: r.ServerView}
}

func vllmBench(t *testing.T, venv, tokenizer, url, model string, s fidShape, cpus string) fidRun {
	t.Helper()
	dir := t.TempDir()
	load := []string{"--max-concurrency", strconv.Itoa(s.conc), "--request-rate", "inf"}
	if s.rate > 0 {
		load = []string{"--request-rate", strconv.FormatFloat(s.rate, 'g', -1, 64), "--burstiness", strconv.FormatFloat(s.burstiness, 'g', -1, 64)}
	}
	argv := pinned(cpus, append(append([]string{filepath.Join(venv, "bin", "vllm"), "bench", "serve",
		"--backend", "openai-chat", "--endpoint", "/v1/chat/completions", "--base-url", url,
		"--model", model, "--tokenizer", tokenizer, "--dataset-name", "random",
		"--random-input-len", strconv.Itoa(s.in), "--random-output-len", strconv.Itoa(s.out), "--random-range-ratio", "0",
		"--num-prompts", strconv.Itoa(s.requests)}, load...),
		"--ignore-eos", "--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "r.json",
		"--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,95", "--disable-tqdm",
		"--seed", strconv.FormatInt(time.Now().UnixNano()%1000, 10))...)
	before := serverHistograms(t, url)
	cpu, wall, _ := runTool(t, []string{"HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "VLLM_NO_USAGE_STATS=1", "DO_NOT_TRACK=1"}, argv...)
	view := serverDelta(t, url, before)
	keepOutputs(t, "vllm-bench", filepath.Join(dir, "r.json"))
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f := func(k string) float64 { v, _ := m[k].(float64); return v }
	if c := f("completed"); int(c) != s.requests {
		t.Fatalf("vllm bench: %v of %d completed (failed %v)", c, s.requests, m["failed"])
	}
	checkImported(t, filepath.Join(dir, "r.json"), s)
	st := func(n string) fidStat {
		return fidStat{f("mean_" + n + "_ms"), f("p50_" + n + "_ms"), f("p95_" + n + "_ms")}
	}
	return fidRun{Tool: "vllm bench", TTFT: st("ttft"), TPOT: st("tpot"), ITL: st("itl"), Lat: st("e2el"),
		OutputTokens: f("total_output_tokens"), CPUSeconds: cpu, WallSecond: wall, Server: view}
}

// fidHints are the conditions the tools' results do not record, given to
// calibrate's importer as a user would: vLLM 0.32's CPU build.
var fidHints = benchresult.Hints{GPU: "CPU", Engine: "vllm==0.32.0"}

// checkImported reads a vllm bench result with calibrate's importer
// (executor/benchresult) and fails unless it gives the load that was sent:
// make fidelity checks the importer on vllm bench's real output, closed
// and open loop.
func checkImported(t *testing.T, path string, s fidShape) {
	t.Helper()
	rs, err := benchresult.Read(path, fidHints)
	if err != nil {
		t.Fatalf("calibrate's importer cannot read vllm bench's result: %v", err)
	}
	r := rs[0]
	sent := r.Requests == s.requests && r.OutputTokens == s.out
	if s.rate > 0 {
		sent = sent && r.RequestRate == s.rate && r.Arrival == "gamma" && r.Burstiness == s.burstiness && r.Concurrency == 0
	} else {
		sent = sent && r.Concurrency == s.conc && r.RequestRate == 0
	}
	if !sent {
		t.Fatalf("the importer read vllm bench's result as %d requests of %d output tokens, concurrency %d, rate %g (%s, burstiness %g); it was sent %+v",
			r.Requests, r.OutputTokens, r.Concurrency, r.RequestRate, r.Arrival, r.Burstiness, s)
	}
}

// aiperf runs AIPerf when AIPERF_BIN is set. HF_HUB_OFFLINE stays unset:
// with it AIPerf 0.13 fails to load a local tokenizer directory (it loads
// the local one without any download either way).
func aiperf(t *testing.T, tokenizer, url, model string, s fidShape, cpus string) (fidRun, bool) {
	t.Helper()
	bin := os.Getenv("AIPERF_BIN")
	if bin == "" {
		return fidRun{}, false
	}
	dir := t.TempDir()
	argv := pinned(cpus, bin, "profile", "--model", model, "--url", url, "--endpoint-type", "chat", "--streaming",
		"--tokenizer", tokenizer, "--concurrency", strconv.Itoa(s.conc), "--request-count", strconv.Itoa(s.requests),
		"--warmup-request-count", "1", "--isl", strconv.Itoa(s.in), "--isl-stddev", "0",
		"--osl", strconv.Itoa(s.out), "--osl-stddev", "0", "--extra-inputs", "ignore_eos:true",
		"--artifact-dir", dir, "--ui-type", "none")
	env := []string{"HF_HUB_OFFLINE=", "TRANSFORMERS_OFFLINE=", "DO_NOT_TRACK=1"}
	cpu, wall, _ := runTool(t, env, argv...)
	keepOutputs(t, "aiperf", filepath.Join(dir, "profile_export_aiperf.json"), filepath.Join(dir, "profile_export.jsonl"))
	b, err := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	st := func(k string) fidStat {
		var v struct{ Avg, P50, P95 float64 }
		_ = json.Unmarshal(m[k], &v)
		return fidStat{v.Avg, v.P50, v.P95}
	}
	var osl struct{ Sum float64 }
	_ = json.Unmarshal(m["output_sequence_length"], &osl)
	// AIPerf's "inter token latency" is TPOT; its "inter chunk latency" is ITL.
	return fidRun{Tool: "aiperf", TTFT: st("time_to_first_token"), TPOT: st("inter_token_latency"), ITL: st("inter_chunk_latency"),
		Lat: st("request_latency"), OutputTokens: osl.Sum, CPUSeconds: cpu, WallSecond: wall}, true
}

// guidellm runs GuideLLM when GUIDELLM_BIN is set, and reads its report
// with calibrate's importer (executor/benchresult), so that make fidelity
// checks the importer against the pinned GuideLLM's real output. ITL is
// the report's own inter_token_latency_ms summary, which weighs every
// token gap (the importer's TPOT weighs every request).
func guidellm(t *testing.T, tokenizer, url, model string, s fidShape, cpus string) (fidRun, bool) {
	t.Helper()
	bin := os.Getenv("GUIDELLM_BIN")
	if bin == "" {
		return fidRun{}, false
	}
	report := filepath.Join(t.TempDir(), "guidellm-report.json")
	argv := pinned(cpus, bin, "run", "--backend", "kind=openai_http,target="+url+",model="+model,
		"--profile", "kind=concurrent,streams="+strconv.Itoa(s.conc),
		"--constraint", "kind=max_requests,count="+strconv.Itoa(s.requests),
		"--data", fmt.Sprintf("kind=synthetic_text,prompt_tokens=%d,output_tokens=%d", s.in, s.out),
		"--tokenizer", "kind=huggingface_auto,model="+tokenizer,
		"--seed", "kind=static,value="+strconv.FormatInt(time.Now().UnixNano()%1000, 10),
		"--output", "kind=json,path="+report, "--disable-console-interactive")
	env := []string{"HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "DO_NOT_TRACK=1"}
	// GuideLLM 0.8.1's reports of two clean-clone make fidelity runs held
	// 23 of the 24 requests asked for. The importer must account for
	// every request sent (Result.Failed counts those not completed, the
	// figures being the completed ones'), and at most one may be missing
	// against a healthy server; a report short of that is GuideLLM's own
	// miss, logged and run once more.
	var (
		rs        []benchresult.Result
		cpu, wall float64
	)
	for try := 1; ; try++ {
		cpu, wall, _ = runTool(t, env, argv...)
		keepOutputs(t, "guidellm", report)
		var err error
		if rs, err = benchresult.Read(report, fidHints); err != nil {
			t.Fatalf("calibrate's importer cannot read GuideLLM's report: %v", err)
		}
		ok := len(rs) == 1 && rs[0].Requests+rs[0].Failed == s.requests && rs[0].Failed <= 1
		if ok {
			break
		}
		if try == 2 {
			t.Fatalf("GuideLLM's report: %d benchmarks (%+v); want one of %d requests, at most one of them not completed", len(rs), rs, s.requests)
		}
		t.Logf("GuideLLM's report accounts for %d of the %d requests (%+v); running it once more", accounted(rs), s.requests, rs)
	}
	if rs[0].Failed > 0 {
		t.Logf("GuideLLM counted %d of the %d requests as not completed: %s", rs[0].Failed, s.requests, strings.Join(rs[0].Notes, "; "))
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Benchmarks []struct {
			Metrics struct {
				ITL struct {
					Successful struct {
						Percentiles map[string]float64 `json:"percentiles"`
					} `json:"successful"`
				} `json:"inter_token_latency_ms"`
			} `json:"metrics"`
		} `json:"benchmarks"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Benchmarks) != 1 {
		t.Fatalf("GuideLLM's report: %v", err)
	}
	m, itl := rs[0].Metrics, doc.Benchmarks[0].Metrics.ITL.Successful.Percentiles
	st := func(n string) fidStat { return fidStat{m[n+"_mean_ms"], m[n+"_p50_ms"], m[n+"_p95_ms"]} }
	return fidRun{Tool: "guidellm", TTFT: st("ttft"), TPOT: st("tpot"), ITL: fidStat{P50: itl["p50"], P95: itl["p95"]}, Lat: st("latency"),
		OutputTokens: float64(rs[0].OutputTokens * rs[0].Requests), CPUSeconds: cpu, WallSecond: wall}, true
}

// accounted is the requests a tool's results account for: the completed
// ones and those it counted as not completed.
func accounted(rs []benchresult.Result) int {
	n := 0
	for _, r := range rs {
		n += r.Requests + r.Failed
	}
	return n
}

// startSimServe starts `infercrane sim serve` in constant timing and
// returns its URL and process id; it is stopped when the test ends.
func startSimServe(t *testing.T, bin, cpus string, ttft, itl time.Duration) (string, int) {
	t.Helper()
	// Both ask for the 100 us scheduler slice by default (not given as a
	// flag: a kernel or sandbox that refuses it is then measured without
	// it instead of failing the harness).
	args := []string{"sim", "serve", "--port", "0", "--ttft", ttft.String(), "--itl", itl.String()}
	if cpus != "" {
		args = append(args, "--cpus", cpus)
	}
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return u, cmd.Process.Pid
		}
	}
	t.Fatal("sim serve printed no URL")
	return "", 0
}

// clockTicks is USER_HZ, the unit of /proc/stat and /proc/PID/stat: 100 a
// second on every Linux architecture Go supports.
const clockTicks = 100

// machineBusyTicks is the time all CPUs spent busy since boot, in clock
// ticks (/proc/stat: user, nice, system, irq, softirq and steal, the time
// the hypervisor ran someone else); false where unreadable.
func machineBusyTicks() (int64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var sum int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += v
	}
	return sum, true
}

// procTicks is a process's user + system time in clock ticks (/proc/PID/stat
// fields 14 and 15, its threads included); false where unreadable.
func procTicks(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces; fields count from after it.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return u + st, true
}

// otherLoad starts measuring the CPU time that processes other than pids and
// one client run used: the function it returns takes that client's CPU
// seconds (its rusage) and reports the others' share of the machine's CPU
// capacity since the call (0 where /proc does not say). It tells a machine
// busy with someone else's work apart from a client (or engine) that burns
// CPU itself, which must fail the comparison, not skip it.
func otherLoad(pids ...int) func(clientCPU float64) float64 {
	busy0, ok0 := machineBusyTicks()
	var own0 int64
	for _, p := range pids {
		v, _ := procTicks(p)
		own0 += v
	}
	t0 := time.Now()
	return func(clientCPU float64) float64 {
		busy1, ok1 := machineBusyTicks()
		var own1 int64
		for _, p := range pids {
			v, _ := procTicks(p)
			own1 += v
		}
		capacity := time.Since(t0).Seconds() * clockTicks * float64(runtime.NumCPU())
		if !ok0 || !ok1 || capacity <= 0 {
			return 0
		}
		others := float64(busy1-busy0) - float64(own1-own0) - clientCPU*clockTicks
		return math.Max(others, 0) / capacity
	}
}

// serverHistograms reads a server's latency histograms (nil without them).
func serverHistograms(t *testing.T, url string) map[string]*loadgen.Histogram {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	hs, err := loadgen.ParseHistograms(resp.Body, loadgen.ServerTTFT, loadgen.ServerITL, loadgen.ServerTPOT, loadgen.ServerLatency)
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

// serverDelta is the server's view of what happened since before (it
// includes vllm bench's one ready-check request).
func serverDelta(t *testing.T, url string, before map[string]*loadgen.Histogram) *loadgen.ServerView {
	t.Helper()
	after := serverHistograms(t, url)
	if after == nil || before == nil {
		return nil
	}
	d := map[string]*loadgen.Histogram{}
	for n, h := range after {
		x, err := h.Sub(before[n])
		if err != nil {
			t.Fatal(err)
		}
		d[n] = x
	}
	return loadgen.NewServerView(d)
}

// simLateness reads the simulated engine's own emission-lateness histogram.
func simLateness(t *testing.T, url string) loadgen.Histogram {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	const name = "infercrane:sim_token_lateness_seconds"
	hs, err := loadgen.ParseHistograms(resp.Body, name)
	if err != nil || hs[name] == nil {
		t.Fatalf("the engine's %s: %v", name, err)
	}
	return *hs[name]
}

// fidTable renders runs side by side, with the ground truth or the spread.
func fidTable(title string, truth *fidRun, runs []fidRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n", title)
	fmt.Fprintf(&b, "%-12s %9s %9s %9s | %9s %9s | %9s %9s | %9s %9s %9s | %11s\n",
		"tool", "ttft mean", "ttft p50", "ttft p95", "tpot mean", "tpot p50", "itl p50", "itl p95", "lat mean", "lat p50", "lat p95", "cpu ms/ktok")
	row := func(r fidRun, cost string) {
		fmt.Fprintf(&b, "%-12s %9.2f %9.2f %9.2f | %9.2f %9.2f | %9.2f %9.2f | %9.2f %9.2f %9.2f | %11s\n", r.Tool,
			r.TTFT.Mean, r.TTFT.P50, r.TTFT.P95, r.TPOT.Mean, r.TPOT.P50, r.ITL.P50, r.ITL.P95, r.Lat.Mean, r.Lat.P50, r.Lat.P95, cost)
	}
	if truth != nil {
		row(*truth, "")
	}
	for _, r := range runs {
		row(r, fmt.Sprintf("%.0f", r.cpuMsPerKTok()))
		if v := r.Server; v != nil && v.TTFTMs != nil && v.LatencyMs != nil {
			tpot := math.NaN()
			if v.TPOTMs != nil {
				tpot = v.TPOTMs.Mean
			}
			fmt.Fprintf(&b, "%-12s %9.2f %9s %9s | %9.2f %9s | %9s %9s | %9.2f\n", "  server", v.TTFTMs.Mean, "", "", tpot, "", "", "", v.LatencyMs.Mean)
		}
	}
	return b.String()
}

// keepOutputs copies a tool's result files, when FIDELITY_KEEP names a
// folder, to FIDELITY_KEEP/<test>/<tool>-<n>/ (the importers' fixtures in
// executor/benchresult/testdata come from there). A file the tool did not
// write is skipped.
func keepOutputs(t *testing.T, tool string, files ...string) {
	t.Helper()
	root := os.Getenv("FIDELITY_KEEP")
	if root == "" {
		return
	}
	base := filepath.Join(root, t.Name())
	n := 1
	for ; ; n++ {
		if _, err := os.Stat(filepath.Join(base, fmt.Sprintf("%s-%d", tool, n))); os.IsNotExist(err) {
			break
		}
	}
	dir := filepath.Join(base, fmt.Sprintf("%s-%d", tool, n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fidelityOut writes the table to FIDELITY_OUT (when set) and stdout.
func fidelityOut(t *testing.T, s string) {
	fmt.Print(s)
	if p := os.Getenv("FIDELITY_OUT"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		_, _ = f.WriteString(s)
	}
}

// cpuSplit gives the engine and the client a CPU each, the first two this
// process may run on (a CI runner's cpuset need not start at 0), when
// there are two.
func cpuSplit() (engine, client string) {
	cpus, err := affinity.Current()
	if err != nil || len(cpus) < 2 {
		return "", ""
	}
	return strconv.Itoa(cpus[0]), strconv.Itoa(cpus[1])
}

// TestFidelitySim: against the simulated engine in constant timing (TTFT
// 200 ms, ITL 10 ms, so TPOT 10 ms and latency 510 ms for 32 tokens) at 64
// streams, the load generator's figures must be within 1% or 0.5 ms
// (whichever is larger) of the ground truth. vllm bench and AIPerf are
// measured beside it and reported, not gated.
func TestFidelitySim(t *testing.T) {
	venv, model := integrationEnv(t)
	bin := buildInfercrane(t)
	engineCPU, clientCPU := cpuSplit()
	url, enginePID := startSimServe(t, bin, engineCPU, 200*time.Millisecond, 10*time.Millisecond)
	s := fidShape{in: 64, out: 32, conc: 64, requests: 256}
	truth := fidRun{Tool: "truth", TTFT: fidStat{200, 200, 200}, TPOT: fidStat{10, 10, 10}, ITL: fidStat{10, 10, 10},
		Lat: fidStat{510, 510, 510}}
	var runs []fidRun
	before := simLateness(t, url)
	starved := affinity.Starved()
	others := otherLoad(enginePID, os.Getpid())
	o := ours(t, bin, url, "sim", s, clientCPU)
	stalled, otherShare := starved(), others(o.CPUSeconds)
	// Busy means someone else's work: tasks waited for a CPU and processes
	// other than the engine and the client used the CPUs. A client or
	// engine that starves itself (burns CPU, spawns runnable threads) is a
	// real failure and fails.
	busy := stalled > 0.10 && otherShare > 0.10
	late := simLateness(t, url)
	late.Sum -= before.Sum
	late.Count -= before.Count
	engineLateMs := late.Sum / math.Max(late.Count, 1) * 1e3
	runs = append(runs, o, vllmBench(t, venv, model, url, "sim", s, clientCPU))
	if a, ok := aiperf(t, model, url, "sim", s, clientCPU); ok {
		runs = append(runs, a)
	}
	if g, ok := guidellm(t, model, url, "sim", s, clientCPU); ok {
		runs = append(runs, g)
	}
	fidelityOut(t, fidTable(fmt.Sprintf("Simulated engine, constant timing, %d streams, %d requests of %d+%d tokens (engine on CPU %q, clients on %q; cpu includes start-up):",
		s.conc, s.requests, s.in, s.out, engineCPU, clientCPU), &truth, runs))
	fidelityOut(t, fmt.Sprintf("engine's own emission lateness during infercrane's run (infercrane:sim_token_lateness_seconds): mean %.3f ms over %d tokens\n", engineLateMs, int(late.Count)))
	fidelityOut(t, fmt.Sprintf("machine during infercrane's run: tasks waited for a CPU %.1f%% of the time (/proc/pressure/cpu); processes other than the engine and the client used %.1f%% of its CPUs (/proc/stat)\n", 100*stalled, 100*otherShare))
	// The client answers for its own error: the engine's own miss of the
	// figure (a busy machine can delay the engine's timers too) is added
	// to the tolerance: its measured token lateness, or, where larger, how
	// far the engine's own mean of the metric (its histograms over the
	// run, the "server" row above) is from the truth. A token's lateness
	// is each token's own, while a request's latency carries its last
	// token's: an engine whose CPU falls behind over a request is late by
	// more at its end (a CI run measured 0.98 ms of token lateness and an
	// engine latency mean 12.75 ms over the truth, the client 1.1 ms over
	// the engine).
	var problems []string
	check := func(name string, got, want float64, own *loadgen.ServerDist) {
		late := engineLateMs
		if own != nil {
			late = math.Max(late, math.Abs(own.Mean-want))
		}
		if tol := math.Max(0.01*want, 0.5) + late; math.Abs(got-want) > tol {
			problems = append(problems, fmt.Sprintf("infercrane %s = %.3f ms, ground truth %.0f ms: off by %.3f ms, more than %.2f ms (1%% or 0.5 ms, plus the engine's own %.2f ms miss)", name, got, want, got-want, tol, late))
		}
	}
	var ttft, tpot, lat *loadgen.ServerDist
	if v := o.Server; v != nil {
		ttft, tpot, lat = v.TTFTMs, v.TPOTMs, v.LatencyMs
	}
	check("ttft mean", o.TTFT.Mean, 200, ttft)
	check("ttft p50", o.TTFT.P50, 200, ttft)
	check("tpot mean", o.TPOT.Mean, 10, tpot)
	check("tpot p50", o.TPOT.P50, 10, tpot)
	check("itl p50", o.ITL.P50, 10, tpot)
	check("latency mean", o.Lat.Mean, 510, lat)
	check("latency p50", o.Lat.P50, 510, lat)
	// The engine's lateness covers its own timers, not the client's: a
	// client that waited for a CPU (other load on the machine) is late too.
	// Only then are the misses reported as a skip.
	if len(problems) > 0 && busy {
		t.Skipf("tasks on this machine waited for a CPU %.0f%% of the time during infercrane's run (/proc/pressure/cpu) and other processes used %.0f%% of its CPUs: too busy for a 1%% timing comparison; rerun on a quiet machine (%s)", 100*stalled, 100*otherShare, strings.Join(problems, "; "))
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestFidelityVLLM: against real vLLM on CPU (the tiny model) at
// concurrency 1, three runs each of the load generator and vllm bench,
// alternating; each tool is judged against vLLM's own histograms of the
// same window (judgeFidelity): on TTFT, TPOT, ITL and latency, ours must
// not sit more than addedLimitMs further above vLLM's own means than vllm
// bench's (paired run by run), nor below them, and its p50 must lie in the
// bucket of vLLM's own median as nearly as vllm bench's. AIPerf, when
// installed, runs once beside them.
func TestFidelityVLLM(t *testing.T) {
	venv, model := integrationEnv(t)
	bin := buildInfercrane(t)
	url := os.Getenv("FIDELITY_VLLM_URL") // a vLLM already serving the tiny model (development)
	if url == "" {
		url = startVLLM(t, venv, model)
	}
	s := fidShape{in: 64, out: 16, conc: 1, requests: 24}
	var mine, theirs, all []fidRun
	for range 3 {
		o := ours(t, bin, url, tinyModelName, s, "")
		v := vllmBench(t, venv, model, url, tinyModelName, s, "")
		mine, theirs, all = append(mine, o), append(theirs, v), append(all, o, v)
	}
	if a, ok := aiperf(t, model, url, tinyModelName, s, ""); ok {
		all = append(all, a)
	}
	if g, ok := guidellm(t, model, url, tinyModelName, s, ""); ok {
		all = append(all, g)
	}
	// An open loop (8 requests a second, gamma gaps of shape 0.5), not
	// judged: it checks the importer on vllm bench's open-loop result.
	open := vllmBench(t, venv, model, url, tinyModelName, fidShape{in: s.in, out: s.out, requests: s.requests, rate: 8, burstiness: 0.5}, "")
	open.Tool = "vllm (open)"
	all = append(all, open)
	fidelityOut(t, fidTable(fmt.Sprintf("Real vLLM (CPU build, tiny Qwen3), concurrency %d, %d requests of %d+%d tokens, runs alternating (cpu includes start-up):",
		s.conc, s.requests, s.in, s.out), nil, all))
	// Each tool is judged against vLLM's own histograms in its own runs'
	// windows, never against the other tool's raw figures: vLLM's speed
	// changes between the windows (judgeFidelity, fidjudge_test.go).
	var lines []string
	for _, m := range []struct {
		name string
		f    func(fidRun) fidStat
	}{
		{"ttft", func(r fidRun) fidStat { return r.TTFT }},
		{"tpot", func(r fidRun) fidStat { return r.TPOT }},
		{"itl", func(r fidRun) fidStat { return r.ITL }},
		{"latency", func(r fidRun) fidStat { return r.Lat }},
	} {
		win := func(rs []fidRun) []fidWindow {
			ws := make([]fidWindow, len(rs))
			for i, r := range rs {
				ws[i] = fidWindowOf(m.f(r), r.Server, m.name)
			}
			return ws
		}
		j := judgeFidelity(m.name, win(mine), win(theirs), addedLimitMs)
		for _, f := range j.Fail {
			t.Error(f)
		}
		lines = append(lines, j.String())
	}
	fidelityOut(t, "against vLLM's own histograms, medians over runs:\n"+strings.Join(lines, "\n")+"\n")
}
