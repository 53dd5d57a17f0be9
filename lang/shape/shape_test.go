package shape

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
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
	fs, err := parseFields(reflect.TypeFor[Settings]())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fs {
		names = append(names, f.JSON)
		if f.Name != "" && f.Name != f.JSON {
			t.Errorf("%s: HCL name %q, JSON name %q; one name for one setting", f.GoName, f.Name, f.JSON)
		}
		if f.Choices != nil && f.Default != "" && !slices.Contains(f.Choices, f.Default) {
			t.Errorf("%s: default %q is not one of %q", f.Name, f.Default, f.Choices)
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
		if got, want := f.Value(&s), f.defaultValue(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the zero Settings has %v, the default is %v: make the field a pointer (nil: the default)", f.JSON, got, want)
		}
		// Spelling the default out keeps the zero value, so the lane ID.
		f.Set(&s, f.defaultValue())
		b, _ := json.Marshal(s)
		if strings.Contains(string(b), `"`+f.JSON+`"`) {
			t.Errorf("%s: set to its default, it is in the JSON: %s", f.JSON, b)
		}
	}
}

// TestTagErrors: a malformed declaration is refused, naming the field.
func TestTagErrors(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{struct {
			X int `json:"x" hcl:"x" role:"lane"`
		}{}, "a number needs a max"},
		{struct {
			X int `json:"x" hcl:"x" max:"lots" role:"lane"`
		}{}, `max "lots"`},
		{struct {
			X int `json:"x" hcl:"x,optional" max:"9" role:"lane"`
		}{}, `unknown hcl flag "optional"`},
		{struct {
			X int `json:"x" hcl:"x" max:"9" min:"<3" role:"lane"`
		}{}, `min "<3"`},
		{struct {
			X string `json:"x" hcl:"x" role:"sometimes"`
		}{}, `role "sometimes"`},
		{struct {
			X string `json:"x" role:"lane"`
		}{}, "no hcl tag"},
		{struct {
			X map[string]int `json:"x" hcl:"x" role:"lane"`
		}{}, "is not a setting's"},
	} {
		_, err := parseFields(reflect.TypeOf(tc.v))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "field X") {
			t.Errorf("%T: got %v, want an error naming field X with %q", tc.v, err, tc.want)
		}
	}
}

// TestBoundWording: bounds read as the spec language's messages say them.
func TestBoundWording(t *testing.T) {
	for tag, want := range map[string]string{
		">0":                 "greater than 0",
		">=0":                "0 or more",
		">=0.001 (whole ms)": "at least 0.001 (whole ms)",
		">2.5":               "greater than 2.5",
	} {
		b, err := parseBound(tag)
		if err != nil || b.String() != want {
			t.Errorf("%q: %q, %v; want %q", tag, b.String(), err, want)
		}
	}
	b, _ := parseBound(">0")
	if b.Allows(0) || !b.Allows(1e-9) {
		t.Error(">0 allows 0 or refuses 1e-9")
	}
	b, _ = parseBound(">=0.001")
	if b.Allows(0.0009) || !b.Allows(0.001) {
		t.Error(">=0.001 allows 0.0009 or refuses 0.001")
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
