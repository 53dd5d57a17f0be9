package planner

import (
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/lang/shape"
	"github.com/zclconf/go-cty/cty"
)

func f64(x float64) *float64 { return &x }

// fixture is the design's example screen (two Qwen3 models on an L40S,
// two shapes from the public trace's percentiles, vLLM 0.22.1 on Modal).
func fixture() *lang.Config {
	return &lang.Config{
		Dir:   "spec",
		Files: map[string][]byte{"spec/main.hcl": []byte("# fixture\n")},
		Variables: map[string]*lang.Variable{
			"runs":    {Name: "runs", Type: cty.Number, Value: cty.NumberIntVal(2)},
			"api_key": {Name: "api_key", Type: cty.String, Sensitive: true, Value: cty.StringVal("sk-secret-value")},
		},
		Models: map[string]*lang.Model{
			"qwen06": {Name: "qwen06", ID: "Qwen/Qwen3-0.6B", Revision: "c1899de289a04d12100db370d81485cdf75e47ca", MaxContext: 8192},
			"qwen17": {Name: "qwen17", ID: "Qwen/Qwen3-1.7B", Revision: "70d244cc86ccca08cf5af4e1e306ecf908b1ad5e", MaxContext: 8192},
		},
		GPUs: map[string]*lang.GPU{
			"l40s": {Name: "l40s", Type: "L40S", Count: 1},
		},
		Runtimes: map[string]*lang.Runtime{
			"vllm": {Name: "vllm", Runtime: engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: "0.22.1", RuntimeDtype: "bfloat16", RuntimeArgs: []string{"--max-model-len", "8192"}, GPUMemoryUtil: 0.9}},
		},
		Executors: map[string]*lang.Executor{
			"modal": {Name: "modal", Type: "modal", Capabilities: lang.BuiltinExecutors["modal"], Attrs: map[string]cty.Value{
				"timeout":   cty.StringVal("30m"),
				"api_token": cty.StringVal("tok-should-not-leak"),
			}},
		},
		Shapes: map[string]*lang.Shape{
			"interactive":  {Name: "interactive", Settings: shape.Settings{InputTokens: 1129, OutputTokens: 349, TemplateHeadroom: 512, Concurrency: 8, Requests: 32, Streaming: true, API: "chat"}},
			"decode_heavy": {Name: "decode_heavy", Settings: shape.Settings{InputTokens: 1129, OutputTokens: 2048, TemplateHeadroom: 512, Concurrency: 4, Requests: 32, Streaming: true, API: "chat"}},
		},
		Screens: map[string]*lang.Screen{
			"qwen_l40s": {
				Name: "qwen_l40s", Models: []string{"qwen06", "qwen17"}, Shapes: []string{"interactive", "decode_heavy"},
				GPUs: []string{"l40s"}, Runtime: "vllm", Executor: "modal", Runs: 2, Seed: 17, Baseline: "qwen17",
				SelectionBoundary: "Performance-only screening; quality is not measured.",
			},
		},
	}
}
