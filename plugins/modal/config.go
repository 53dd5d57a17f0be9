package modal

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/perf"
)

// DefaultApp is the Modal App the sandboxes run under when the executor
// block names none (the schema's default for app, and cleanup's).
const DefaultApp = "infercrane"

// MaxTimeout is Modal's upper bound on a Sandbox's lifetime.
const MaxTimeout = 24 * time.Hour

// Config is a lane's resolved modal executor settings (the plan's
// executor_settings of an `executor "NAME" { type = "modal" ... }` block).
type Config struct {
	App           string        `json:"app"`            // Modal App the sandboxes belong to
	Environment   string        `json:"environment"`    // Modal environment (empty: the profile's)
	GPU           string        `json:"gpu"`            // Modal GPU request overriding the lane's ("H100!", "A100-80GB:2")
	Image         string        `json:"image"`          // registry image; empty: vllm/vllm-openai:v<runtime.version>
	Secrets       []string      `json:"secrets"`        // Modal Secret names injected as environment variables
	Volume        string        `json:"volume"`         // Modal Volume name for the model cache (created if missing)
	VolumeMount   string        `json:"volume_mount"`   // where Volume is mounted
	Timeout       time.Duration `json:"timeout"`        // maximum lifetime of a sandbox
	IdleTimeout   time.Duration `json:"idle_timeout"`   // a sandbox idle this long is stopped by Modal
	HealthTimeout time.Duration `json:"health_timeout"` // deadline for vLLM's /health after the sandbox starts
	Region        string        `json:"region"`
	Cloud         string        `json:"cloud"`
	Binary        string        `json:"binary"` // path of a linux/amd64 load generator binary (empty: see ResolveBinary)
}

// Capabilities are what this executor does, declared where it registers
// (its Schema): see lang.Capabilities.
var Capabilities = lang.Capabilities{Tokenizes: true, ProfilesTraces: true}

// Schema describes the attributes of a modal executor block; its defaults
// are the only ones the modal executor has (the planner applies them).
func Schema() executor.Schema {
	return executor.Schema{Attributes: []executor.Attribute{
		{Name: "app", Type: executor.AttrString, Default: DefaultApp, Doc: "Modal App name the sandboxes run under (created if missing)."},
		{Name: "environment", Type: executor.AttrString, Doc: "Modal environment (unset: the active profile's)."},
		{Name: "gpu", Type: executor.AttrString, Doc: `Modal GPU request such as "L40S", "H100!" or "A100-80GB:2"; must name the lane's GPU type and count (unset: derived from the gpu block).`},
		{Name: "image", Type: executor.AttrString, Doc: "Registry image running vLLM (unset: vllm/vllm-openai:v<runtime.version>)."},
		{Name: "secrets", Type: executor.AttrStringList, Doc: "Names of Modal Secrets injected into the server, e.g. a Hugging Face token."},
		{Name: "volume", Type: executor.AttrString, Doc: "Modal Volume caching model weights across sandboxes (created if missing)."},
		{Name: "volume_mount", Type: executor.AttrString, Default: "/root/.cache/huggingface", Doc: "Mount point of the volume."},
		{Name: "timeout", Type: executor.AttrDuration, Min: executor.Seconds(time.Minute), Max: executor.Seconds(MaxTimeout), Default: "30m", Doc: "Hard limit on a sandbox's lifetime; Modal stops it after this even if InferCrane crashed (at most Modal's 24h)."},
		{Name: "idle_timeout", Type: executor.AttrDuration, Min: executor.Seconds(time.Second), Max: executor.Seconds(MaxTimeout), Default: "5m", Doc: "Modal stops a sandbox idle this long (at most timeout)."},
		{Name: "health_timeout", Type: executor.AttrDuration, Min: executor.Seconds(time.Second), Max: executor.Seconds(MaxTimeout), Default: "20m", DefaultCap: &executor.DefaultCap{Attr: "timeout", Share: 2.0 / 3}, Doc: "Deadline for vLLM's /health to answer 200, image pull and model download included (shorter than timeout)."},
		{Name: "region", Type: executor.AttrString, Doc: `Modal region to run in, e.g. "us-east" (unset: any).`},
		{Name: "cloud", Type: executor.AttrString, Doc: `Cloud provider, e.g. "aws", "gcp", "oci" (unset: any).`},
		{Name: "binary", Type: executor.AttrString, Doc: "Path of the linux/amd64 binary copied into the sandbox: for benchmarks infercrane-loadgen or a whole infercrane (unset: the infercrane-loadgen next to the running binary, else the running binary when it is linux/amd64; never built at run time); for trace profile shards a whole infercrane."},
	}, Capabilities: Capabilities}
}

// ParseConfig decodes a lane's resolved executor settings strictly (see
// executor.DecodeSettings) and checks the rules across them.
func ParseConfig(settings map[string]any) (Config, error) {
	var c Config
	if err := executor.DecodeSettings(Type, Schema(), settings, &c); err != nil {
		return Config{}, err
	}
	if c.GPU != "" {
		if _, _, err := ParseGPU(c.GPU); err != nil {
			return Config{}, &executor.AttrError{Name: "gpu", Err: err}
		}
	}
	if c.App == "" {
		return Config{}, executor.AttrErrorf("app", "modal executor: app must not be empty; leave it out to use %q", DefaultApp)
	}
	if !strings.HasPrefix(c.VolumeMount, "/") {
		return Config{}, executor.AttrErrorf("volume_mount", "modal executor: volume_mount %q must be an absolute path such as \"/root/.cache/huggingface\"", c.VolumeMount)
	}
	if c.IdleTimeout <= 0 || c.IdleTimeout > c.Timeout {
		return Config{}, executor.AttrErrorf("idle_timeout", "modal executor: idle_timeout %s must be positive and at most timeout (%s); shorten it or raise timeout", c.IdleTimeout, c.Timeout)
	}
	if c.HealthTimeout <= 0 || c.HealthTimeout >= c.Timeout {
		return Config{}, executor.AttrErrorf("health_timeout", "modal executor: health_timeout %s must be positive and shorter than timeout (%s), or the sandbox dies before the server is healthy; shorten it or raise timeout", c.HealthTimeout, c.Timeout)
	}
	for _, s := range c.Secrets {
		if strings.TrimSpace(s) == "" {
			return Config{}, executor.AttrErrorf("secrets", "modal executor: secrets lists an empty name; give Modal Secret names such as \"huggingface\"")
		}
	}
	return c, nil
}

// ParseGPU validates a Modal GPU string ("L40S", "h100!", "A100-80GB:2")
// against the planner's GPU catalog and returns the catalog name and count.
// A trailing "!" (Modal's "no automatic upgrade") is accepted.
func ParseGPU(s string) (catalog string, count int, err error) {
	spec := strings.TrimSpace(s)
	count = 1
	if i := strings.LastIndexByte(spec, ':'); i >= 0 {
		n, convErr := strconv.Atoi(spec[i+1:])
		if convErr != nil || n < 1 || n > 8 {
			return "", 0, fmt.Errorf("modal executor: GPU count in %q must be an integer from 1 to 8, as in \"A100-80GB:2\"", s)
		}
		count, spec = n, spec[:i]
	}
	spec = strings.TrimSuffix(spec, "!")
	g, ok := perf.LookupGPU(spec)
	if !ok || spec == "" {
		return "", 0, fmt.Errorf("modal executor: unknown GPU %q; known types: %s", s, strings.Join(perf.GPUNames(), ", "))
	}
	return g.Name, count, nil
}

// modalGPUNames maps catalog names to Modal's spelling where they differ.
var modalGPUNames = map[string]string{"A10": "A10G"}

// GPURequest is the Modal GPU string for a lane's GPU type and count, or the
// executor's gpu attribute when set (which must agree with the lane).
func (c Config) GPURequest(gpuType string, count int) (string, error) {
	g, ok := perf.LookupGPU(gpuType)
	if !ok {
		return "", fmt.Errorf("modal executor: the lane's GPU %q is not in the catalog; known types: %s", gpuType, strings.Join(perf.GPUNames(), ", "))
	}
	count = max(count, 1)
	if c.GPU != "" {
		name, n, err := ParseGPU(c.GPU)
		if err != nil {
			return "", err
		}
		if name != g.Name || n != count {
			return "", fmt.Errorf("modal executor: gpu = %q asks for %d x %s but the lane was planned on %d x %s; change the executor's gpu or the screen's gpu block so they agree", c.GPU, n, name, count, g.Name)
		}
		return c.GPU, nil
	}
	req := g.Name
	if m, ok := modalGPUNames[req]; ok {
		req = m
	}
	if count > 1 {
		req += ":" + strconv.Itoa(count)
	}
	return req, nil
}

// ImageFor is the registry image for a runtime version.
func (c Config) ImageFor(runtimeVersion string) string {
	if c.Image != "" {
		return c.Image
	}
	v := strings.TrimPrefix(strings.TrimSpace(runtimeVersion), "v")
	if v == "" {
		return "vllm/vllm-openai:latest"
	}
	return "vllm/vllm-openai:v" + v
}
