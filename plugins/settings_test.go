package plugins_test

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/sim"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/plugins"
	"github.com/infercrane/infercrane/plugins/endpoint"
	"github.com/infercrane/infercrane/plugins/local"
	"github.com/infercrane/infercrane/plugins/modal"
)

// settingsCase is one built-in executor: a block as a user writes it, the
// settings the plan must resolve it to, and other valid values for every
// defaulted setting.
type settingsCase struct {
	builtin plugins.Builtin
	block   string
	want    map[string]any
	// alt changes every setting that has a default.
	alt map[string]any
	// effective is what the executor instance runs with, as its typed
	// settings struct.
	effective func(executor.Executor) any
}

func settingsCases() []settingsCase {
	return []settingsCase{
		{
			builtin:   plugins.Builtin{Name: sim.Type, New: sim.New, Schema: sim.Schema, Validate: sim.Validate},
			block:     `ttft = "0.02s"`,
			want:      map[string]any{"timing": "model", "speedup": 1.0, "ttft": "20ms", "itl": "5ms", "max_waiting": 0.0},
			alt:       map[string]any{"timing": "constant", "speedup": 7.0, "ttft": "3ms", "itl": "2ms", "max_waiting": 9.0},
			effective: func(x executor.Executor) any { return x.(*sim.Executor).Settings() },
		},
		{
			builtin:   plugins.Builtin{Name: endpoint.Type, New: endpoint.New, Schema: endpoint.Schema, Validate: endpoint.Validate},
			block:     `base_url = "http://127.0.0.1:9"`,
			want:      map[string]any{"base_url": "http://127.0.0.1:9", "check_timeout": "30s"},
			alt:       map[string]any{"check_timeout": "7s"},
			effective: func(x executor.Executor) any { return x.(*endpoint.Executor).Settings() },
		},
		{
			builtin:   plugins.Builtin{Name: local.Type, New: local.New, Schema: local.Schema, Validate: local.Validate},
			block:     `stop_timeout = "90s"`,
			want:      map[string]any{"host": "127.0.0.1", "health_timeout": "20m", "stop_timeout": "1m30s"},
			alt:       map[string]any{"host": "127.0.0.2", "health_timeout": "3m", "stop_timeout": "4s"},
			effective: func(x executor.Executor) any { return x.(*local.Executor).Settings() },
		},
		{
			builtin: plugins.Builtin{Name: modal.Type, New: modal.New, Schema: modal.Schema, Validate: modal.Validate},
			block:   `timeout = "15m"`,
			// health_timeout: 20m, capped at two thirds of the timeout.
			want:      map[string]any{"app": "infercrane", "volume_mount": "/root/.cache/huggingface", "timeout": "15m", "idle_timeout": "5m", "health_timeout": "10m"},
			alt:       map[string]any{"app": "other", "volume_mount": "/cache", "timeout": "2h", "idle_timeout": "7m", "health_timeout": "33m"},
			effective: func(x executor.Executor) any { return x.(*modal.Executor).Config() },
		},
	}
}

// planLaneSettings plans a one-lane spec whose executor block is block,
// with the built-ins' schemas as the CLI loads them, and returns the lane's
// executor settings.
func planLaneSettings(t *testing.T, reg *plugins.Registry, typ, block string) map[string]any {
	t.Helper()
	src := `model "m" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 4096
}
gpu "g" {
  type = "L40S"
}
shape "s" {
  input_tokens  = 128
  output_tokens = 16
  concurrency   = 1
  requests      = 5
}
executor "x" {
  type = "` + typ + `"
  ` + block + `
}
screen "a" {
  models   = [model.m]
  shapes   = [shape.s]
  gpus     = [gpu.g]
  executor = executor.x
  runs     = 5
}
`
	cfg, diags := lang.LoadSource(t.TempDir(), "main.hcl", []byte(src), lang.Options{ExecutorSchemas: reg.SpecSchemas()})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	p, diags := planner.Build(cfg, nil, planner.Options{})
	if diags.HasErrors() || len(p.Lanes) != 1 {
		t.Fatalf("plan: %v, %d lanes", diags, len(p.Lanes))
	}
	return p.Lanes[0].RevealedSettings()
}

// TestBuiltinsRunWithThePlansSettings: for every built-in executor, the
// plan resolves the block's settings completely (the schema's defaults,
// durations in canonical form), and the executor runs with exactly the
// settings the plan carries: with other values for every defaulted
// setting its typed settings are those values, and without any one of them
// it refuses to start instead of falling back on a default of its own.
func TestBuiltinsRunWithThePlansSettings(t *testing.T) {
	cases := settingsCases()
	reg := &plugins.Registry{}
	for _, c := range cases {
		reg.Builtins = append(reg.Builtins, c.builtin)
	}
	for _, c := range cases {
		t.Run(c.builtin.Name, func(t *testing.T) {
			schema := c.builtin.Schema()
			settings := planLaneSettings(t, reg, c.builtin.Name, c.block)
			if !reflect.DeepEqual(settings, c.want) {
				t.Fatalf("the plan resolves %v, want %v", settings, c.want)
			}
			var defaulted []string
			for _, a := range schema.Attributes {
				if a.Default != nil {
					defaulted = append(defaulted, a.Name)
				}
			}
			if got := slices.Sorted(maps.Keys(c.alt)); !slices.Equal(got, slices.Sorted(slices.Values(defaulted))) {
				t.Fatalf("the test changes %v, but the defaulted settings are %v", got, defaulted)
			}

			runs := func(settings map[string]any) map[string]any {
				t.Helper()
				x, err := c.builtin.New(settings)
				if err != nil {
					t.Fatalf("open with the plan's settings %v: %v", settings, err)
				}
				got, err := executor.EncodeSettings(schema, c.effective(x))
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			if got := runs(settings); !reflect.DeepEqual(got, settings) {
				t.Errorf("runs with %v, the plan says %v", got, settings)
			}
			changed := maps.Clone(settings)
			maps.Copy(changed, c.alt)
			if got := runs(changed); !reflect.DeepEqual(got, changed) {
				t.Errorf("runs with %v, the plan says %v", got, changed)
			}
			for _, name := range defaulted {
				partial := maps.Clone(settings)
				delete(partial, name)
				_, err := c.builtin.New(partial)
				if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "make the plan again") {
					t.Errorf("without %s the executor opened (a default of its own) or said %v", name, err)
				}
			}
			// Validate, which validate and plan run, reads them alike.
			if err := c.builtin.Validate(settings); err != nil {
				t.Errorf("Validate refuses the plan's settings: %v", err)
			}
		})
	}
}

// TestSimEngineGetsThePlansSettings: the simulated engine a sim lane
// deploys is configured with the plan's timing, speedup, ttft, itl and
// max_waiting, not with values of the executor's own.
func TestSimEngineGetsThePlansSettings(t *testing.T) {
	reg := &plugins.Registry{Builtins: []plugins.Builtin{{Name: sim.Type, New: sim.New, Schema: sim.Schema, Validate: sim.Validate}}}
	settings := planLaneSettings(t, reg, sim.Type, `timing = "constant"
  speedup = 3
  ttft = "7ms"
  itl = "1500us"
  max_waiting = 11`)
	x, err := sim.New(settings)
	if err != nil {
		t.Fatal(err)
	}
	o := x.(*sim.Executor).Options(executor.Deployment{ModelID: "m", MaxContext: 4096, GPUType: "L40S"})
	if o.Timing != "constant" || o.Speedup != 3 || o.TTFT != 7*time.Millisecond || o.ITL != 1500*time.Microsecond || o.MaxWaiting != 11 {
		t.Fatalf("engine options %+v from the plan's %v", o, settings)
	}
	if settings["itl"] != "1.5ms" {
		t.Errorf("the plan writes itl as %v, want the canonical 1.5ms", settings["itl"])
	}
}

// TestOpenJournaledResolvesAnOldJournal: a deployments journal written
// before plan format 2 holds the block's attributes only; the reaper opens
// the executor from them with the schema's defaults applied, while the
// executor itself refuses incomplete settings.
func TestOpenJournaledResolvesAnOldJournal(t *testing.T) {
	reg := &plugins.Registry{Builtins: []plugins.Builtin{{Name: local.Type, New: local.New, Schema: local.Schema, Validate: local.Validate}}}
	old := map[string]any{"stop_timeout": "2s"}
	if _, err := reg.Open(t.Context(), local.Type, old); err == nil {
		t.Fatal("the executor opened from incomplete settings")
	}
	x, err := reg.OpenJournaled(t.Context(), local.Type, old)
	if err != nil {
		t.Fatal(err)
	}
	if s := x.(*local.Executor).Settings(); s.StopTimeout != 2*time.Second || s.Host != "127.0.0.1" {
		t.Fatalf("opened with %+v", s)
	}
}
