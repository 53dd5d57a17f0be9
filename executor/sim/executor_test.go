package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
)

func TestModelTimingDeployRunTeardown(t *testing.T) {
	x, err := New(Schema().Resolve(map[string]any{"speedup": 20.0}))
	if err != nil {
		t.Fatal(err)
	}
	d := executor.Deployment{ID: "d", ModelID: "Qwen/Qwen3-0.6B", MaxContext: 4096, GPUType: "L40S", GPUCount: 1, Seed: 1}
	s, err := x.Deploy(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if s.Info["timing"] != "model" || s.Info["speedup"] != "20" || s.Model != d.ModelID {
		t.Fatalf("server: %+v", s)
	}
	res, err := x.Run(context.Background(), s, executor.RunSpec{Lane: "l", Run: 1, Load: loadgen.Config{API: "chat", Streaming: true, InputTokens: 64, OutputTokens: 16, Concurrency: 2, Requests: 4, Seed: 1}})
	if err != nil || res.Summary.Succeeded != 4 || res.Summary.OutputTokens != 64 {
		t.Fatalf("%v %+v", err, res)
	}
	if len(res.ServerMetrics) == 0 {
		t.Error("no server metrics scraped")
	}
	if err := x.Teardown(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if err := x.Teardown(context.Background(), s); err != nil {
		t.Fatalf("second teardown: %v", err)
	}
	if _, err := x.Run(context.Background(), s, executor.RunSpec{}); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("run after teardown: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for want, cfg := range map[string]map[string]any{
		`"fast" is not one of "model", "constant"`:     {"timing": "fast"},
		`0 is out of range; use a value from 0.001 to`: {"speedup": 0.0},
		`"soon" is not a duration`:                     {"ttft": "soon"},
		`"20 ms" is not a duration`:                    {"ttft": "20 ms"},
		`has no attribute "gpu"`:                       {"gpu": "H100"},
	} {
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: got %v, want %q", cfg, err, want)
		}
	}
}

func TestDescriber(t *testing.T) {
	x, _ := New(Schema().Resolve(nil))
	if d, ok := x.(executor.Describer); !ok || len(d.Schema().Attributes) != len(Schema().Attributes) {
		t.Fatal("the sim executor does not describe its schema")
	}
}
