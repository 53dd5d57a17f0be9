package planner

import (
	"encoding/json"
	"fmt"
	"github.com/infercrane/infercrane/lang/shape"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/lang/engine"
)

func TestDiffNamesChangesAndCost(t *testing.T) {
	old := build(t, fixture())
	cfg := fixture()
	cfg.Shapes["decode_heavy"].OutputTokens = 4096 // two lanes change
	cfg.Models["qwen4"] = &lang.Model{Name: "qwen4", ID: "Qwen/Qwen3-4B", Revision: "abc", MaxContext: 8192}
	cfg.Screens["qwen_l40s"].Models = []string{"qwen06", "qwen17", "qwen4"} // two lanes added
	cur := build(t, cfg)
	d := Diff(old, cur)
	if len(d.Added) != 2 || len(d.Removed) != 0 || len(d.Changed) != 2 || d.Unchanged != 2 {
		t.Fatalf("diff %+v", d)
	}
	c := d.Changed[0]
	if strings.Join(c.ChangedInputs, ",") != "output_tokens" || c.Values["output_tokens"] != [2]any{2048.0, 4096.0} || c.CostDeltaUSD <= 0 {
		t.Errorf("change %+v", c)
	}
	if want := round(cur.Totals.CostUSD-old.Totals.CostUSD, 6); d.CostDeltaUSD != want || want <= 0 {
		t.Errorf("cost delta %v, want %v", d.CostDeltaUSD, want)
	}
	sum := d.Summary()
	if !strings.HasPrefix(sum, "Diff: 2 lanes added, 0 removed, 2 changed, 2 unchanged. Cost +$") {
		t.Errorf("summary %q", sum)
	}
	var text strings.Builder
	if err := d.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Added:", "+ " + d.Added[0].ID, "Changed:", "output_tokens 2048 -> 4096"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text diff lacks %q:\n%s", want, text.String())
		}
	}
	md := d.Markdown()
	if !strings.HasPrefix(md, "**InferCrane** Diff: ") || !strings.Contains(md, "| changed | `qwen_l40s/qwen06/decode_heavy/l40s`") ||
		!strings.Contains(md, "`output_tokens` 2048 -> 4096") {
		t.Errorf("markdown:\n%s", md)
	}
	b, err := d.JSON()
	if err != nil || !json.Valid(b) {
		t.Fatalf("JSON: %v", err)
	}
	if back := Diff(cur, old); len(back.Removed) != 2 || back.CostDeltaUSD != -d.CostDeltaUSD {
		t.Errorf("reverse diff %+v", back)
	}
	if same := Diff(old, old); !same.Empty() || same.Unchanged != 4 {
		t.Errorf("self diff %+v", same)
	}
}

func TestDiffRenamedBlockKeepsLane(t *testing.T) {
	old := build(t, fixture())
	cfg := fixture()
	cfg.Shapes["chat"] = cfg.Shapes["interactive"]
	delete(cfg.Shapes, "interactive")
	cfg.Screens["qwen_l40s"].Shapes = []string{"chat", "decode_heavy"}
	d := Diff(old, build(t, cfg))
	if len(d.Added)+len(d.Removed) != 0 || len(d.Changed) != 2 || d.Changed[0].OldKey == "" || d.CostDeltaUSD != 0 {
		t.Errorf("a renamed shape is a move, not a new lane: %+v", d)
	}
}

func TestDiffMarkdownStaysUnderLimit(t *testing.T) {
	old := build(t, genConfig(50, 20, 1)) // 1,000 lanes
	cur := build(t, genConfig(60, 40, 1)) // 2,400 lanes: 1,400 added
	d := Diff(old, cur)
	md := d.Markdown()
	if len(md) > MaxMarkdownChars {
		t.Fatalf("markdown has %d characters", len(md))
	}
	if !strings.Contains(md, "more lanes with smaller cost changes") {
		t.Error("a large diff must say it was summarised")
	}
	if !strings.HasPrefix(md, "**InferCrane** "+d.Summary()) {
		t.Error("summary line first")
	}
}

// genConfig makes one screen of models x shapes x gpus lanes (gpus <= 2)
// with architecture attributes on every model.
func genConfig(models, shapes, gpus int) *lang.Config {
	cfg := &lang.Config{
		Files:  map[string][]byte{"gen.hcl": []byte("generated")},
		Models: map[string]*lang.Model{}, Shapes: map[string]*lang.Shape{}, GPUs: map[string]*lang.GPU{},
		Runtimes:  map[string]*lang.Runtime{"vllm": {Name: "vllm", Runtime: engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: "0.22.1", RuntimeDtype: "bfloat16"}}},
		Executors: map[string]*lang.Executor{"modal": {Name: "modal", Type: "modal", Capabilities: lang.BuiltinExecutors["modal"]}},
		Screens:   map[string]*lang.Screen{},
	}
	s := &lang.Screen{Name: "gen", Runtime: "vllm", Executor: "modal", Runs: 3, Seed: 1}
	for i := 0; i < models; i++ {
		n := fmt.Sprintf("model%04d", i)
		cfg.Models[n] = &lang.Model{Name: n, ID: "gen/" + n, Revision: "r", MaxContext: 32768,
			Params: int64(500_000_000 + i*10_000_000), Layers: 24, Hidden: 2048, Heads: 16, KVHeads: 8, HeadDim: 128}
		s.Models = append(s.Models, n)
	}
	for i := 0; i < shapes; i++ {
		n := fmt.Sprintf("shape%04d", i)
		cfg.Shapes[n] = &lang.Shape{Name: n, Settings: shape.Settings{InputTokens: 256 + i, OutputTokens: 128 + i%64, TemplateHeadroom: 256,
			Concurrency: 1 + i%16, Requests: 32, Streaming: true, API: "chat"}}
		s.Shapes = append(s.Shapes, n)
	}
	for i, typ := range []string{"L40S", "H100"}[:gpus] {
		n := fmt.Sprintf("gpu%d", i)
		cfg.GPUs[n] = &lang.GPU{Name: n, Type: typ, Count: 1}
		s.GPUs = append(s.GPUs, n)
	}
	cfg.Screens[s.Name] = s
	return cfg
}

func TestDiffRunsChange(t *testing.T) {
	old := build(t, fixture())
	cfg := fixture()
	cfg.Screens["qwen_l40s"].Runs = 5
	d := Diff(old, build(t, cfg))
	if len(d.Changed) != 4 || d.Unchanged != 0 || d.CostDeltaUSD <= 0 {
		t.Fatalf("diff %+v", d)
	}
	for _, c := range d.Changed {
		if c.OldID != c.NewID || strings.Join(c.ChangedInputs, ",") != "runs" || c.Values["runs"] != [2]any{2, 5} {
			t.Errorf("change %+v: more runs keep the lane ID and are named", c)
		}
	}
}

// TestDiffNamesReportSettings: a change only the reports read keeps every
// lane and is still a difference, with its old and new values in every
// form (issue 26: a loosened gate gave "0 changed" and exit 0).
func TestDiffNamesReportSettings(t *testing.T) {
	old, cur := reportPlan(), reportPlan()
	cur.Screens[0].GateSpecs[0].Condition = "lane.failed <= 100"
	cur.Screens[0].Baseline = "b"
	d := Diff(old, cur)
	if d.Empty() || d.Unchanged != 1 || len(d.SettingsChanged) != 2 {
		t.Fatalf("diff %+v: want 1 unchanged lane and 2 settings changed", d)
	}
	if c := d.SettingsChanged[0]; c.Gate != "clean" || c.Setting != "condition" || c.Old != "lane.failed == 0" || c.New != "lane.failed <= 100" {
		t.Errorf("first change %+v", c)
	}
	var text strings.Builder
	if err := d.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 unchanged, 2 gate/report settings changed.", "  ~ screen s: gate clean: condition lane.failed <= 100 (was lane.failed == 0)\n",
		"  ~ screen s: baseline b (was a)\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if md := d.Markdown(); !strings.Contains(md, "| `s` | `clean` | condition | `lane.failed == 0` | `lane.failed <= 100` |\n") ||
		!strings.Contains(md, "| `s` |  | baseline | `a` | `b` |\n") {
		t.Errorf("markdown:\n%s", md)
	}
	b, err := d.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Settings []SettingChange `json:"settings_changed"`
	}
	if err := json.Unmarshal(b, &back); err != nil || len(back.Settings) != 2 || back.Settings[1].Old != "a" || back.Settings[1].New != "b" {
		t.Errorf("JSON settings %+v (%v):\n%s", back.Settings, err, b)
	}
	if same := Diff(old, reportPlan()); !same.Empty() || len(same.SettingsChanged) != 0 {
		t.Errorf("self diff %+v", same)
	}
}
