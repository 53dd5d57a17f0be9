package modal

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/planner/perf"
)

// Defaults of the executor block's attributes.
const (
	DefaultApp           = "infercrane"
	DefaultTimeout       = 30 * time.Minute
	DefaultIdleTimeout   = 5 * time.Minute
	DefaultHealthTimeout = 20 * time.Minute
	DefaultVolumeMount   = "/root/.cache/huggingface"
	// MaxTimeout is Modal's upper bound on a Sandbox's lifetime.
	MaxTimeout = 24 * time.Hour
)

// Config is the parsed `executor "NAME" { type = "modal" ... }` block.
type Config struct {
	App           string        // Modal App the sandboxes belong to
	Environment   string        // Modal environment (empty: the profile's)
	GPU           string        // Modal GPU request overriding the lane's ("H100!", "A100-80GB:2")
	Image         string        // registry image; empty: vllm/vllm-openai:v<runtime.version>
	Secrets       []string      // Modal Secret names injected as environment variables
	Volume        string        // Modal Volume name for the model cache (created if missing)
	VolumeMount   string        // where Volume is mounted
	Timeout       time.Duration // maximum lifetime of a sandbox
	IdleTimeout   time.Duration // a sandbox idle this long is stopped by Modal
	HealthTimeout time.Duration // deadline for vLLM's /health after the sandbox starts
	Region        string
	Cloud         string
	Binary        string // path of a linux/amd64 load generator binary (empty: see ResolveBinary)
}

// Schema describes the attributes of a modal executor block.
func Schema() executor.Schema {
	return executor.Schema{Attributes: []executor.Attribute{
		{Name: "app", Type: executor.AttrString, Doc: `Modal App name the sandboxes run under (default "infercrane"; created if missing).`},
		{Name: "environment", Type: executor.AttrString, Doc: "Modal environment (default: the active profile's)."},
		{Name: "gpu", Type: executor.AttrString, Doc: `Modal GPU request such as "L40S", "H100!" or "A100-80GB:2"; must name the lane's GPU type and count (default: derived from the gpu block).`},
		{Name: "image", Type: executor.AttrString, Doc: "Registry image running vLLM (default vllm/vllm-openai:v<runtime.version>)."},
		{Name: "secrets", Type: executor.AttrStringList, Doc: "Names of Modal Secrets injected into the server, e.g. a Hugging Face token."},
		{Name: "volume", Type: executor.AttrString, Doc: "Modal Volume caching model weights across sandboxes (created if missing)."},
		{Name: "volume_mount", Type: executor.AttrString, Doc: `Mount point of the volume (default "/root/.cache/huggingface").`},
		{Name: "timeout", Type: executor.AttrDuration, Min: executor.Seconds(time.Minute), Max: executor.Seconds(MaxTimeout), Doc: `Hard limit on a sandbox's lifetime; Modal stops it after this even if InferCrane crashed (default "30m", at most "24h").`},
		{Name: "idle_timeout", Type: executor.AttrDuration, Min: executor.Seconds(time.Second), Max: executor.Seconds(MaxTimeout), Doc: `Modal stops a sandbox idle this long (default "5m").`},
		{Name: "health_timeout", Type: executor.AttrDuration, Min: executor.Seconds(time.Second), Max: executor.Seconds(MaxTimeout), Doc: `Deadline for vLLM's /health to answer 200, image pull and model download included (default "20m", or two thirds of a shorter timeout).`},
		{Name: "region", Type: executor.AttrString, Doc: `Modal region to run in, e.g. "us-east" (default: any).`},
		{Name: "cloud", Type: executor.AttrString, Doc: `Cloud provider, e.g. "aws", "gcp", "oci" (default: any).`},
		{Name: "binary", Type: executor.AttrString, Doc: "Path of the linux/amd64 binary copied into the sandbox: for benchmarks infercrane-loadgen or a whole infercrane (default: the infercrane-loadgen next to the running binary, else the running binary when it is linux/amd64, else built with go build); for trace profile shards a whole infercrane."},
	}}
}

// ParseConfig validates an executor block's attributes and applies defaults.
// Values may be Go strings, numbers (durations in seconds) and string lists,
// as the spec language hands them over.
func ParseConfig(cfg map[string]any) (Config, error) {
	c := Config{
		App:           DefaultApp,
		VolumeMount:   DefaultVolumeMount,
		Timeout:       DefaultTimeout,
		IdleTimeout:   DefaultIdleTimeout,
		HealthTimeout: DefaultHealthTimeout,
	}
	known := map[string]bool{}
	for _, a := range Schema().Attributes {
		known[a.Name] = true
	}
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := cfg[k]
		if k == "type" {
			continue
		}
		if !known[k] {
			return Config{}, executor.AttrErrorf(k, "modal executor: unknown attribute %q; valid attributes: %s", k, attrNames())
		}
		var err error
		switch k {
		case "app":
			c.App, err = str(k, v)
		case "environment":
			c.Environment, err = str(k, v)
		case "gpu":
			c.GPU, err = str(k, v)
			if err == nil {
				_, _, err = ParseGPU(c.GPU)
			}
		case "image":
			c.Image, err = str(k, v)
		case "secrets":
			c.Secrets, err = strList(k, v)
		case "volume":
			c.Volume, err = str(k, v)
		case "volume_mount":
			c.VolumeMount, err = str(k, v)
			if err == nil && !strings.HasPrefix(c.VolumeMount, "/") {
				err = fmt.Errorf("modal executor: volume_mount %q must be an absolute path such as %q", c.VolumeMount, DefaultVolumeMount)
			}
		case "timeout":
			c.Timeout, err = duration(k, v)
		case "idle_timeout":
			c.IdleTimeout, err = duration(k, v)
		case "health_timeout":
			c.HealthTimeout, err = duration(k, v)
		case "region":
			c.Region, err = str(k, v)
		case "cloud":
			c.Cloud, err = str(k, v)
		case "binary":
			c.Binary, err = str(k, v)
		}
		if err != nil {
			return Config{}, &executor.AttrError{Name: k, Err: err}
		}
	}
	if _, given := cfg["health_timeout"]; !given {
		c.HealthTimeout = min(DefaultHealthTimeout, c.Timeout*2/3)
	}
	if c.App == "" {
		return Config{}, executor.AttrErrorf("app", "modal executor: app must not be empty; leave it out to use %q", DefaultApp)
	}
	if c.Timeout < time.Minute || c.Timeout > MaxTimeout {
		return Config{}, executor.AttrErrorf("timeout", "modal executor: timeout %s is out of range; use a duration from 1m to 24h (Modal's maximum sandbox lifetime; default %s)", c.Timeout, DefaultTimeout)
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

func attrNames() string {
	var n []string
	for _, a := range Schema().Attributes {
		n = append(n, a.Name)
	}
	return strings.Join(n, ", ")
}

func str(k string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("modal executor: %s must be a string, got %T", k, v)
	}
	return s, nil
}

func strList(k string, v any) ([]string, error) {
	switch l := v.(type) {
	case []string:
		return append([]string(nil), l...), nil
	case []any:
		out := make([]string, 0, len(l))
		for i, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("modal executor: %s[%d] must be a string, got %T", k, i, e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("modal executor: %s must be a list of strings, got %T", k, v)
}

func duration(k string, v any) (time.Duration, error) {
	var secs float64
	switch x := v.(type) {
	case string:
		d, err := time.ParseDuration(strings.TrimSpace(x))
		if err != nil {
			return 0, fmt.Errorf("modal executor: %s %q is not a duration; write it like \"30m\" or \"1h30m\"", k, x)
		}
		return d, nil
	case int:
		secs = float64(x)
	case int64:
		secs = float64(x)
	case float64:
		secs = x
	default:
		return 0, fmt.Errorf("modal executor: %s must be a duration string such as \"30m\", got %T", k, v)
	}
	if math.IsNaN(secs) || math.IsInf(secs, 0) || secs < 0 || secs > MaxTimeout.Seconds() {
		return 0, fmt.Errorf("modal executor: %s %v seconds is out of range", k, secs)
	}
	return time.Duration(secs * float64(time.Second)), nil
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
