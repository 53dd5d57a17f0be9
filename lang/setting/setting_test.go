package setting

import (
	"reflect"
	"strings"
	"testing"
)

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
		{struct {
			X string `json:"x" hcl:"x" oneof:"a b" default:"c" role:"lane"`
		}{}, `default "c" is not one of`},
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
