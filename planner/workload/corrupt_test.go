package workload

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/infercrane/infercrane/planner/workload/synth"
)

// tokenRow is one request of a hand-made trace.
type tokenRow struct{ it, ot, ct int64 }

// writeTokenTrace writes rows as a one-group trace (one request a second,
// each lasting 2 s with a 0.1 s TTFT) and returns its path.
func writeTokenTrace(t *testing.T, rows []tokenRow) string {
	t.Helper()
	// The public schema's columns a profile reads.
	public := synth.Schema()
	var fields []arrow.Field
	for _, name := range []string{"function_name", "started_at", "completed_at", "it", "ot", "ct", "ttft"} {
		fields = append(fields, public.Field(public.FieldIndices(name)[0]))
	}
	schema := arrow.NewSchema(fields, nil)
	path := filepath.Join(t.TempDir(), "tokens.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	const start = int64(1_735_689_600_000_000) // 2025-01-01 UTC, in µs
	for i, r := range rows {
		s := start + int64(i)*1_000_000
		b.Field(0).(*array.StringBuilder).Append("chat_stream")
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(s))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(s + 2_000_000))
		b.Field(3).(*array.Int64Builder).Append(r.it)
		b.Field(4).(*array.Int64Builder).Append(r.ot)
		b.Field(5).(*array.Int64Builder).Append(r.ct)
		b.Field(6).(*array.Float32Builder).Append(0.1)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A token count no request can have (here 2^63-1, as an unsigned column's
// value over 2^63 also reads) is a corrupt row: dropped like a
// non-positive one, instead of wrapping the function breakdown's exact
// sums, which once failed the whole profile ("token means must be finite
// and non-negative").
func TestCorruptTokenCountsAreDropped(t *testing.T) {
	var rows []tokenRow
	for i := range 200 {
		rows = append(rows, tokenRow{it: int64(100 + i), ot: 50, ct: 10})
	}
	rows = append(rows, tokenRow{it: math.MaxInt64, ot: math.MaxInt64, ct: math.MaxInt64}, tokenRow{it: 300, ot: 1 << 40, ct: 1 << 40})
	res, err := Build(context.Background(), Options{Source: writeTokenTrace(t, rows), All: true})
	if err != nil {
		t.Fatalf("a corrupt row failed the profile: %v", err)
	}
	d := res.Document.Distributions
	if d.InputTokens.Samples != 201 || d.OutputTokens.Samples != 200 || d.CachedTokens.Samples != 200 {
		t.Errorf("samples: input %d (want 201), output %d (want 200), cached %d (want 200)", d.InputTokens.Samples, d.OutputTokens.Samples, d.CachedTokens.Samples)
	}
	fn := res.Document.Traffic.Functions
	if len(fn) != 1 || fn[0].OutputTokensMean != 50 || fn[0].InputTokensMean > 300 {
		t.Errorf("function breakdown %+v: want chat_stream with output mean 50 and no corrupt input", fn)
	}
}
