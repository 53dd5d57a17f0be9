package shape

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang/setting"
)

// frozen are the JSON names of the settings that existed when lane IDs
// started to hash Settings, in their order. Their place and omitempty are
// part of every lane ID; a setting added since goes into Options.
var frozen = []string{
	"input_tokens", "output_tokens", "template_headroom", "concurrency", "request_rate", "arrival",
	"burstiness", "arrival_curve", "arrival_curve_step_seconds", "requests", "warmup", "warmup_seconds",
	"streaming", "api",
}

// TestDeclarationParses: every tag of Settings reads, the frozen settings
// come first in their order, and an attribute's HCL and JSON names agree.
func TestDeclarationParses(t *testing.T) {
	fs, err := setting.Parse(reflect.TypeFor[Settings]())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fs {
		names = append(names, f.JSON)
		if f.Name != "" && f.Name != f.JSON {
			t.Errorf("%s: HCL name %q, JSON name %q; one name for one setting", f.GoName, f.Name, f.JSON)
		}
	}
	if len(names) < len(frozen) || !slices.Equal(names[:len(frozen)], frozen) {
		t.Fatalf("settings in JSON order %q, want them to start with %q", names, frozen)
	}
}

// TestNewSettingsKeepLaneIDs: a setting added after the frozen ones is
// left out of the JSON when a spec does not set it (omitempty, with its
// default as the zero value or a nil pointer), so no existing lane ID
// changes. The golden plans of package planner check the frozen ones.
func TestNewSettingsKeepLaneIDs(t *testing.T) {
	for _, f := range Fields()[len(frozen):] {
		if !f.OmitEmpty {
			t.Errorf("%s: its json tag needs omitempty, or every existing lane ID changes", f.JSON)
		}
		var s Settings
		if got, want := f.Value(&s), f.DefaultValue(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the zero Settings has %v, the default is %v: make the field a pointer (nil: the default)", f.JSON, got, want)
		}
		// Spelling the default out keeps the zero value, so the lane ID.
		f.Set(&s, f.DefaultValue())
		b, _ := json.Marshal(s)
		if strings.Contains(string(b), `"`+f.JSON+`"`) {
			t.Errorf("%s: set to its default, it is in the JSON: %s", f.JSON, b)
		}
	}
}

// TestCanonical: the arrival settings only with an open loop.
func TestCanonical(t *testing.T) {
	closed := Settings{Arrival: "gamma", Burstiness: 2, ArrivalCurve: []float64{1}, ArrivalCurveStepSeconds: 1}.Canonical()
	if closed.Arrival != "" || closed.Burstiness != 0 || closed.ArrivalCurve != nil || closed.ArrivalCurveStepSeconds != 0 || closed.API != "chat" {
		t.Errorf("closed loop: %+v", closed)
	}
	open := Settings{RequestRate: 3, Burstiness: 2, API: "completions"}.Canonical()
	if open.Arrival != ArrivalPoisson || open.Burstiness != 0 || open.API != "completions" {
		t.Errorf("open loop: %+v", open)
	}
	gamma := Settings{RequestRate: 3, Arrival: ArrivalGamma, Burstiness: 2}.Canonical()
	if gamma.Burstiness != 2 {
		t.Errorf("gamma: %+v", gamma)
	}
}
