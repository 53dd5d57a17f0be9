package evidence

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestCanonicalizeRFC8785Example is the example of RFC 8785 section 3.2.2.
func TestCanonicalizeRFC8785Example(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	got, err := Canonicalize([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestCanonicalizeSortsByUTF16 is the sorting example of RFC 8785 section
// 3.2.3: the emoji (a surrogate pair, 0xD83D) sorts before U+FB33 although
// its code point is larger.
func TestCanonicalizeSortsByUTF16(t *testing.T) {
	in := `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`
	got, err := Canonicalize([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, part := range strings.Split(string(got), `",`) {
		_, v, _ := strings.Cut(part, `":"`)
		order = append(order, strings.TrimSuffix(v, `"}`))
	}
	want := []string{"Carriage Return", "One", "Control", "Latin Small Letter O With Diaeresis", "Euro Sign", "Emoji: Grinning Face", "Hebrew Letter Dalet With Dagesh"}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Fatalf("order %q, want %q", order, want)
	}
}

// TestFormatNumberRFC8785 checks the IEEE 754 samples of RFC 8785 appendix B.
func TestFormatNumberRFC8785(t *testing.T) {
	cases := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, c := range cases {
		got, err := FormatNumber(math.Float64frombits(c.bits))
		if err != nil {
			t.Errorf("%#x: %v", c.bits, err)
			continue
		}
		if got != c.want {
			t.Errorf("%#x: got %s, want %s", c.bits, got, c.want)
		}
	}
	for _, bits := range []uint64{0x7fffffffffffffff, 0x7ff0000000000000} {
		if s, err := FormatNumber(math.Float64frombits(bits)); err == nil {
			t.Errorf("%#x: got %s, want an error (NaN/Infinity)", bits, s)
		}
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	for name, in := range map[string]string{
		"duplicate": `{"a":1,"a":2}`,
		"trailing":  `{"a":1} {}`,
		"overflow":  `[1e400]`,
		"truncated": `{"a":`,
		"empty":     ``,
	} {
		if out, err := Canonicalize([]byte(in)); err == nil {
			t.Errorf("%s: accepted %q as %s", name, in, out)
		}
	}
}

func TestDigestIgnoresDigestMemberAndOrder(t *testing.T) {
	a, err := Digest([]byte(`{"b":[1,2.50],"a":"x","digest":"sha256:old"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Digest(map[string]any{"a": "x", "b": []float64{1, 2.5}})
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("digests differ: %s vs %s", a, b)
	}
	c, _ := Digest([]byte(`{"a":"y","b":[1,2.5]}`))
	if c == a {
		t.Fatal("a changed value kept the digest")
	}
	if !strings.HasPrefix(a, DigestPrefix) || len(a) != len(DigestPrefix)+64 {
		t.Fatalf("digest %q is not sha256:<64 hex>", a)
	}
	if _, err := Digest([]byte(`[1]`)); err == nil {
		t.Fatal("a non-object got a digest")
	}
}

// FuzzCanonicalize checks that canonical output is valid JSON, a fixed
// point, and means the same as the input.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,null,"x"]}`, `[1e30,4.50,-0,0.000001]`, `"\u20ac\u000f"`, `{"\ud83d\ude00":1,"\ufb33":2}`, `1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Canonicalize(data)
		if err != nil {
			return
		}
		again, err := Canonicalize(out)
		if err != nil {
			t.Fatalf("canonical output %q does not parse: %v", out, err)
		}
		if string(again) != string(out) {
			t.Fatalf("not a fixed point: %q -> %q", out, again)
		}
		var x, y any
		if json.Unmarshal(data, &x) != nil {
			return // Go's parser is stricter about some inputs the tokenizer accepts
		}
		if err := json.Unmarshal(out, &y); err != nil {
			t.Fatalf("canonical output %q is not JSON: %v", out, err)
		}
		if !reflect.DeepEqual(x, y) { // -0 == 0 under DeepEqual, as in JSON
			t.Fatalf("meaning changed: %q -> %q", data, out)
		}
	})
}
