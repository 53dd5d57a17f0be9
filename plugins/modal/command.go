package modal

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
)

// Paths and ports inside the sandbox.
const (
	// ServerPort is where vLLM listens inside the sandbox.
	ServerPort = 8000
	// WorkDir holds the copied binary and run records inside the sandbox.
	WorkDir = "/infercrane"
	// RemoteBinary is where the infercrane binary is copied to.
	RemoteBinary = WorkDir + "/bin/infercrane"
)

// localURL is the server's address as seen from inside the sandbox.
var localURL = "http://127.0.0.1:" + strconv.Itoa(ServerPort)

// ServeCommand is the `vllm serve` command line for a deployment with vLLM's
// pinned flags. Flags that the runtime's own args also set are left to the
// runtime args, so every flag appears once.
func ServeCommand(d executor.Deployment) []string {
	given := map[string]bool{}
	for _, a := range d.RuntimeArgs {
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a, "=")
			given[name] = true
		}
	}
	argv := []string{"vllm", "serve", d.ModelID}
	add := func(flag string, value ...string) {
		if given[flag] {
			return
		}
		argv = append(argv, flag)
		argv = append(argv, value...)
	}
	if d.Revision != "" {
		add("--revision", d.Revision)
	}
	if d.MaxContext > 0 {
		add("--max-model-len", strconv.Itoa(d.MaxContext))
	}
	if d.MaxNumSeqs > 0 {
		add("--max-num-seqs", strconv.Itoa(d.MaxNumSeqs))
	}
	if d.MaxBatchedTokens > 0 {
		add("--max-num-batched-tokens", strconv.Itoa(d.MaxBatchedTokens))
	}
	add("--seed", strconv.FormatInt(d.Seed, 10))
	if d.RuntimeDtype != "" {
		add("--dtype", d.RuntimeDtype)
	}
	if d.GPUMemoryUtil > 0 {
		add("--gpu-memory-utilization", strconv.FormatFloat(d.GPUMemoryUtil, 'f', -1, 64))
	}
	if d.GPUCount > 1 {
		add("--tensor-parallel-size", strconv.Itoa(d.GPUCount))
	}
	add("--no-enable-log-requests")
	add("--host", "127.0.0.1")
	add("--port", strconv.Itoa(ServerPort))
	return append(argv, d.RuntimeArgs...)
}

// probeCommand asks the copied binary whether the server answers /health.
func probeCommand() []string {
	return []string{RemoteBinary, "probe", "--timeout", "5s", localURL + "/health"}
}

// gpuQueryCommand reports the GPU the container actually got.
func gpuQueryCommand() []string {
	return []string{"nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"}
}

// versionsCommand prints vLLM's and torch's versions, one a line.
func versionsCommand() []string {
	return []string{"python3", "-c", "import vllm, torch; print(vllm.__version__); print(torch.__version__)"}
}

// tracePath is where a run's trace file is copied in the sandbox.
func tracePath(r executor.RunSpec) string {
	return path.Join(WorkDir, "traces", safeName(r.Lane)+"-"+strconv.Itoa(r.Run)+".jsonl")
}

// recordsPath is where a run's per-request records are written in the sandbox.
func recordsPath(r executor.RunSpec) string {
	return path.Join(WorkDir, "runs", safeName(r.Lane)+"-"+strconv.Itoa(r.Run)+".jsonl")
}

// BenchCommand is the load generator's command line inside the sandbox: it
// targets the server on localhost, prints the summary as JSON on stdout and
// writes per-request records to recordsPath.
func BenchCommand(model string, c loadgen.Config, records string) []string {
	argv := []string{RemoteBinary, "bench",
		"--url", localURL,
		"--model", model,
		"--input-tokens", strconv.Itoa(c.InputTokens),
		"--output-tokens", strconv.Itoa(c.OutputTokens),
		"--requests", strconv.Itoa(c.Requests),
		"--seed", strconv.FormatInt(c.Seed, 10),
	}
	if c.Concurrency > 0 {
		argv = append(argv, "--concurrency", strconv.Itoa(c.Concurrency))
	}
	if c.RequestRate > 0 {
		argv = append(argv, "--request-rate", ftoa(c.RequestRate))
		if c.Arrival != "" {
			argv = append(argv, "--arrival", c.Arrival)
		}
		if c.Burstiness > 0 {
			argv = append(argv, "--burstiness", ftoa(c.Burstiness))
		}
	}
	// Always explicit: bench's own default (one request) is not the plan's.
	argv = append(argv, "--warmup", strconv.Itoa(c.Warmup))
	if c.WarmupDurationMs > 0 {
		argv = append(argv, "--warmup-duration", fmt.Sprintf("%dms", c.WarmupDurationMs))
	}
	if c.API != "" {
		argv = append(argv, "--api", c.API)
	}
	if !c.Streaming {
		argv = append(argv, "--no-stream")
	}
	if c.DurationMs > 0 {
		argv = append(argv, "--duration", fmt.Sprintf("%dms", c.DurationMs))
	}
	if c.TimeoutMs > 0 {
		argv = append(argv, "--timeout", fmt.Sprintf("%dms", c.TimeoutMs))
	}
	if c.GraceMs > 0 {
		argv = append(argv, "--grace", fmt.Sprintf("%dms", c.GraceMs))
	}
	if c.RampUpMs > 0 {
		argv = append(argv, "--ramp-up", fmt.Sprintf("%dms", c.RampUpMs))
	}
	if c.H2C {
		argv = append(argv, "--h2c")
	}
	if c.TraceFile != "" {
		// The caller copied the trace into the sandbox at c.TraceFile.
		argv = append(argv, "--trace", c.TraceFile)
		if c.TimeScale > 0 {
			argv = append(argv, "--time-scale", ftoa(c.TimeScale))
		}
	}
	if c.SLO.TTFTMs > 0 {
		argv = append(argv, "--slo-ttft", ftoa(c.SLO.TTFTMs))
	}
	if c.SLO.TPOTMs > 0 {
		argv = append(argv, "--slo-tpot", ftoa(c.SLO.TPOTMs))
	}
	if c.SLO.LatencyMs > 0 {
		argv = append(argv, "--slo-latency", ftoa(c.SLO.LatencyMs))
	}
	return append(argv, "--records", records, "--json")
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// safeName keeps letters, digits, dot, dash and underscore.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}
