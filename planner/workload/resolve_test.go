package workload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
)

func TestMissingColumnSaysWhatIsNeeded(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "started_at", Type: arrow.FixedWidthTypes.Timestamp_us}, {Name: "it", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.TimestampBuilder).Append(1)
	b.Field(1).(*array.Int64Builder).Append(10)
	rec := b.NewRecordBatch()
	path := filepath.Join(t.TempDir(), "thin.parquet")
	f, _ := os.Create(path)
	w, err := pqarrow.NewFileWriter(schema, f, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	_, err = Build(context.Background(), Options{Source: path})
	if err == nil || !strings.Contains(err.Error(), "has no column completed_at, ot, ct, ttft") {
		t.Fatalf("error %v", err)
	}
}

func TestProfileCachedReusesUntilTheTraceChanges(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(synthTrace(t, smallTrace))
	if err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "trace.parquet")
	if err := os.WriteFile(trace, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tr := &lang.Trace{Name: "t", Source: "trace.parquet", MaxContext: 4096, Sample: &lang.TraceSample{RowGroups: 2, RowsPerGroup: 300}}
	first, err := ProfileCached(context.Background(), tr, dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, ".infercrane", "profiles", "*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	// Poison the cached copy's boundary (re-sealed): a cache hit returns it.
	cached, _, _ := Parse(mustRead(t, files[0]))
	cached.MethodologyBoundary = "from the cache"
	cached, _ = Seal(cached)
	enc, _ := Encode(cached)
	os.WriteFile(files[0], enc, 0o644)
	again, err := ProfileCached(context.Background(), tr, dir, ReadOptions{})
	if err != nil || again.MethodologyBoundary != "from the cache" {
		t.Fatalf("cache not used: %v %q", err, again.MethodologyBoundary)
	}
	// A changed trace (new mtime) is profiled again.
	later := time.Now().Add(time.Hour)
	os.Chtimes(trace, later, later)
	fresh, err := ProfileCached(context.Background(), tr, dir, ReadOptions{})
	if err != nil || fresh.MethodologyBoundary != DefaultMethodologyBoundary || !reflect.DeepEqual(fresh.Distributions, first.Distributions) {
		t.Fatalf("changed trace not re-profiled: %v", err)
	}
	if first.Sampling.RowsInspected != 600 || !first.Profiles[2].Clipped {
		t.Errorf("sample options not applied: %+v %+v", first.Sampling, first.Profiles[2])
	}
}

func TestResolvePinnedDigestMismatchAtDigestAttribute(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "main.hcl")
	os.MkdirAll(filepath.Join(dir, "profiles"), 0o755)
	os.WriteFile(filepath.Join(dir, "profiles", "p.json"), mustRead(t, "testdata/public-prior.json"), 0o644)
	src := "trace \"c\" {\n  source  = \"x.parquet\"\n  profile = \"profiles/p.json\"\n  digest  = \"sha256:" + strings.Repeat("ab", 32) + "\"\n}\n"
	os.WriteFile(spec, []byte(src), 0o644)
	tr := &lang.Trace{Name: "c", Source: "x.parquet", Profile: "profiles/p.json", Digest: "sha256:" + strings.Repeat("ab", 32),
		DeclRange:  hcl.Range{Filename: spec, Start: hcl.Pos{Line: 1, Column: 1}, End: hcl.Pos{Line: 1, Column: 10}},
		AttrRanges: map[string]hcl.Range{"digest": {Filename: spec, Start: hcl.Pos{Line: 4, Column: 13}, End: hcl.Pos{Line: 4, Column: 86}}}}
	_, diags := Resolve(context.Background(), tr, dir, ReadOptions{})
	if !diags.HasErrors() || diags[0].Subject == nil || diags[0].Subject.Start.Line != 4 || diags[0].Subject.Start.Column != 13 {
		t.Fatalf("diags %v subject %+v", diags, diags[0].Subject)
	}
	if !strings.Contains(diags[0].Detail, publicPriorDigest) || !strings.Contains(diags[0].Detail, tr.Digest) {
		t.Fatalf("detail does not name both digests: %s", diags[0].Detail)
	}
	tr.Digest = publicPriorDigest
	v, diags := Resolve(context.Background(), tr, dir, ReadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	in, _ := v.GetAttr("shapes").GetAttr("long_prefill").GetAttr("input_tokens").AsBigFloat().Int64()
	if in != 7897 {
		t.Fatalf("shapes.long_prefill.input_tokens = %d, want 7897", in)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A resolved trace records its profile's document digest (the one a
// digest attribute pins and 'profile validate' prints, never the SHA-256
// of the file's bytes), pinned or profiled from its source: the plan and
// the evidence name the profile by it.
func TestResolveRecordsTheProfileDigest(t *testing.T) {
	dir := t.TempDir()
	raw := mustRead(t, "testdata/public-prior.json")
	os.WriteFile(filepath.Join(dir, "p.json"), raw, 0o644)
	pinned := &lang.Trace{Name: "c", Source: "x.parquet", Profile: "p.json", Digest: publicPriorDigest}
	if _, diags := Resolve(context.Background(), pinned, dir, ReadOptions{}); diags.HasErrors() {
		t.Fatal(diags)
	}
	if pinned.ProfileDigest != publicPriorDigest || pinned.ProfileDigest == "sha256:"+sha256Hex(raw) {
		t.Errorf("pinned: profile digest %q, want the document digest %s", pinned.ProfileDigest, publicPriorDigest)
	}

	data, err := os.ReadFile(synthTrace(t, smallTrace))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "trace.parquet"), data, 0o644)
	unpinned := &lang.Trace{Name: "t", Source: "trace.parquet", Sample: &lang.TraceSample{RowGroups: 2, RowsPerGroup: 300}}
	if _, diags := Resolve(context.Background(), unpinned, dir, ReadOptions{}); diags.HasErrors() {
		t.Fatal(diags)
	}
	files, _ := filepath.Glob(filepath.Join(dir, ".infercrane", "profiles", "*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	_, want, err := Parse(mustRead(t, files[0]))
	if err != nil || unpinned.ProfileDigest != want {
		t.Errorf("unpinned: profile digest %q, want the profile's %s (%v)", unpinned.ProfileDigest, want, err)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
