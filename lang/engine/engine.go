// Package engine declares a runtime block's settings once: the Go struct
// Runtime, whose field tags (read by package setting) give each setting's
// HCL name, JSON name, bounds, default, choices, documentation and whether
// the engine takes it as a command-line flag. The spec language derives
// the runtime block's attributes and their checks from it (Fields); the
// planner's lane inputs and the executor's deployment embed it (so lane
// and deployment IDs hash it and every executor receives it); the
// executors that start vLLM derive its flags from it (Flags).
//
// The package imports only lang/setting of the module, so every floor may
// use it.
//
// Adding a setting: add a field to Runtime with its tags and a doc
// comment, then the code that uses it (the performance model, where it
// changes performance). Its JSON tag must have omitempty and its zero
// value must mean the engine's default, so a spec that does not set it
// keeps its lane and deployment IDs; TestNewSettingsKeepIDs checks that.
// With the flag flag, every executor that starts vLLM passes it as
// --NAME; a custom command reads it as the placeholder {NAME}.
package engine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/infercrane/infercrane/lang/setting"
)

// Runtime are a runtime block's settings as a lane holds them. Their JSON
// form is part of lane and deployment IDs, in this field order: a field's
// place, name and omitempty are frozen for the settings that existed when
// the declaration was written (the first frozen fields).
type Runtime struct {
	// RuntimeEngine names the serving engine ("vllm").
	RuntimeEngine string `json:"runtime_engine" hcl:"engine,required" role:"deployment" doc:"It names the serving engine, such as \"vllm\"."`
	// RuntimeVersion is the engine's version ("": whatever the executor
	// installs, a preflight warning).
	RuntimeVersion string `json:"runtime_version" hcl:"version" role:"deployment"`
	// RuntimeDtype is the weights' and activations' dtype ("": the
	// model's).
	RuntimeDtype string `json:"runtime_dtype,omitempty" hcl:"dtype,flag" oneof:"auto bfloat16 float16 float32 half float" role:"deployment"`
	// RuntimeArgs are extra command-line arguments of the engine, after
	// every flag InferCrane passes (vLLM takes the last one given).
	RuntimeArgs []string `json:"runtime_args" hcl:"args,sensitive" role:"deployment"`
	// GPUMemoryUtil is the fraction of GPU memory the engine may use.
	GPUMemoryUtil float64 `json:"gpu_memory_utilization" hcl:"gpu_memory_utilization,flag" min:">0" max:"1" default:"0.9" role:"deployment" doc:"It is the fraction of GPU memory the engine may use (vLLM's default is 0.9)."`
	// MaxNumSeqs caps the sequences of one batch (0: the engine's
	// default).
	MaxNumSeqs int `json:"max_num_seqs,omitempty" hcl:"max_num_seqs,flag" min:">0" max:"1000000" role:"deployment" doc:"Leave it out for the engine's default."`
	// MaxBatchedTokens is the token budget of one engine step (0: the
	// engine's default).
	MaxBatchedTokens int `json:"max_num_batched_tokens,omitempty" hcl:"max_num_batched_tokens,flag" min:">0" max:"100000000" role:"deployment" doc:"Leave it out for the engine's default."`
}

// frozen is the number of Runtime's leading settings that deployment IDs
// hash even when zero: the deployment key wrote them without omitempty
// before this declaration existed. A setting added after them is hashed
// as its JSON tag says (left out when unset), so it changes no existing
// deployment ID.
const frozen = 7

// Fields lists the declared settings in their Runtime order.
var Fields = setting.MustParse[Runtime]()

// Lookup returns the setting whose HCL name is name.
func Lookup(name string) (setting.Field, bool) { return setting.Lookup(Fields(), name) }

// Default is a lane's runtime when it names no runtime block: the
// declared defaults, and no args (an empty list, not null, in IDs).
func Default() Runtime { return Runtime{RuntimeArgs: []string{}}.WithDefaults() }

// WithDefaults returns r with each setting that has a declared default
// and is zero in r set to its default.
func (r Runtime) WithDefaults() Runtime {
	for _, f := range Fields() {
		if f.Default != "" && f.IsZero(&r) {
			f.Set(&r, f.DefaultValue())
		}
	}
	return r
}

// Flags are the engine's command-line flags for the flag settings r sets
// (a zero one is the engine's default and left out), in declaration
// order: "--max-num-seqs", "64", ...
func (r Runtime) Flags() []string {
	var out []string
	for _, f := range Fields() {
		if f.Flag && !f.IsZero(&r) {
			out = append(out, f.FlagName(), text(f.Value(&r)))
		}
	}
	return out
}

// Placeholders are the values of the flag settings by HCL name, as a
// custom server command's {NAME} placeholders take them (a zero one as
// "0" or "").
func (r Runtime) Placeholders() map[string]string {
	out := map[string]string{}
	for _, f := range Fields() {
		if f.Flag {
			out[f.Name] = text(f.Value(&r))
		}
	}
	return out
}

// PlaceholderNames lists the flag settings' placeholders: "{dtype}, ...".
func PlaceholderNames() string {
	var names []string
	for _, f := range Fields() {
		if f.Flag {
			names = append(names, "{"+f.Name+"}")
		}
	}
	return strings.Join(names, ", ")
}

// text writes a setting's value as a command line takes it.
func text(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int:
		return strconv.Itoa(x)
	case string:
		return x
	}
	panic(fmt.Sprintf("engine: a flag setting holds a %T", v))
}

// KeyJSON is r as deployment IDs hash it: a JSON object of the settings
// in declaration order, the frozen ones always (zero too) and the others
// as their JSON tags say.
func (r Runtime) KeyJSON() []byte {
	b := make([]byte, 0, 256)
	b = append(b, '{')
	names := keyNames()
	for i, f := range Fields() {
		if i >= frozen && f.OmitEmpty && f.IsZero(&r) {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, names[i]...)
		b = append(b, jsonOf(f.Value(&r))...)
	}
	return append(b, '}')
}

// keyNames are the settings' `"json_name":` as KeyJSON writes them,
// encoded once (a plan writes a key a lane).
var keyNames = sync.OnceValue(func() []string {
	var out []string
	for _, f := range Fields() {
		out = append(out, jsonOf(f.JSON)+":")
	}
	return out
})

// jsonOf encodes plain data; a failure is a programming error.
func jsonOf(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		panic("engine: " + err.Error())
	}
	return string(out)
}
