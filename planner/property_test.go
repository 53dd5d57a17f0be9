package planner

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang/shape"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/zclconf/go-cty/cty"
)

// randomConfig makes a spec of two screens over random subsets of three
// models, three shapes and two GPUs, with distinct seeds (so no two lanes
// of different screens have identical inputs).
func randomConfig(r *rand.Rand) *lang.Config {
	cfg := &lang.Config{
		Models: map[string]*lang.Model{}, Shapes: map[string]*lang.Shape{}, GPUs: map[string]*lang.GPU{},
		Runtimes: map[string]*lang.Runtime{}, Executors: map[string]*lang.Executor{}, Screens: map[string]*lang.Screen{},
	}
	ids := []string{"Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B", "Qwen/Qwen3-4B"}
	for i, id := range ids {
		n := fmt.Sprintf("m%d", i)
		cfg.Models[n] = &lang.Model{Name: n, ID: id, Revision: fmt.Sprintf("rev%d", r.Intn(100)), MaxContext: 8192}
	}
	for i := 0; i < 3; i++ {
		n := fmt.Sprintf("s%d", i)
		cfg.Shapes[n] = &lang.Shape{Name: n, Settings: shape.Settings{InputTokens: 100 + r.Intn(2000), OutputTokens: 10 + r.Intn(1000),
			TemplateHeadroom: 256, Concurrency: 1 + r.Intn(16), Requests: 32 + r.Intn(32), Streaming: true, API: "chat"}}
	}
	for i, typ := range []string{"L40S", "H100"} {
		n := fmt.Sprintf("g%d", i)
		cfg.GPUs[n] = &lang.GPU{Name: n, Type: typ, Count: 1}
	}
	for i := 0; i < 2; i++ {
		n := fmt.Sprintf("r%d", i)
		cfg.Runtimes[n] = &lang.Runtime{Name: n, Runtime: engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: fmt.Sprintf("0.%d.0", 20+i), RuntimeDtype: "bfloat16", RuntimeArgs: []string{"--seed", "1"}}}
		e := fmt.Sprintf("e%d", i)
		cfg.Executors[e] = &lang.Executor{Name: e, Type: "modal", Capabilities: lang.BuiltinExecutors["modal"], Attrs: map[string]cty.Value{"timeout": cty.StringVal(fmt.Sprintf("%dm", 10+i))}}
	}
	pick := func(pool []string) []string {
		var out []string
		for _, x := range pool {
			if r.Intn(3) > 0 {
				out = append(out, x)
			}
		}
		if len(out) == 0 {
			out = pool[:1]
		}
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	for i := 0; i < 2; i++ {
		n := fmt.Sprintf("sc%d", i)
		cfg.Screens[n] = &lang.Screen{Name: n, Models: pick([]string{"m0", "m1", "m2"}), Shapes: pick([]string{"s0", "s1", "s2"}),
			GPUs: pick([]string{"g0", "g1"}), Runtime: fmt.Sprintf("r%d", r.Intn(2)), Executor: fmt.Sprintf("e%d", r.Intn(2)),
			Runs: 2, Seed: int64(i*100 + r.Intn(50))}
	}
	return cfg
}

// renamed returns cfg with every block renamed (prefix "x_") and every
// screen list reversed: the same lanes under other names, in other orders.
func renamed(cfg *lang.Config) *lang.Config {
	out := *cfg
	ren := func(s string) string { return "x_" + s }
	rev := func(in []string) []string {
		out := make([]string, len(in))
		for i, s := range in {
			out[len(in)-1-i] = ren(s)
		}
		return out
	}
	out.Models, out.Shapes, out.GPUs = map[string]*lang.Model{}, map[string]*lang.Shape{}, map[string]*lang.GPU{}
	out.Runtimes, out.Executors, out.Screens = map[string]*lang.Runtime{}, map[string]*lang.Executor{}, map[string]*lang.Screen{}
	for n, b := range cfg.Models {
		c := *b
		c.Name = ren(n)
		out.Models[ren(n)] = &c
	}
	for n, b := range cfg.Shapes {
		c := *b
		c.Name = ren(n)
		out.Shapes[ren(n)] = &c
	}
	for n, b := range cfg.GPUs {
		c := *b
		c.Name = ren(n)
		out.GPUs[ren(n)] = &c
	}
	for n, b := range cfg.Runtimes {
		out.Runtimes[ren(n)] = b
	}
	for n, b := range cfg.Executors {
		out.Executors[ren(n)] = b
	}
	for n, s := range cfg.Screens {
		c := *s
		c.Name = ren(n)
		c.Models, c.Shapes, c.GPUs = rev(s.Models), rev(s.Shapes), rev(s.GPUs)
		c.Runtime, c.Executor = ren(s.Runtime), ren(s.Executor)
		out.Screens[ren(n)] = &c
	}
	return &out
}

func laneIDs(p *Plan) map[string]string {
	m := map[string]string{}
	for _, l := range p.Lanes {
		m[l.Key] = l.ID
	}
	return m
}

func TestPropertyIDsIgnoreNamesAndOrder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 100; i++ {
		cfg := randomConfig(r)
		a, b := laneIDs(build(t, cfg)), laneIDs(build(t, renamed(cfg)))
		if len(a) != len(b) {
			t.Fatalf("case %d: %d lanes vs %d", i, len(a), len(b))
		}
		for key, id := range a {
			parts := strings.Split(key, "/")
			for j := range parts {
				parts[j] = "x_" + parts[j]
			}
			if got := b[strings.Join(parts, "/")]; got != id {
				t.Fatalf("case %d: lane %s has ID %s, renamed and reordered %s", i, key, id, got)
			}
		}
	}
}

// mutation changes one input of one block; uses says whether a lane
// (screen config, lane) depends on that block.
type mutation struct {
	name  string
	apply func(*lang.Config)
	uses  func(cfg *lang.Config, l *Lane) bool
}

func mutations() []mutation {
	model := func(n string) func(*lang.Config, *Lane) bool {
		return func(_ *lang.Config, l *Lane) bool { return l.Model == n }
	}
	shape := func(n string) func(*lang.Config, *Lane) bool {
		return func(_ *lang.Config, l *Lane) bool { return l.Shape == n }
	}
	gpu := func(n string) func(*lang.Config, *Lane) bool {
		return func(_ *lang.Config, l *Lane) bool { return l.GPU == n }
	}
	runtime := func(n string) func(*lang.Config, *Lane) bool {
		return func(c *lang.Config, l *Lane) bool { return c.Screens[l.Screen].Runtime == n }
	}
	executor := func(n string) func(*lang.Config, *Lane) bool {
		return func(c *lang.Config, l *Lane) bool { return c.Screens[l.Screen].Executor == n }
	}
	screen := func(n string) func(*lang.Config, *Lane) bool {
		return func(_ *lang.Config, l *Lane) bool { return l.Screen == n }
	}
	return []mutation{
		{"model id", func(c *lang.Config) { c.Models["m1"].ID = "Qwen/Qwen3-8B" }, model("m1")},
		{"model revision", func(c *lang.Config) { c.Models["m0"].Revision += "x" }, model("m0")},
		{"model max_context", func(c *lang.Config) { c.Models["m2"].MaxContext = 16384 }, model("m2")},
		{"shape input", func(c *lang.Config) { c.Shapes["s0"].InputTokens++ }, shape("s0")},
		{"shape output", func(c *lang.Config) { c.Shapes["s1"].OutputTokens++ }, shape("s1")},
		{"shape headroom", func(c *lang.Config) { c.Shapes["s2"].TemplateHeadroom = 512 }, shape("s2")},
		{"shape concurrency", func(c *lang.Config) { c.Shapes["s0"].Concurrency++ }, shape("s0")},
		{"shape requests", func(c *lang.Config) { c.Shapes["s1"].Requests++ }, shape("s1")},
		{"shape warmup", func(c *lang.Config) { c.Shapes["s2"].Warmup = 3 }, shape("s2")},
		{"shape api", func(c *lang.Config) { c.Shapes["s0"].API = "completions" }, shape("s0")},
		{"shape rate", func(c *lang.Config) { c.Shapes["s1"].RequestRate = 2.5 }, shape("s1")},
		{"shape slo", func(c *lang.Config) { c.Shapes["s2"].SLO.TTFTMs = 200 }, shape("s2")},
		{"shape streaming", func(c *lang.Config) { c.Shapes["s0"].Streaming = false }, shape("s0")},
		{"gpu type", func(c *lang.Config) { c.GPUs["g0"].Type = "A100-80GB" }, gpu("g0")},
		{"gpu count", func(c *lang.Config) { c.GPUs["g1"].Count = 2 }, gpu("g1")},
		{"runtime version", func(c *lang.Config) { c.Runtimes["r0"].RuntimeVersion = "0.30.0" }, runtime("r0")},
		{"runtime args", func(c *lang.Config) {
			c.Runtimes["r1"].RuntimeArgs = append(c.Runtimes["r1"].RuntimeArgs, "--enforce-eager")
		}, runtime("r1")},
		{"runtime dtype", func(c *lang.Config) { c.Runtimes["r0"].RuntimeDtype = "float16" }, runtime("r0")},
		{"runtime memory", func(c *lang.Config) { c.Runtimes["r1"].GPUMemoryUtil = 0.8 }, runtime("r1")},
		{"runtime max seqs", func(c *lang.Config) { c.Runtimes["r0"].MaxNumSeqs = 64 }, runtime("r0")},
		{"runtime batched", func(c *lang.Config) { c.Runtimes["r1"].MaxBatchedTokens = 4096 }, runtime("r1")},
		{"executor attr", func(c *lang.Config) { c.Executors["e0"].Attrs["region"] = cty.StringVal("us-east") }, executor("e0")},
		{"executor type", func(c *lang.Config) {
			c.Executors["e1"].Type, c.Executors["e1"].Capabilities = "local", lang.BuiltinExecutors["local"]
		}, executor("e1")},
		{"screen seed", func(c *lang.Config) { c.Screens["sc1"].Seed = 999 }, screen("sc1")},
	}
}

func TestPropertySingleChangeChangesExactlyDependentLanes(t *testing.T) {
	for i, m := range mutations() {
		for seed := int64(0); seed < 10; seed++ {
			before := randomConfig(rand.New(rand.NewSource(seed)))
			after := randomConfig(rand.New(rand.NewSource(seed)))
			m.apply(after)
			a, b := build(t, before), build(t, after)
			idsAfter := laneIDs(b)
			for _, l := range a.Lanes {
				changed := idsAfter[l.Key] != l.ID
				if dep := m.uses(before, l); changed != dep {
					t.Fatalf("mutation %d (%s), seed %d: lane %s depends=%v changed=%v", i, m.name, seed, l.Key, dep, changed)
				}
			}
			// Every changed lane is named with what changed.
			d := Diff(a, b)
			for _, c := range d.Changed {
				if len(c.ChangedInputs) == 0 {
					t.Fatalf("mutation %s: lane %s changed without naming an input", m.name, c.Key)
				}
			}
		}
	}
}

// The HCL-level property: reordering blocks, reformatting and renaming a
// local never change a lane ID; changing a value does.
const hclBlocks = `model "small" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = local.ctx
}
---
model "big" {
  id          = "Qwen/Qwen3-1.7B"
  revision    = "70d244cc86ccca08cf5af4e1e306ecf908b1ad5e"
  max_context = local.ctx
}
---
locals {
  ctx = 8192
  out = 256
}
---
gpu "l40s" {
  type = "L40S"
}
---
runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
  dtype   = "bfloat16"
  args    = ["--max-model-len", tostring(local.ctx)]
}
---
shape "chat" {
  input_tokens      = 1024
  output_tokens     = local.out
  template_headroom = 512
  concurrency       = 8
  requests          = 32
}
---
shape "long" {
  input_tokens      = 4096
  output_tokens     = local.out * 2
  template_headroom = 512
  concurrency       = 4
  requests          = 32
}
---
screen "main" {
  models   = [model.small, model.big]
  shapes   = [shape.chat, shape.long]
  gpus     = [gpu.l40s]
  runtime  = runtime.vllm
  runs     = 5
  seed     = 7
  baseline = model.big
}`

func planHCL(t *testing.T, src string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, l := range planSpec(t, src).Lanes {
		ids[l.Key] = l.ID
	}
	return ids
}

func TestPropertyHCLReorderReformatRenameLocal(t *testing.T) {
	blocks := strings.Split(hclBlocks, "\n---\n")
	base := planHCL(t, strings.Join(blocks, "\n\n"))
	if len(base) != 4 {
		t.Fatalf("lanes %v", base)
	}
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 8; i++ {
		b := append([]string(nil), blocks...)
		r.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
		src := strings.Join(b, "\n\n\n# a comment between blocks\n")
		// Reformat: collapse alignment spaces, indent with tabs.
		src = strings.NewReplacer("  =", " =", "   ", " ", "\n  ", "\n\t").Replace(src)
		if i%2 == 1 { // rename a local everywhere
			src = strings.ReplaceAll(src, "local.out", "local.output_len")
			src = strings.Replace(src, "out = 256", "output_len = 256", 1)
		}
		if got := planHCL(t, src); fmt.Sprint(got) != fmt.Sprint(base) {
			t.Fatalf("variant %d changed lane IDs:\n%v\n%v\n%s", i, base, got, src)
		}
	}
	// Changing the value of the local changes exactly the lanes using it: all
	// four (both shapes use local.out); changing one shape changes two.
	changed := planHCL(t, strings.Replace(strings.Join(blocks, "\n\n"), "input_tokens      = 1024", "input_tokens      = 1000", 1))
	n := 0
	for k, id := range base {
		if changed[k] != id {
			n++
			if !strings.Contains(k, "/chat/") {
				t.Errorf("lane %s changed though shape chat was edited", k)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d lanes changed, want 2", n)
	}
}
