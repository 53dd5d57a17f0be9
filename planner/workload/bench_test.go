package workload

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/infercrane/infercrane/planner/workload/synth"
)

// benchRows is the size of the benchmark trace: 10 million rows in 100
// row groups, written once per process into a temporary directory.
const benchRows = 10_000_000

var benchTraceOpts = synth.Options{Rows: benchRows, RowsPerGroup: 100_000, Seed: 11}

// rawReadSeconds reads the projected columns of groups with arrow-go alone
// (no statistics): the baseline the profile's cost is a ratio against.
func rawReadSeconds(b *testing.B, path string, groups []int) float64 {
	b.Helper()
	start := time.Now()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		b.Fatal(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		b.Fatal(err)
	}
	var leaves []int
	for _, c := range append(Columns, FunctionColumn) {
		leaves = append(leaves, rdr.MetaData().Schema.ColumnIndexByName(c))
	}
	rr, err := fr.GetRecordReader(context.Background(), leaves, groups)
	if err != nil {
		b.Fatal(err)
	}
	defer rr.Release()
	for rr.Next() {
	}
	return time.Since(start).Seconds()
}

var rawBaseline sync.Map // group count -> seconds

// BenchmarkProfileRows profiles the first N row groups of the 10M-row trace
// (1M, 3M and 10M rows) with one worker, reporting rows/s, ns/row (flat
// when time grows linearly with rows) and the ratio of the profile's time
// to a bare arrow-go read of the same columns in this process.
func BenchmarkProfileRows(b *testing.B) {
	path := synthTrace(b, benchTraceOpts)
	for _, groups := range []int{10, 30, 100} {
		for _, mode := range []string{"exact", "sketch"} {
			rows := groups * benchTraceOpts.RowsPerGroup
			b.Run(fmt.Sprintf("rows=%dM/%s", rows/1_000_000, mode), func(b *testing.B) {
				base, ok := rawBaseline.Load(groups)
				if !ok {
					base = rawReadSeconds(b, path, AllRowGroups(groups))
					rawBaseline.Store(groups, base)
				}
				o := Options{Source: path, RowGroupIndices: AllRowGroups(groups), Workers: 1, Sketch: mode == "sketch"}
				b.ResetTimer()
				start := time.Now()
				for range b.N {
					if _, err := Build(context.Background(), o); err != nil {
						b.Fatal(err)
					}
				}
				per := time.Since(start).Seconds() / float64(b.N)
				b.ReportMetric(float64(rows)/per, "rows/s")
				b.ReportMetric(per*1e9/float64(rows), "ns/row")
				b.ReportMetric(per/base.(float64), "x-raw-read")
			})
		}
	}
}

// BenchmarkSampleBytes profiles the public prior's sample (3 row groups by
// the 10%..90% rule, first 50,000 rows each) and reports the bytes read
// against the file's size.
func BenchmarkSampleBytes(b *testing.B) {
	path := synthTrace(b, benchTraceOpts)
	b.ResetTimer()
	var res *Result
	var err error
	for range b.N {
		res, err = Build(context.Background(), Options{Source: path, RowGroups: 3, RowsPerGroup: 50_000})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.BytesRead), "bytes-read")
	b.ReportMetric(float64(res.FileSize), "file-bytes")
	b.ReportMetric(float64(res.BytesRead)/float64(res.FileSize), "read-fraction")
	b.ReportMetric(150_000/(b.Elapsed().Seconds()/float64(b.N)), "rows/s")
}
