package report

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
)

// parquetContent is a Parquet file read back with arrow-go.
type parquetContent struct {
	rows    int64
	schema  *arrow.Schema
	strings map[string][]string
	ints    map[string][]int64
	floats  map[string][]float64 // NaN for null
	nulls   map[string]int
}

func readParquet(t *testing.T, path string) parquetContent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tbl, err := pqarrow.ReadTable(context.Background(), f, parquet.NewReaderProperties(memory.DefaultAllocator), pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("read %s back: %v", path, err)
	}
	defer tbl.Release()
	pc := parquetContent{rows: tbl.NumRows(), schema: tbl.Schema(), strings: map[string][]string{}, ints: map[string][]int64{}, floats: map[string][]float64{}, nulls: map[string]int{}}
	for i := 0; i < int(tbl.NumCols()); i++ {
		col := tbl.Column(i)
		name := col.Name()
		for _, chunk := range col.Data().Chunks() {
			pc.nulls[name] += chunk.NullN()
			switch a := chunk.(type) {
			case *array.String:
				for j := 0; j < a.Len(); j++ {
					pc.strings[name] = append(pc.strings[name], a.Value(j))
				}
			case *array.Float64:
				for j := 0; j < a.Len(); j++ {
					v := a.Value(j)
					if a.IsNull(j) {
						v = math.NaN()
					}
					pc.floats[name] = append(pc.floats[name], v)
				}
			case *array.Int64:
				for j := 0; j < a.Len(); j++ {
					pc.ints[name] = append(pc.ints[name], a.Value(j))
				}
			}
		}
	}
	return pc
}

// TestParquetReadBack writes the fixture's records and reads them back:
// one row per request, every column present, values equal to the records.
func TestParquetReadBack(t *testing.T) {
	in := fixtureInput()
	evs, err := BuildEvidence(in)
	if err != nil {
		t.Fatal(err)
	}
	runs := screenRecords(&in, evs[0])
	path := filepath.Join(t.TempDir(), "r.parquet")
	if err := WriteParquetFile(path, runs, nil); err != nil {
		t.Fatal(err)
	}
	pc := readParquet(t, path)
	want := 0
	var tokens, wantTokens int64
	for _, lr := range runs {
		want += len(lr.Records)
		for _, r := range lr.Records {
			if r.OK() {
				wantTokens += int64(r.OutputTokens)
			}
		}
	}
	if pc.rows != int64(want) || want != 120 {
		t.Fatalf("%d rows, want %d (120)", pc.rows, want)
	}
	ws := RecordsSchema()
	if pc.schema.NumFields() != ws.NumFields() {
		t.Fatalf("%d columns read back, want %d", pc.schema.NumFields(), ws.NumFields())
	}
	for i, f := range ws.Fields() {
		g := pc.schema.Field(i)
		if g.Name != f.Name || g.Type.ID() != f.Type.ID() {
			t.Errorf("column %d: %s %s, want %s %s", i, g.Name, g.Type, f.Name, f.Type)
		}
	}
	for i, n := range pc.ints["output_tokens"] {
		if pc.strings["error_class"][i] == "" {
			tokens += n
		}
	}
	if tokens != wantTokens {
		t.Errorf("output tokens of successful requests: %d, want %d", tokens, wantTokens)
	}
	// One failed request per run of the small lane: 3 of 120.
	if pc.nulls["error_class"] != 117 || pc.nulls["ttft_ms"] != 3 {
		t.Errorf("nulls: error_class %d (want 117), ttft_ms %d (want 3)", pc.nulls["error_class"], pc.nulls["ttft_ms"])
	}
	if pc.strings["lane"][0] != "aaaa1111" || pc.strings["model_id"][119] != "Org/Big-1.7B" {
		t.Errorf("lane columns: %q %q", pc.strings["lane"][0], pc.strings["model_id"][119])
	}
}
