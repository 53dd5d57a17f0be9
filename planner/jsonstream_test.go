package planner

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/infercrane/infercrane/lang"
)

// The streamed JSON is byte for byte what encode gives: for every golden
// spec's plan, a generated plan, and values exercising each rule
// (omitempty, nil pointers and slices, Marshalers, embedded structs, tag
// options, maps, HTML characters).
func TestJSONStreamIsTheCanonicalJSON(t *testing.T) {
	var values []any
	dirs, _ := filepath.Glob("testdata/golden/*/spec")
	if len(dirs) == 0 {
		t.Fatal("no golden specs under testdata/golden")
	}
	for _, dir := range dirs {
		cfg, diags := lang.Load(dir, lang.Options{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		p, _ := Build(cfg, nil, Options{Version: "golden"})
		values = append(values, p)
	}
	p, _ := Build(genConfig(7, 3, 2), nil, Options{})
	values = append(values, p)
	type inner struct {
		A string `json:"a,omitempty"`
	}
	type embeds struct {
		inner
		B int `json:"b"`
	}
	type all struct {
		S       string            `json:"s,omitempty"`
		N       *int              `json:"n"`
		Nil     []int             `json:"nil"`
		Empty   []int             `json:"empty"`
		Omitted []int             `json:"omitted,omitempty"`
		Ptrs    []*inner          `json:"ptrs"`
		Time    time.Time         `json:"time"`
		Raw     json.RawMessage   `json:"raw"`
		Map     map[string]any    `json:"map"`
		E       embeds            `json:"e"`
		Str     int               `json:"str,string"`
		Any     any               `json:"any"`
		HTML    string            `json:"<html>&"`
		Skip    string            `json:"-"`
		private string            //nolint:unused
		Bytes   []byte            `json:"bytes"`
		Arr     [2]inner          `json:"arr"`
		MapS    map[string]string `json:",omitempty"`
	}
	one := 1
	values = append(values, all{}, &all{S: "x<y>&", N: &one, Empty: []int{}, Ptrs: []*inner{nil, {A: "a"}},
		Time: time.Date(2026, 12, 2, 3, 4, 5, 6, time.UTC), Raw: json.RawMessage(`{"k": 1}`), Map: map[string]any{"b": 1, "a": []int{2}},
		E: embeds{inner{"i"}, 2}, Str: 5, Any: inner{"z"}, HTML: "<>&", Bytes: []byte("hi"), MapS: map[string]string{"k": "v"}},
		[]any{nil, 1.5, "s"}, nil)
	for i, v := range values {
		want, err := encode(v)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := newJSONStream(&got).encode(v); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("value %d: streamed JSON differs:\n%s\n%s", i, got.Bytes(), want)
		}
	}
}

// Marshal encodes a plan once for its digest and its output: the result is
// the indented canonical JSON of the plan with the digest set, as encoding
// it again with the field would give (the golden plans and a generated one,
// whose variables hold strings that look like JSON).
func TestMarshalIsTheIndentedCanonicalJSONWithItsDigest(t *testing.T) {
	var plans []*Plan
	dirs, _ := filepath.Glob("testdata/golden/*/spec")
	if len(dirs) == 0 {
		t.Fatal("no golden specs under testdata/golden")
	}
	for _, dir := range dirs {
		cfg, diags := lang.Load(dir, lang.Options{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		p, _ := Build(cfg, nil, Options{Version: "golden"})
		plans = append(plans, p)
	}
	p, _ := Build(genConfig(7, 3, 2), nil, Options{Version: `1","variables":{"x":1}`})
	p.Variables = map[string]any{"v": `,"variables":{}`, "w": `a\"{[,:]}\\`, "e": map[string]any{}, "l": []any{}, "n": []any{[]any{}, map[string]any{"k": nil}}}
	p.PlanDigest = "sha256:stale"
	plans = append(plans, p)
	q, _ := Build(genConfig(1, 1, 1), nil, Options{})
	q.Variables = nil // encoded as null
	// An output of several chunks:
	big, _ := Build(genConfig(40, 10, 2), nil, Options{})
	plans = append(plans, q, big)
	for _, p := range plans {
		d, err := Digest(p)
		if err != nil {
			t.Fatal(err)
		}
		c := *p
		c.PlanDigest = d
		compact, err := encode(&c)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact, "", "  "); err != nil {
			t.Fatal(err)
		}
		want.WriteByte('\n')
		got, err := Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("Marshal differs from the indented JSON with the digest set (%d vs %d bytes)", len(got), len(want.Bytes()))
		}
		if back, err := Unmarshal(got); err != nil || back.PlanDigest != d {
			t.Errorf("Unmarshal: %v", err)
		}
	}
}

// The indenting writer gives json.Indent's bytes however the compact JSON
// is split into writes, and digests exactly what it is given.
func TestIndentWriterIsJSONIndent(t *testing.T) {
	p, _ := Build(genConfig(2, 2, 2), nil, Options{})
	plan, err := encode(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, compact := range [][]byte{plan,
		[]byte(`{}`), []byte(`[]`), []byte(`"x"`), []byte(`1.5e-7`), []byte(`null`),
		[]byte(`{"a":[],"b":{},"c":[{}],"d":[[],[1,{"e":"}\\\"]{,:"}]],"f\u003c":"\\","g":true}`),
	} {
		var want bytes.Buffer
		if err := json.Indent(&want, compact, "", "  "); err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{1, 2, 3, 7, 64, len(compact)} {
			w := &indentWriter{h: sha256.New(), hashing: true}
			for b := compact; len(b) > 0; {
				n := min(size, len(b))
				w.Write(b[:n])
				b = b[n:]
			}
			if got := w.bytes(); !bytes.Equal(got, want.Bytes()) {
				t.Errorf("written %d bytes at a time: differs from json.Indent:\n%s\n%s", size, got, want.Bytes())
			}
			if sum := sha256.Sum256(compact); !bytes.Equal(w.h.Sum(nil), sum[:]) {
				t.Errorf("written %d bytes at a time: the digest is not the input's", size)
			}
		}
	}
}
