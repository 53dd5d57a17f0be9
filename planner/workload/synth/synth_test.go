package synth

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

func TestTraceHasThePublicSchemaAndNullRates(t *testing.T) {
	var a, b bytes.Buffer
	o := Options{Rows: 20_000, RowsPerGroup: 2_500, Seed: 4}
	if err := Write(&a, o); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, o); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same options, different files")
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if rdr.NumRowGroups() != 8 || rdr.NumRows() != 20_000 {
		t.Fatalf("%d groups, %d rows", rdr.NumRowGroups(), rdr.NumRows())
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	want := Schema()
	for i, f := range want.Fields() {
		got := tbl.Schema().Field(i)
		if got.Name != f.Name || !arrow.TypeEqual(got.Type, f.Type) {
			t.Errorf("column %d: %s %s, want %s %s", i, got.Name, got.Type, f.Name, f.Type)
		}
	}
	rd := array.NewTableReader(tbl, 20_000)
	defer rd.Release()
	var noTokens, ttft, streaming, ttftNonStreaming int
	for rd.Next() {
		rec := rd.RecordBatch()
		fn := rec.Column(1).(*array.String)
		it := rec.Column(8).(*array.Int64)
		tt := rec.Column(11).(*array.Float32)
		for i := range int(rec.NumRows()) {
			if it.IsNull(i) {
				noTokens++
			}
			s := strings.HasSuffix(fn.Value(i), "_stream")
			if s && it.IsValid(i) {
				streaming++
			}
			if tt.IsValid(i) {
				ttft++
				if !s {
					ttftNonStreaming++
				}
			}
		}
	}
	if frac := float64(noTokens) / 20_000; math.Abs(frac-NullTokenFraction) > 0.01 {
		t.Errorf("rows without tokens %.3f, want about %.3f", frac, NullTokenFraction)
	}
	if ttftNonStreaming != 0 || ttft != streaming {
		t.Errorf("ttft on %d rows (%d non-streaming), want exactly the %d streaming rows with tokens", ttft, ttftNonStreaming, streaming)
	}
}
