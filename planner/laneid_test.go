package planner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/infercrane/infercrane/lang/shape"
)

// goldenLane is a lane of a golden plan: its IDs and inputs.
type goldenLane struct {
	ID         string     `json:"id"`
	Deployment string     `json:"deployment"`
	Inputs     LaneInputs `json:"inputs"`
}

// goldenPlanLanes reads the lanes of every golden plan, by plan file.
func goldenPlanLanes(t *testing.T) map[string][]goldenLane {
	t.Helper()
	files, err := filepath.Glob("testdata/golden/*/plan.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden plans: %v", err)
	}
	out := map[string][]goldenLane{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Lanes []goldenLane `json:"lanes"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[f] = p.Lanes
	}
	return out
}

// goldenLanes reads the inputs of every golden lane, by lane ID.
func goldenLanes(t *testing.T) map[string]LaneInputs {
	t.Helper()
	out := map[string]LaneInputs{}
	for _, lanes := range goldenPlanLanes(t) {
		for _, l := range lanes {
			out[l.ID] = l.Inputs
		}
	}
	return out
}

// TestGoldenLaneIDsRoundTrip: the inputs of every golden lane, read into
// LaneInputs (the shape settings embedded from package shape) and hashed
// again, give the lane's ID: the declaration writes the JSON it was
// written with, in the same order with the same omissions.
func TestGoldenLaneIDsRoundTrip(t *testing.T) {
	lanes := goldenLanes(t)
	for id, in := range lanes {
		if got := LaneID(in); got != id {
			b, _ := json.Marshal(in)
			t.Errorf("lane %s hashes to %s now: %s", id, got, b)
		}
	}
	if len(lanes) < 5 {
		t.Fatalf("only %d golden lanes", len(lanes))
	}
}

// TestNewZeroSettingKeepsGoldenLaneIDs is the hash's trap: lane IDs hash
// json.Marshal(LaneInputs), so a field added without omitempty reruns
// every lane. A new setting's field (LaneInputs with one more field, built
// with reflect) left at its zero value keeps every golden lane ID with
// omitempty and changes them all without; the declared settings added
// since the IDs froze (shape.Options) keep them when a spec leaves them
// out (see shape's TestNewSettingsKeepLaneIDs for their tags).
func TestNewZeroSettingKeepsGoldenLaneIDs(t *testing.T) {
	lanes := goldenLanes(t)
	grown := func(tag string) reflect.Type {
		return reflect.StructOf([]reflect.StructField{
			{Name: "LaneInputs", Type: reflect.TypeFor[LaneInputs](), Anonymous: true},
			{Name: "IgnoreEOS", Type: reflect.TypeFor[bool](), Tag: reflect.StructTag(`json:"` + tag + `"`)},
		})
	}
	withOmit, without := grown("ignore_eos,omitempty"), grown("ignore_eos")
	for id, in := range lanes {
		v := reflect.New(withOmit).Elem()
		v.Field(0).Set(reflect.ValueOf(in))
		if got := shortHash(v.Interface()); got != id {
			t.Errorf("lane %s: a zero omitempty field changed its ID to %s", id, got)
		}
		w := reflect.New(without).Elem()
		w.Field(0).Set(reflect.ValueOf(in))
		if got := shortHash(w.Interface()); got == id {
			t.Errorf("lane %s: a zero field without omitempty kept its ID; the check cannot see the trap", id)
		}
		// The declared settings, each set to its default as a spec that
		// spells it out would, keep the ID too.
		for _, f := range shape.Fields() {
			if f.OmitEmpty && f.Default != "" {
				x := in
				f.Set(&x.Settings, f.Value(&x.Settings))
				if got := LaneID(x); got != id {
					t.Errorf("lane %s: %s spelt out as its default changed the ID to %s", id, f.JSON, got)
				}
			}
		}
	}
}

// TestIgnoreEOSLaneID: a shape that leaves ignore_eos out and one that
// spells out its default (true) make the same lane; false makes another.
func TestIgnoreEOSLaneID(t *testing.T) {
	const spec = `
model "m" {
  id = "Qwen/Qwen3-0.6B"
}
gpu "g" {
  type = "L40S"
}
shape "s" {
  input_tokens  = 128
  output_tokens = 16
  concurrency   = 2
  requests      = 4
  %s
}
screen "x" {
  models = [model.m]
  shapes = [shape.s]
  gpus   = [gpu.g]
}`
	ids := map[string]string{}
	for _, attr := range []string{"", "ignore_eos = true", "ignore_eos = false"} {
		for _, id := range planHCL(t, fmt.Sprintf(spec, attr)) {
			ids[attr] = id
		}
	}
	if ids[""] == "" || ids[""] != ids["ignore_eos = true"] {
		t.Errorf("ignore_eos = true changed the lane ID: %v", ids)
	}
	if ids["ignore_eos = false"] == ids[""] {
		t.Errorf("ignore_eos = false kept the lane ID: %v", ids)
	}
}
