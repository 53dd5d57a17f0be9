package workload

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// function_name values are read where their page holds them (readStrings),
// so a batch that spans pages must keep the earlier pages' strings before
// the next page replaces them. A plain-encoded column of 300-byte pages
// (a few names each, so every 8,192-row batch spans hundreds of pages), of
// names of many lengths with nulls among them, gives the function shares
// counted here from the rows written.
func TestFunctionNamesAcrossPages(t *testing.T) {
	const rows = 30_000
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "function_name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "started_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "completed_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "it", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ot", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ct", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ttft", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	count := map[string]int64{}
	inSum := map[string]int64{}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for i := range rows {
		k := (i * 7919) % 23
		name := fmt.Sprintf("fn-%02d-%s", k, strings.Repeat("x", k*k%41))
		in := int64(100 + i%50)
		if i%17 == 0 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.StringBuilder).Append(name)
			count[name]++
			inSum[name] += in
		}
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(t0 + int64(i)*20_000))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(t0 + int64(i)*20_000 + 1_000_000))
		b.Field(3).(*array.Int64Builder).Append(in)
		b.Field(4).(*array.Int64Builder).Append(10)
		b.Field(5).(*array.Int64Builder).Append(0)
		b.Field(6).(*array.Float32Builder).Append(0.1)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "pages.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(300), parquet.WithMaxRowGroupLength(rows))
	w, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := Build(context.Background(), Options{Source: path, All: true, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}

	names := make([]string, 0, len(count))
	for n := range count {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if count[names[i]] != count[names[j]] {
			return count[names[i]] > count[names[j]]
		}
		return names[i] < names[j]
	})
	var want []string
	var other int64
	for i, n := range names {
		if i < MaxFunctions {
			want = append(want, fmt.Sprintf("%s %d %.4f", n, count[n], float64(inSum[n])/float64(count[n])))
		} else {
			other += count[n]
		}
	}
	want = append(want, fmt.Sprintf("(other) %d", other))
	var got []string
	for _, s := range res.Document.Traffic.Functions {
		if s.Name == "(other)" {
			got = append(got, fmt.Sprintf("%s %d", s.Name, s.Requests))
			continue
		}
		got = append(got, fmt.Sprintf("%s %d %.4f", s.Name, s.Requests, s.InputTokensMean))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("function shares:\n%s\nwant (from the rows written):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
