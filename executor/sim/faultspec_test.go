package sim

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/lang/engine"
)

func TestParseFailAt(t *testing.T) {
	got, err := ParseFailAt(" 3=429, 7=500,1=503")
	if err != nil || !reflect.DeepEqual(got, map[int]int{1: 503, 3: 429, 7: 500}) {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"3", "0=429", "x=429", "3=404", "3=429,3=500", "3=abc"} {
		if _, err := ParseFailAt(bad); err == nil {
			t.Errorf("ParseFailAt(%q) accepted", bad)
		}
	}
}

func TestParseStall(t *testing.T) {
	a, d, err := ParseStall("10:500ms")
	if err != nil || a != 10 || d != 500*time.Millisecond {
		t.Fatalf("got %d %v %v", a, d, err)
	}
	for _, bad := range []string{"10", "x:1s", "-1:1s", "3:0s", "3:abc"} {
		if _, _, err := ParseStall(bad); err == nil {
			t.Errorf("ParseStall(%q) accepted", bad)
		}
	}
}

// FuzzParseFaults checks that the fault parsers never panic and that what
// they accept satisfies the engine's validation.
func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{"3=429,7=500", "", "1=503", "10:500ms", "0:1ns", "=,=", "9999999999999999999=429"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := ParseFailAt(s); err == nil {
			if _, err := (Options{Faults: Faults{FailAt: m}}).withDefaults(); err != nil {
				t.Fatalf("ParseFailAt(%q) = %v, which the engine rejects: %v", s, m, err)
			}
		}
		if a, d, err := ParseStall(s); err == nil {
			if a < 0 || (strings.TrimSpace(s) != "" && d <= 0) {
				t.Fatalf("ParseStall(%q) = %d, %v", s, a, d)
			}
		}
	})
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{
		{Timing: "fast"},
		{MaxModelLen: 1},
		{TTFT: -1},
		{Speedup: -1},
		{Runtime: engine.Runtime{GPUMemoryUtil: 1.5}},
		{Faults: Faults{FailRate: 2}},
		{Faults: Faults{FailStatus: 404}},
		{Faults: Faults{FailAt: map[int]int{0: 429}}},
		{Timing: TimingModel, ModelID: "Qwen/Qwen3-0.6B", GPU: "L40S", MaxModelLen: 100_000},
		{Timing: TimingModel, ModelID: "Qwen/Qwen3-8B", GPU: "T4"},
	} {
		if e, err := NewEngine(o); err == nil {
			e.Close()
			t.Errorf("NewEngine(%+v) accepted", o)
		}
	}
}
