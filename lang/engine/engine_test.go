package engine

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang/setting"
)

// frozenJSON are the JSON names of the settings lane and deployment IDs
// hashed before the declaration existed, in their order.
var frozenJSON = []string{"runtime_engine", "runtime_version", "runtime_dtype", "runtime_args",
	"gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens"}

// TestFrozenSettingsFirst: Runtime's tags read (Fields panics on a
// malformed one), the frozen settings come first in their order, and
// every setting is an attribute of the runtime block that changes the
// deployment.
func TestFrozenSettingsFirst(t *testing.T) {
	fs := Fields()
	got := make([]string, min(frozen, len(fs)))
	for i := range got {
		got[i] = fs[i].JSON
	}
	if frozen != len(frozenJSON) || !slices.Equal(got, frozenJSON) {
		t.Fatalf("the first %d settings are %q, want %q", frozen, got, frozenJSON)
	}
	for _, f := range fs {
		if f.Name == "" || f.Role != setting.RoleDeployment {
			t.Errorf("%s: HCL name %q, role %q; a runtime setting is an attribute that changes the deployment", f.GoName, f.Name, f.Role)
		}
	}
}

// TestNewSettingsKeepIDs: a setting added after the frozen ones is left
// out of the JSON (and of the deployment key) when a spec does not set
// it, so no existing lane or deployment ID changes.
func TestNewSettingsKeepIDs(t *testing.T) {
	for _, f := range Fields()[frozen:] {
		if !f.OmitEmpty {
			t.Errorf("%s: its json tag needs omitempty, or every existing lane ID changes", f.JSON)
		}
		var r Runtime
		if got, want := f.Value(&r), f.DefaultValue(); f.Default != "" && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the zero Runtime has %v, the default is %v: the zero value must mean the default", f.JSON, got, want)
		}
		for _, b := range [][]byte{must(json.Marshal(r)), r.KeyJSON()} {
			if strings.Contains(string(b), `"`+f.JSON+`"`) {
				t.Errorf("%s: unset, it is in the JSON: %s", f.JSON, b)
			}
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestKeyJSONWritesFrozenZeros: the deployment key writes the frozen
// settings even at zero, as encoding/json writes them.
func TestKeyJSONWritesFrozenZeros(t *testing.T) {
	want := `{"runtime_engine":"","runtime_version":"","runtime_dtype":"","runtime_args":null,"gpu_memory_utilization":0,"max_num_seqs":0,"max_num_batched_tokens":0}`
	if got := string(Runtime{}.KeyJSON()); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	r := Runtime{RuntimeEngine: "vllm", RuntimeArgs: []string{"--x=<&>"}, GPUMemoryUtil: 0.85, MaxNumSeqs: 64}
	var m map[string]any
	if err := json.Unmarshal(r.KeyJSON(), &m); err != nil || m["max_num_seqs"] != 64.0 || m["runtime_args"].([]any)[0] != "--x=<&>" {
		t.Errorf("key %s: %v %v", r.KeyJSON(), m, err)
	}
}

// TestFlags: the flag settings a runtime sets become the engine's flags in
// declaration order, the unset ones are left to the engine, and a custom
// command's placeholders name each flag setting.
func TestFlags(t *testing.T) {
	r := Runtime{RuntimeEngine: "vllm", RuntimeDtype: "bfloat16", RuntimeArgs: []string{"--enforce-eager"}, GPUMemoryUtil: 0.9, MaxBatchedTokens: 4096}
	if got, want := strings.Join(r.Flags(), " "), "--dtype bfloat16 --gpu-memory-utilization 0.9 --max-num-batched-tokens 4096"; got != want {
		t.Errorf("flags %q, want %q", got, want)
	}
	if got := (Runtime{}).Flags(); len(got) != 0 {
		t.Errorf("an empty runtime passes %q", got)
	}
	p := r.Placeholders()
	if p["max_num_seqs"] != "0" || p["max_num_batched_tokens"] != "4096" || p["dtype"] != "bfloat16" || p["engine"] != "" {
		t.Errorf("placeholders %v", p)
	}
	if got, want := PlaceholderNames(), "{dtype}, {gpu_memory_utilization}, {max_num_seqs}, {max_num_batched_tokens}"; !strings.HasPrefix(got, want) {
		t.Errorf("placeholder names %q, want them to start with %q", got, want)
	}
	for _, f := range Fields() {
		if _, ok := p[f.Name]; ok != f.Flag {
			t.Errorf("%s: a placeholder %v, a flag %v", f.Name, ok, f.Flag)
		}
	}
}

// TestDefault: a lane without a runtime block runs with the declared
// defaults and an empty (not null) list of args.
func TestDefault(t *testing.T) {
	d := Default()
	if d.GPUMemoryUtil != 0.9 || d.RuntimeArgs == nil || len(d.RuntimeArgs) != 0 || d.MaxNumSeqs != 0 {
		t.Errorf("default %+v", d)
	}
}
