package modal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner/load"
)

// resolved is what the planner hands the executor for a block with attrs:
// the schema's defaults applied.
func resolved(attrs map[string]any) map[string]any { return Schema().Resolve(attrs) }

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig(resolved(map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	if c.App != "infercrane" || c.Timeout != 30*time.Minute || c.IdleTimeout != 5*time.Minute || c.HealthTimeout != 20*time.Minute || c.VolumeMount != "/root/.cache/huggingface" {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestParseConfigValues(t *testing.T) {
	c, err := ParseConfig(resolved(map[string]any{
		"app": "screens", "environment": "dev", "gpu": "A100-80GB:2", "image": "vllm/vllm-openai:v0.9.0",
		"secrets": []any{"huggingface"}, "volume": "hf-cache", "timeout": "1h", "idle_timeout": "2m",
		"health_timeout": "10m", "region": "us-east", "cloud": "aws",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.App != "screens" || c.GPU != "A100-80GB:2" || !slices.Equal(c.Secrets, []string{"huggingface"}) || c.Timeout != time.Hour || c.IdleTimeout != 2*time.Minute || c.Region != "us-east" || c.Cloud != "aws" {
		t.Fatalf("parsed: %+v", c)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"gpu": "K80"}, "unknown GPU"},
		{map[string]any{"gpu": "L4:0"}, "GPU count"},
		{map[string]any{"timeout": "forever"}, "not a duration"},
		{map[string]any{"timeout": "30s"}, "out of range"},
		{map[string]any{"timeout": "25h"}, "out of range"},
		{map[string]any{"idle_timeout": "2h"}, "idle_timeout"},
		{map[string]any{"health_timeout": "30m"}, "shorter than timeout"},
		{map[string]any{"secrets": "hf"}, "want list(string)"},
		{map[string]any{"secrets": []any{""}}, "empty name"},
		{map[string]any{"volume_mount": "cache"}, "absolute path"},
		{map[string]any{"regoin": "us"}, `no attribute "regoin"`},
		{map[string]any{"app": 3.0}, "want string"},
		{map[string]any{"app": ""}, "must not be empty"},
	} {
		_, err := ParseConfig(resolved(tc.cfg))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want error containing %q", tc.cfg, err, tc.want)
		}
	}
}

func TestHealthTimeoutFollowsShortTimeout(t *testing.T) {
	c, err := ParseConfig(resolved(map[string]any{"timeout": "6m", "idle_timeout": "1m"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.HealthTimeout != 4*time.Minute {
		t.Fatalf("health timeout %s for a 6m timeout", c.HealthTimeout)
	}
}

func TestSchemaCoversParser(t *testing.T) {
	for _, a := range Schema().Attributes {
		if a.Doc == "" {
			t.Errorf("%s has no doc", a.Name)
		}
	}
	// Every attribute decodes into Config and nothing else does.
	if _, err := executor.EncodeSettings(Schema(), Config{}); err != nil {
		t.Fatal(err)
	}
}

func TestParseGPU(t *testing.T) {
	for _, tc := range []struct {
		in    string
		name  string
		count int
	}{
		{"L40S", "L40S", 1}, {"h100", "H100", 1}, {"H100!", "H100", 1}, {"A100-80GB:2", "A100-80GB", 2},
		{"A10G", "A10", 1}, {"l4:8", "L4", 1 * 8},
	} {
		name, n, err := ParseGPU(tc.in)
		if err != nil || name != tc.name || n != tc.count {
			t.Errorf("ParseGPU(%q) = %q, %d, %v; want %q, %d", tc.in, name, n, err, tc.name, tc.count)
		}
	}
	for _, bad := range []string{"", "!", "L4:", "L4:9", "L4:x", "TPU", ":2"} {
		if _, _, err := ParseGPU(bad); err == nil {
			t.Errorf("ParseGPU(%q) accepted", bad)
		}
	}
}

func TestGPURequest(t *testing.T) {
	c := Config{}
	for _, tc := range []struct {
		typ   string
		count int
		want  string
	}{{"L40S", 1, "L40S"}, {"A10", 1, "A10G"}, {"H100", 2, "H100:2"}, {"L4", 0, "L4"}} {
		got, err := c.GPURequest(tc.typ, tc.count)
		if err != nil || got != tc.want {
			t.Errorf("GPURequest(%s, %d) = %q, %v; want %q", tc.typ, tc.count, got, err, tc.want)
		}
	}
	c.GPU = "H100!"
	if got, err := c.GPURequest("H100", 1); err != nil || got != "H100!" {
		t.Errorf("override: %q, %v", got, err)
	}
	if _, err := c.GPURequest("L40S", 1); err == nil || !strings.Contains(err.Error(), "planned on 1 x L40S") {
		t.Errorf("mismatch accepted: %v", err)
	}
	if _, err := (Config{}).GPURequest("TPUv5", 1); err == nil {
		t.Error("unknown lane GPU accepted")
	}
}

func TestImageFor(t *testing.T) {
	if got := (Config{}).ImageFor("0.22.1"); got != "vllm/vllm-openai:v0.22.1" {
		t.Error(got)
	}
	if got := (Config{}).ImageFor("v0.9.0"); got != "vllm/vllm-openai:v0.9.0" {
		t.Error(got)
	}
	if got := (Config{Image: "my/vllm:x"}).ImageFor("0.22.1"); got != "my/vllm:x" {
		t.Error(got)
	}
}

func TestServeCommandPinsFlags(t *testing.T) {
	d := executor.Deployment{ModelID: "Qwen/Qwen3-0.6B", Revision: "c1899de", MaxContext: 8192, Runtime: engine.Runtime{MaxNumSeqs: 64, MaxBatchedTokens: 4096, RuntimeDtype: "bfloat16", GPUMemoryUtil: 0.9, RuntimeArgs: []string{"--enable-prefix-caching"}},
		Seed: 17, GPUCount: 2,
	}
	got := strings.Join(ServeCommand(d), " ")
	want := "vllm serve Qwen/Qwen3-0.6B --revision c1899de --max-model-len 8192 --seed 17 --dtype bfloat16 --gpu-memory-utilization 0.9 --max-num-seqs 64 --max-num-batched-tokens 4096 --tensor-parallel-size 2 --no-enable-log-requests --host 127.0.0.1 --port 8000 --enable-prefix-caching"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// A flag the runtime args set appears once, with the runtime's value.
	d.RuntimeArgs = []string{"--max-model-len", "4096", "--seed=3"}
	argv := ServeCommand(d)
	if n := strings.Count(strings.Join(argv, " "), "--max-model-len"); n != 1 {
		t.Fatalf("--max-model-len %d times: %v", n, argv)
	}
	if slices.Contains(argv, "17") || !slices.Contains(argv, "4096") {
		t.Fatalf("runtime args lost: %v", argv)
	}
}

// TestLoadMessage: the load travels into the sandbox as the JSON of the
// plan's loadgen config (the server's address on the command line); every setting
// survives (a flag round trip used to drop the drawn workload), and the API
// key never travels.
func TestLoadMessage(t *testing.T) {
	c := loadgen.Config{InputTokens: 512, OutputTokens: 64, Concurrency: 8, Requests: 32, Seed: 17, Streaming: true,
		RequestRate: 4, Arrival: "poisson", Warmup: 2, SLO: loadgen.SLO{TTFTMs: 250, TPOTMs: 12.5},
		TraceFile: "/infercrane/traces/t.jsonl", TimeScale: 0.5, GraceMs: 2000, H2C: true, APIKey: "sk-never",
		Workload: &load.Spec{Window: 4096, BlockSize: 16, Prefix: &load.Prefix{Groups: 4}}}
	msg, err := LoadMessage("Qwen/Qwen3-0.6B", c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(msg), "sk-never") {
		t.Fatal("the API key is in the load message")
	}
	got, err := loadgen.ReadConfig(bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	want := c
	want.BaseURL, want.Model, want.APIKey = "", "Qwen/Qwen3-0.6B", ""
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the load changed on the way:\n got %+v\nwant %+v", got, want)
	}
	argv := strings.Join(BenchCommand("/infercrane/runs/l-1.load.json", "/infercrane/runs/l-1.jsonl"), " ")
	if argv != RemoteBinary+" bench --url http://127.0.0.1:8000 --config /infercrane/runs/l-1.load.json --records /infercrane/runs/l-1.jsonl --result - --server-gauges 500ms" {
		t.Fatal(argv)
	}
}

func TestRecordsPathIsSafe(t *testing.T) {
	p := recordsPath(executor.RunSpec{Lane: "../../etc/x y", Run: 3})
	if p != "/infercrane/runs/.._.._etc_x_y-3.jsonl" {
		t.Fatal(p)
	}
}

func TestGPUMatches(t *testing.T) {
	for _, tc := range []struct {
		catalog, seen string
		ok            bool
	}{
		{"L4", "NVIDIA L4", true}, {"L4", "NVIDIA L40S", false}, {"L40S", "NVIDIA L40S", true},
		{"A10", "NVIDIA A10G", true}, {"A10", "NVIDIA A100-SXM4-40GB", false},
		{"A100-80GB", "NVIDIA A100-SXM4-80GB", true}, {"A100-80GB", "NVIDIA A100-SXM4-40GB", false},
		{"H100", "NVIDIA H100 80GB HBM3", true}, {"H100", "NVIDIA H200", false},
	} {
		if got := gpuMatches(tc.catalog, tc.seen); got != tc.ok {
			t.Errorf("gpuMatches(%q, %q) = %v", tc.catalog, tc.seen, got)
		}
	}
}

func TestParseGPUQuery(t *testing.T) {
	name, capab, n := parseGPUQuery("NVIDIA H100 80GB HBM3, 9.0\nNVIDIA H100 80GB HBM3, 9.0\n")
	if name != "NVIDIA H100 80GB HBM3" || capab != "9.0" || n != 2 {
		t.Fatal(name, capab, n)
	}
	if _, _, n := parseGPUQuery("NVIDIA-SMI has failed"); n != 0 {
		t.Fatal(n)
	}
}

func TestRetryBacksOffOnCapacityOnly(t *testing.T) {
	b := Backoff{Base: time.Millisecond, Max: 4 * time.Millisecond, Attempts: 5}
	calls, notes := 0, 0
	err := retry(t.Context(), b, isCapacity, func(int, time.Duration, error) { notes++ }, func() error {
		calls++
		if calls < 3 {
			return ErrCapacity
		}
		return nil
	})
	if err != nil || calls != 3 || notes != 2 {
		t.Fatalf("err %v calls %d notes %d", err, calls, notes)
	}
	calls = 0
	err = retry(t.Context(), b, isCapacity, nil, func() error { calls++; return ErrImage })
	if !errors.Is(err, ErrImage) || calls != 1 {
		t.Fatalf("non-retryable retried: %v, %d calls", err, calls)
	}
	calls = 0
	err = retry(t.Context(), b, isCapacity, nil, func() error { calls++; return ErrCapacity })
	if !errors.Is(err, ErrCapacity) || calls != 5 || !strings.Contains(err.Error(), "gave up after 5 attempts") {
		t.Fatalf("%v after %d calls", err, calls)
	}
	if w := b.wait(10); w != 4*time.Millisecond {
		t.Fatalf("wait not capped: %s", w)
	}
}

func TestRetryStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := retry(ctx, Backoff{Base: time.Hour, Max: time.Hour, Attempts: 3}, always, nil, func() error { return ErrCapacity })
	if !errors.Is(err, ErrCapacity) || !strings.Contains(err.Error(), "canceled") {
		t.Fatal(err)
	}
}

func FuzzParseGPU(f *testing.F) {
	for _, s := range []string{"L40S", "A100-80GB:2", "H100!", "l4:8", "", ":", "A10G:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, n, err := ParseGPU(s)
		if err != nil {
			return
		}
		if n < 1 || n > 8 {
			t.Fatalf("count %d accepted for %q", n, s)
		}
		// What was accepted is a catalog type the request builder agrees with.
		if _, err := (Config{GPU: s}).GPURequest(name, n); err != nil {
			t.Fatalf("%q parsed as %d x %s but GPURequest refuses it: %v", s, n, name, err)
		}
	})
}

func FuzzParseConfigDurations(f *testing.F) {
	for _, s := range []string{"30m", "1h", "5m", "0s", "-1m", "1e9h", "90"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, timeout, idle string) {
		c, err := ParseConfig(resolved(map[string]any{"timeout": timeout, "idle_timeout": idle}))
		if err != nil {
			return
		}
		if c.Timeout < time.Minute || c.Timeout > MaxTimeout || c.IdleTimeout <= 0 || c.IdleTimeout > c.Timeout || c.HealthTimeout >= c.Timeout {
			t.Fatalf("accepted out-of-range config %+v", c)
		}
	})
}

func TestResolveBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ResolveBinary(self); err != nil || got != self {
		t.Fatalf("a linux/amd64 executable refused: %q, %v", got, err)
	}
	text := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(text, []byte("not a program"), 0o644)
	_, err = ResolveBinary(text)
	if err == nil || !strings.Contains(err.Error(), "not a Linux executable") || !strings.Contains(err.Error(), "GOOS=linux GOARCH=amd64") {
		t.Fatalf("got %v", err)
	}
}

// On another platform than linux/amd64, with no infercrane-loadgen beside
// the running binary and no binary attribute, the modal executor does not
// run `go build` for its user (issue 24): it refuses, naming the attribute
// to set. Before, it built one from the module of the current directory
// (this test's, so it returned a fresh binary and no error).
func TestResolveLoadgenNeverBuilds(t *testing.T) {
	self := filepath.Join(t.TempDir(), "infercrane") // nothing beside it
	for name, resolve := range map[string]func() (string, error){
		"loadgen": func() (string, error) { return resolveLoadgen("", self, nil, "darwin/arm64") },
		"cli":     func() (string, error) { return resolveBinary("", self, nil, "darwin/arm64") },
	} {
		got, err := resolve()
		if err == nil || got != "" {
			t.Errorf("%s: got %q, %v; want an error", name, got, err)
			continue
		}
		for _, want := range []string{"no linux/amd64", "darwin/arm64", "binary attribute"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v does not say %q", name, err, want)
			}
		}
	}
}

// TestResolveLoadgen: a benchmark sandbox gets the infercrane-loadgen next
// to the running binary when there is one, else the running binary itself.
func TestResolveLoadgen(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the fallback to the running binary needs linux/amd64")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ResolveLoadgen(""); err != nil || got != self {
		t.Fatalf("without a sibling: %q, %v; want %q", got, err, self)
	}
	sibling := filepath.Join(filepath.Dir(self), LoadgenName)
	raw, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sibling, raw, 0o755); err != nil {
		t.Skipf("cannot write next to the test binary: %v", err)
	}
	defer os.Remove(sibling)
	if got, err := ResolveLoadgen(""); err != nil || got != sibling {
		t.Fatalf("with a sibling: %q, %v; want %q", got, err, sibling)
	}
	if got, err := ResolveBinary(""); err != nil || got != self {
		t.Fatalf("profile shards need the whole CLI: %q, %v", got, err)
	}
}

func FuzzParseGPUQuery(f *testing.F) {
	for _, s := range []string{"NVIDIA L4, 8.9\n", "NVIDIA H100 80GB HBM3, 9.0\nNVIDIA H100 80GB HBM3, 9.0\n", "", ",\n,", "No devices were found"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		name, capab, n := parseGPUQuery(out)
		if n > strings.Count(out, "\n")+1 || n < 0 {
			t.Fatalf("%d GPUs from %d lines", n, strings.Count(out, "\n")+1)
		}
		if n == 0 && (name != "" || capab != "") {
			t.Fatalf("no GPU but name %q cap %q", name, capab)
		}
		if strings.ContainsAny(name+capab, "\n") {
			t.Fatalf("a field spans lines: %q %q", name, capab)
		}
	})
}
