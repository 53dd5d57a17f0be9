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

// tokenRow is one request of a hand-made trace: its token counts and its
// start, in microseconds after 2025-01-01 UTC.
type tokenRow struct{ it, ot, ct, startUs int64 }

// writeTokenTrace writes rows as a one-group trace (each request lasting
// 2 s with a 0.1 s TTFT) and returns its path.
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
	for _, r := range rows {
		s := start + r.startUs
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
		rows = append(rows, tokenRow{it: int64(100 + i), ot: 50, ct: 10, startUs: int64(i) * 1_000_000})
	}
	rows = append(rows, tokenRow{it: math.MaxInt64, ot: math.MaxInt64, ct: math.MaxInt64, startUs: 200_000_000}, tokenRow{it: 300, ot: 1 << 40, ct: 1 << 40, startUs: 201_000_000})
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

// A row whose started_at lies far from the rest of its group (a clock
// error: 10 days early, or 1970) is left out of the arrival figures
// instead of spreading the group over days of empty windows; bursty
// traffic is kept whole.
func TestIsolatedArrivalsAreTrimmed(t *testing.T) {
	const n = 5000 // 10 req/s for 500 s
	steady := func() []tokenRow {
		rows := make([]tokenRow, n)
		for i := range rows {
			rows[i] = tokenRow{it: 100, ot: 50, ct: 0, startUs: int64(i) * 100_000}
		}
		return rows
	}
	for name, moved := range map[string]int64{"10 days early": -10 * 86_400_000_000, "in 1970": -1_735_689_600_000_000} {
		rows := steady()
		rows[2500].startUs = moved
		res, err := Build(context.Background(), Options{Source: writeTokenTrace(t, rows), All: true})
		if err != nil {
			t.Fatal(err)
		}
		a := res.Document.Traffic
		if m := a.PerSecond.Mean; math.Abs(m-10) > 0.2 || a.PerSecond.Windows < 490 || a.PerSecond.Windows > 500 {
			t.Errorf("%s: %d windows, mean %.3f req/s; want about 498 windows at 10 req/s", name, a.PerSecond.Windows, m)
		}
		if a.InterarrivalCV > 0.5 {
			t.Errorf("%s: inter-arrival CV %.2f for a steady trace", name, a.InterarrivalCV)
		}
	}
	// A busy minute, then a quiet hour: 20% of the rows are the tail.
	var bursty []tokenRow
	for i := range 4000 {
		bursty = append(bursty, tokenRow{it: 100, ot: 50, startUs: int64(i) * 15_000})
	}
	for i := range 1000 {
		bursty = append(bursty, tokenRow{it: 100, ot: 50, startUs: 60_000_000 + int64(i)*3_600_000})
	}
	res, err := Build(context.Background(), Options{Source: writeTokenTrace(t, bursty), All: true})
	if err != nil {
		t.Fatal(err)
	}
	if w := res.Document.Traffic.PerSecond.Windows; w < 3600 {
		t.Errorf("bursty traffic: %d one-second windows, want the whole hour and more kept", w)
	}
}
