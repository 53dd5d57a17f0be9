package workload

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// rewriteTypes writes the small trace's rows again with other physical and
// logical types (millisecond and nanosecond timestamps, int32, uint32 and
// double token counts, double ttft) and returns the new file.
func rewriteTypes(t *testing.T, src string) string {
	t.Helper()
	rdr, err := file.OpenParquetFile(src, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	ms := &arrow.TimestampType{Unit: arrow.Millisecond}
	ns := &arrow.TimestampType{Unit: arrow.Nanosecond}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "function_name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "started_at", Type: ms, Nullable: true},
		{Name: "completed_at", Type: ns, Nullable: true},
		{Name: "it", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "ot", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "ct", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ttft", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	out := filepath.Join(t.TempDir(), "types.parquet")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(5000))
	w, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	for g := range rdr.NumRowGroups() {
		tbl, err := fr.ReadRowGroups(context.Background(), AllRowGroups(rdr.MetaData().Schema.NumColumns()), []int{g})
		if err != nil {
			t.Fatal(err)
		}
		col := func(name string) arrow.Array {
			a, err := array.Concatenate(tbl.Column(tbl.Schema().FieldIndices(name)[0]).Data().Chunks(), memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		fn, st, ct := col("function_name").(*array.String), col("started_at").(*array.Timestamp), col("completed_at").(*array.Timestamp)
		it, ot, cc, tt := col("it").(*array.Int64), col("ot").(*array.Int64), col("ct").(*array.Int64), col("ttft").(*array.Float32)
		for i := range int(tbl.NumRows()) {
			b.Field(0).(*array.StringBuilder).Append(fn.Value(i))
			// Whole milliseconds, so both files hold the same durations.
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(st.Value(i)) / 1000))
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(st.Value(i))/1000*1000_000 + (int64(ct.Value(i))-int64(st.Value(i)))*1000))
			appendOr(b.Field(3), it.IsValid(i), func() { b.Field(3).(*array.Int32Builder).Append(int32(it.Value(i))) })
			appendOr(b.Field(4), ot.IsValid(i), func() { b.Field(4).(*array.Uint32Builder).Append(uint32(ot.Value(i))) })
			appendOr(b.Field(5), cc.IsValid(i), func() { b.Field(5).(*array.Float64Builder).Append(float64(cc.Value(i))) })
			appendOr(b.Field(6), tt.IsValid(i), func() { b.Field(6).(*array.Float64Builder).Append(float64(tt.Value(i))) })
		}
		rec := b.NewRecordBatch()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		b.Release()
		tbl.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func appendOr(b array.Builder, valid bool, add func()) {
	if valid {
		add()
	} else {
		b.AppendNull()
	}
}

// Other integer, float and timestamp types decode to the same profile.
func TestOtherColumnTypesDecodeAlike(t *testing.T) {
	src := synthTrace(t, smallTrace)
	other := rewriteTypes(t, src)
	o := Options{RowGroupIndices: []int{0, 5, 11}, RowsPerGroup: 3000}
	o.Source = src
	a, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	o.Source = other
	b, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	da, db := a.Document.Distributions, b.Document.Distributions
	// ttft widened from float32 both ways; token counts identical.
	if !reflect.DeepEqual(da.InputTokens, db.InputTokens) || !reflect.DeepEqual(da.OutputTokens, db.OutputTokens) || !reflect.DeepEqual(da.CachedTokens, db.CachedTokens) ||
		!reflect.DeepEqual(da.CacheHitFraction, db.CacheHitFraction) || !reflect.DeepEqual(da.TTFTMs, db.TTFTMs) || da.DurationMs.Samples != db.DurationMs.Samples {
		t.Fatalf("distributions differ:\n%+v\n%+v", da, db)
	}
	if b.Document.Traffic.Functions[0] != a.Document.Traffic.Functions[0] {
		t.Errorf("functions %+v vs %+v", b.Document.Traffic.Functions, a.Document.Traffic.Functions)
	}
}

func TestWrongColumnTypeSaysWhichAndWhy(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "started_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "completed_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "it", Type: arrow.BinaryTypes.String},
		{Name: "ot", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ct", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ttft", Type: arrow.PrimitiveTypes.Float32},
	}, nil)
	p := filepath.Join(t.TempDir(), "bad.parquet")
	f, _ := os.Create(p)
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(2).(*array.StringBuilder).Append("12")
	b.Field(0).AppendNull()
	b.Field(1).AppendNull()
	b.Field(3).(*array.Int64Builder).Append(1)
	b.Field(4).(*array.Int64Builder).Append(1)
	b.Field(5).(*array.Float32Builder).Append(1)
	rec := b.NewRecordBatch()
	w.Write(rec)
	w.Close()
	_, err = Build(context.Background(), Options{Source: p})
	if err == nil || !strings.Contains(err.Error(), "it: type BYTE_ARRAY (String) is not an integer column") {
		t.Fatalf("error %v", err)
	}
}
