package executor

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func settingsSchema() Schema {
	return Schema{Attributes: []Attribute{
		{Name: "url", Type: AttrString, Required: true},
		{Name: "mode", Type: AttrString, Enum: []string{"a", "b"}, Default: "a"},
		{Name: "n", Type: AttrNumber, Whole: true, Min: Bound(0), Default: 3.0},
		{Name: "timeout", Type: AttrDuration, Min: Seconds(time.Minute), Max: Seconds(24 * time.Hour), Default: "30m"},
		{Name: "health", Type: AttrDuration, Default: "20m", DefaultCap: &DefaultCap{Attr: "timeout", Share: 2.0 / 3}},
		{Name: "port", Type: AttrNumber, Whole: true},
	}}
}

type testSettings struct {
	URL     string        `json:"url"`
	Mode    string        `json:"mode"`
	N       int           `json:"n"`
	Timeout time.Duration `json:"timeout"`
	Health  time.Duration `json:"health"`
	Port    int           `json:"port"`
}

// TestResolve: defaults fill what a block leaves out, durations take one
// canonical form, a cap lowers a default to a share of another setting
// (never from a value Check rejects), and what the block sets is kept.
func TestResolve(t *testing.T) {
	s := settingsSchema()
	for _, c := range []struct {
		given, want Attrs
	}{
		{Attrs{"url": "x"}, Attrs{"url": "x", "mode": "a", "n": 3.0, "timeout": "30m", "health": "20m"}},
		{Attrs{"url": "x", "timeout": "15m"}, Attrs{"url": "x", "mode": "a", "n": 3.0, "timeout": "15m", "health": "10m"}},
		{Attrs{"url": "x", "timeout": "1h0m0s", "health": "90s"}, Attrs{"url": "x", "mode": "a", "n": 3.0, "timeout": "1h", "health": "1m30s"}},
		{Attrs{"url": "x", "timeout": "1000ms"}, Attrs{"url": "x", "mode": "a", "n": 3.0, "timeout": "1s", "health": "20m"}},
		{Attrs{"url": "x", "timeout": "soon", "port": 80.0}, Attrs{"url": "x", "mode": "a", "n": 3.0, "timeout": "soon", "health": "20m", "port": 80.0}},
	} {
		if got := s.Resolve(c.given); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Resolve(%v) = %v, want %v", c.given, got, c.want)
		}
		// Resolving resolved settings changes nothing.
		if twice := s.Resolve(s.Resolve(c.given)); !reflect.DeepEqual(twice, s.Resolve(c.given)) {
			t.Errorf("Resolve is not idempotent on %v: %v", c.given, twice)
		}
	}
}

// TestDecodeSettings: resolved settings decode into the typed struct; an
// unknown setting, a bad value and a missing defaulted setting are errors
// naming the attribute, and a struct that does not match the schema is
// refused.
func TestDecodeSettings(t *testing.T) {
	s := settingsSchema()
	var got testSettings
	if err := DecodeSettings("t", s, s.Resolve(Attrs{"url": "x", "port": 8.0}), &got); err != nil {
		t.Fatal(err)
	}
	want := testSettings{URL: "x", Mode: "a", N: 3, Timeout: 30 * time.Minute, Health: 20 * time.Minute, Port: 8}
	if got != want {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
	back, err := EncodeSettings(s, got)
	if err != nil || !reflect.DeepEqual(back, map[string]any(s.Resolve(Attrs{"url": "x", "port": 8.0}))) {
		t.Fatalf("encoded back %v, %v", back, err)
	}
	full := s.Resolve(Attrs{"url": "x"})
	for _, c := range []struct {
		settings Attrs
		want     string
	}{
		{Attrs{"url": "x", "mode": "a", "n": 3.0, "timeout": "30m"}, `attribute "health": executor type "t" got no value`},
		{merge(full, Attrs{"extra": 1.0}), `no attribute "extra"`},
		{merge(full, Attrs{"timeout": "48h"}), `"48h" is out of range`},
		{merge(full, Attrs{"n": 1.5}), "whole number"},
	} {
		var x testSettings
		err := DecodeSettings("t", s, c.settings, &x)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.settings, err, c.want)
		}
	}
	var wrong struct {
		URL     string `json:"url"`
		Timeout string `json:"timeout"`
		Other   int    `json:"other"`
	}
	err = DecodeSettings("t", s, full, &wrong)
	for _, w := range []string{"field for duration timeout is not a time.Duration", "field other is no attribute", "no field for attribute mode"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("a mismatched struct: got %v, want %q", err, w)
		}
	}
}

func merge(a, b Attrs) Attrs {
	out := Attrs{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestDefaultText: listings show a default and its cap.
func TestDefaultText(t *testing.T) {
	s := settingsSchema()
	if got := s.Attributes[4].DefaultText(); got != `default "20m", at most 2/3 of timeout` {
		t.Errorf("DefaultText = %q", got)
	}
	if got := s.Attributes[5].DefaultText(); got != "" {
		t.Errorf("no default shows %q", got)
	}
}
