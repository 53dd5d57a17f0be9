package workload

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// publicPriorDigest is the digest InferCrane computed for the public
// Chutes prior (3 row groups x 50,000 rows of the 91 GB trace).
const publicPriorDigest = "sha256:fc88149b14f24e73c49b841df7e32db2be2a2e3e10c7cfbd834b1617310d5c7e"

func readPrior(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/public-prior.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPublicPriorRoundTripsByteForByte(t *testing.T) {
	data := readPrior(t)
	doc, digest, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if digest != publicPriorDigest || doc.Digest != publicPriorDigest {
		t.Fatalf("digest %s (document says %s), want %s", digest, doc.Digest, publicPriorDigest)
	}
	out, err := Encode(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, data) {
		t.Fatalf("re-encoded document differs from the file:\n%s", out)
	}
	// The prior's long-prefill shape is what DeriveShapes gives at 8192.
	shapes := DeriveShapes(doc.Distributions.InputTokens.Percentiles, doc.Distributions.OutputTokens.Percentiles, 8192)
	if !slices.Equal(shapes, doc.Profiles) {
		t.Fatalf("derived shapes %+v, want the prior's %+v", shapes, doc.Profiles)
	}
}

func TestSelectRowGroupsPublicRule(t *testing.T) {
	for _, tc := range []struct {
		total, k int
		want     []int
	}{
		{6114, 3, []int{611, 3056, 5502}},
		{6114, 1, []int{3057}},
		{12, 3, []int{1, 6, 10}},
		{3, 9, []int{0, 1, 2}},
		{1, 3, []int{0}},
	} {
		got, err := SelectRowGroups(tc.total, tc.k)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SelectRowGroups(%d, %d) = %v, %v; want %v", tc.total, tc.k, got, err, tc.want)
		}
	}
	if _, err := SelectRowGroups(0, 3); err == nil {
		t.Error("no row groups accepted")
	}
	if got, err := ParseIndices("5, 2,5", 6); err != nil || !slices.Equal(got, []int{2, 5}) {
		t.Errorf("ParseIndices = %v, %v", got, err)
	}
	if _, err := ParseIndices("1,x", 6); err == nil {
		t.Error("ParseIndices accepted x")
	}
}

func TestDeriveShapesClipAndRound(t *testing.T) {
	in := Percentiles{P50: 100.5, P95: 9000}
	out := Percentiles{P50: 2.5, P95: 7000}
	s := DeriveShapes(in, out, 4096)
	// 100.5 and 2.5 round half to even: 100 and 2.
	if s[0].InputTokens != 100 || s[0].OutputTokens != 2 || s[0].Clipped || s[0].Requests != 32 || s[0].Concurrency != 8 {
		t.Errorf("interactive %+v", s[0])
	}
	// 9000 + 2 > 4096: out stays 2, in = 4094.
	if s[1].InputTokens != 4094 || s[1].OutputTokens != 2 || !s[1].Clipped {
		t.Errorf("long prefill %+v", s[1])
	}
	// 100 + 7000 > 4096: out = min(7000, 2048), in = 2048.
	if s[2].InputTokens != 2048 || s[2].OutputTokens != 2048 || !s[2].Clipped {
		t.Errorf("decode heavy %+v", s[2])
	}
	if ShapeKey("public-decode-heavy") != "decode_heavy" || ShapeKey("my-shape") != "my_shape" {
		t.Error("ShapeKey")
	}
}

func TestNearestRank(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for q, want := range map[float64]float64{0.5: 5, 0.9: 9, 0.95: 10, 0.99: 10, 0: 1} {
		if got := NearestRank(s, q); got != want {
			t.Errorf("NearestRank(q=%v) = %v, want %v", q, got, want)
		}
	}
}

// mutate decodes the prior into a generic map, applies f and re-encodes.
func mutate(t *testing.T, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readPrior(t), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "digest")
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestValidateRejects(t *testing.T) {
	dist := func(m map[string]any, name string) map[string]any {
		return m["distributions"].(map[string]any)[name].(map[string]any)
	}
	shape := func(m map[string]any, i int) map[string]any { return m["profiles"].([]any)[i].(map[string]any) }
	for _, tc := range []struct {
		name, want string
		f          func(m map[string]any)
		raw        []byte
	}{
		{name: "unknown field", want: `unknown field "extra"`, f: func(m map[string]any) { m["extra"] = 1 }},
		{name: "unknown nested field", want: `unknown field "p75"`, f: func(m map[string]any) {
			dist(m, "ttft_ms")["percentiles"].(map[string]any)["p75"] = 1.0
		}},
		{name: "trailing data", want: "trailing data", raw: append(readPrior(t), []byte(`{}`)...)},
		{name: "wrong schema", want: "schema_version", f: func(m map[string]any) { m["schema_version"] = "v2" }},
		{name: "bad time", want: "generated_at", f: func(m map[string]any) { m["generated_at"] = "yesterday" }},
		{name: "negative percentile", want: "input_tokens.percentiles.p50: must be a finite, non-negative", f: func(m map[string]any) {
			dist(m, "input_tokens")["percentiles"].(map[string]any)["p50"] = -1.0
		}},
		{name: "non-monotonic", want: "output_tokens.percentiles.p99", f: func(m map[string]any) {
			dist(m, "output_tokens")["percentiles"].(map[string]any)["p99"] = 1.0
		}},
		{name: "fraction above 1", want: "distributions.cache_hit_fraction.percentiles.p99: 5 is above 1: a fraction is between 0 and 1", f: func(m map[string]any) {
			dist(m, "cache_hit_fraction")["percentiles"].(map[string]any)["p99"] = 5.0
		}},
		{name: "fraction quantile above 1", want: "distributions.cache_hit_fraction.quantiles[0].v: 1.5 is above 1", f: func(m map[string]any) {
			dist(m, "cache_hit_fraction")["quantiles"] = []any{map[string]any{"q": 0.999, "v": 1.5}}
		}},
		{name: "no samples", want: "cached_tokens.samples", f: func(m map[string]any) { dist(m, "cached_tokens")["samples"] = 0 }},
		{name: "requests below concurrency", want: "profiles[0].requests", f: func(m map[string]any) { shape(m, 0)["requests"] = 4 }},
		{name: "zero concurrency", want: "profiles[1].concurrency", f: func(m map[string]any) { shape(m, 1)["concurrency"] = 0 }},
		{name: "duplicate name", want: "repeats profiles[0].name", f: func(m map[string]any) { shape(m, 2)["name"] = "PUBLIC-Interactive" }},
		{name: "bad arrival", want: "not one of constant, poisson, gamma", f: func(m map[string]any) {
			shape(m, 0)["arrival_pattern"] = "bursty"
			shape(m, 0)["request_rate"] = 2.0
		}},
		{name: "arrival without rate", want: "go together", f: func(m map[string]any) { shape(m, 0)["arrival_pattern"] = "poisson" }},
		{name: "rate without arrival", want: "go together", f: func(m map[string]any) { shape(m, 0)["request_rate"] = 3.0 }},
		{name: "bad url", want: "source.url", f: func(m map[string]any) { m["source"].(map[string]any)["url"] = "ftp://x/y" }},
		{name: "row group out of range", want: "sampling.row_groups[2]", f: func(m map[string]any) {
			m["sampling"].(map[string]any)["row_groups"] = []int{1, 2, 7000}
		}},
		{name: "tampered", want: "hashes to", f: func(m map[string]any) {
			m["digest"] = publicPriorDigest
			m["methodology_boundary"] = "Anything goes."
		}},
		{name: "malformed digest", want: "64 lowercase hex", f: func(m map[string]any) { m["digest"] = "sha256:abc" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.raw
			if data == nil {
				data = mutate(t, tc.f)
			}
			_, _, err := Parse(data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Open-loop shapes with both fields are valid.
	ok := mutate(t, func(m map[string]any) {
		shape(m, 0)["arrival_pattern"] = "gamma"
		shape(m, 0)["request_rate"] = 2.5
	})
	if _, _, err := Parse(ok); err != nil {
		t.Fatalf("open-loop shape rejected: %v", err)
	}
}

func TestSketchBound(t *testing.T) {
	s := NewSketch(SketchRelativeError)
	e := &exactSink{}
	x := 0.37
	for i := range 200_000 {
		x = math.Mod(x*1103515245+12345, 1e6) // spread over six decades
		v := x / float64(1+i%1000)
		if i%97 == 0 {
			v = 0
		}
		s.Add(v)
		e.Add(v)
	}
	// Merging halves gives the same answer as one sketch.
	a, b := NewSketch(SketchRelativeError), NewSketch(SketchRelativeError)
	for i, v := range e.values {
		if i%2 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
	}
	a.Merge(b)
	want := e.Percentiles()
	got, merged := s.Percentiles(), a.Percentiles()
	if got != merged {
		t.Fatalf("merged sketch %+v differs from single sketch %+v", merged, got)
	}
	for i, pair := range [][2]float64{{got.P50, want.P50}, {got.P90, want.P90}, {got.P95, want.P95}, {got.P99, want.P99}} {
		if math.Abs(pair[0]-pair[1]) > SketchRelativeError*pair[1] {
			t.Errorf("q%v: sketch %v exact %v: outside %v relative error", Quantiles[i], pair[0], pair[1], SketchRelativeError)
		}
	}
	if s.Count() != 200_000 {
		t.Fatalf("count %d", s.Count())
	}
}

// FuzzParse checks the validator never panics and that every accepted
// document re-encodes to a document that is accepted with the same digest.
func FuzzParse(f *testing.F) {
	f.Add(readPrior(f))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"schema_version":"infercrane.public-workload-profile/v1"} []`))
	f.Add(bytes.Replace(readPrior(f), []byte(`"p99": 1`), []byte(`"p99": 1e400`), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, digest, err := Parse(data)
		if err != nil {
			return
		}
		out, err := Encode(doc)
		if err != nil {
			t.Fatalf("accepted document does not encode: %v", err)
		}
		doc2, digest2, err := Parse(out)
		if err != nil {
			t.Fatalf("re-encoded document rejected: %v", err)
		}
		if digest2 != digest {
			t.Fatalf("digest changed on re-encoding: %s -> %s", digest, digest2)
		}
		if Validate(doc2) != nil {
			t.Fatal("Validate disagrees with Parse")
		}
	})
}
