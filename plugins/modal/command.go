package modal

import (
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
	// RemoteBinary is where the load generator binary (infercrane-loadgen,
	// or a whole infercrane) is copied to.
	RemoteBinary = WorkDir + "/bin/infercrane-loadgen"
	// RemoteCLI is where a whole infercrane is copied to, for sandboxes
	// that run more than the load generator (profile shards).
	RemoteCLI = WorkDir + "/bin/infercrane"
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
	add("--seed", strconv.FormatInt(d.Seed, 10))
	for flags := d.Flags(); len(flags) > 0; flags = flags[2:] {
		add(flags[0], flags[1])
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

// LoadMessage is a run's load as the typed message sent into the sandbox:
// the plan's loadgen config for the served model. It is the JSON `bench
// --config` reads, so nothing is lost to a flag round trip (a drawn
// workload, SLOs, warmup, a trace, timeouts all travel as they are). The
// server's address is not part of the load: BenchCommand gives it.
func LoadMessage(model string, c loadgen.Config) ([]byte, error) {
	c.BaseURL, c.Model = "", model
	return loadgen.MarshalConfig(c)
}

// BenchCommand is the load generator's command line inside the sandbox: it
// reads the load from config (a LoadMessage copied in), sends it to the
// server on localhost, streams the per-request records to records and
// prints its result (loadgen.Result without the records: the summary and
// the server's view, read from the server's /metrics right before and
// after the measured requests, and its gauges sampled over the run as the
// local executors sample them) as JSON on stdout. Both infercrane-loadgen
// and infercrane accept it and print the same document.
func BenchCommand(config, records string) []string {
	return []string{RemoteBinary, "bench", "--url", localURL, "--config", config, "--records", records, "--result", "-",
		"--server-gauges", loadgen.DefaultGaugeInterval.String()}
}

// loadPath is where a run's load message is copied in the sandbox.
func loadPath(r executor.RunSpec) string {
	return path.Join(WorkDir, "runs", safeName(r.Lane)+"-"+strconv.Itoa(r.Run)+".load.json")
}

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
