package report

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
)

// timeIt runs f n times and returns the elapsed time.
func timeIt(n int, f func()) time.Duration {
	start := time.Now()
	for i := 0; i < n; i++ {
		f()
	}
	return time.Since(start)
}

// BenchmarkDigest measures the digest of a full evidence document and
// reports it as a multiple of encoding/json marshalling the same document
// (x_marshal), measured in the same process.
func BenchmarkDigest(b *testing.B) {
	ev, err := BuildEvidence(fixtureInput())
	if err != nil {
		b.Fatal(err)
	}
	doc := ev[0]
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := evidence.Digest(doc); err != nil {
			b.Fatal(err)
		}
	}
	digest := time.Since(start)
	b.StopTimer()
	base := timeIt(b.N, func() { json.Marshal(doc) })
	b.ReportMetric(float64(digest)/float64(base), "x_marshal")
}

// BenchmarkBuildEvidence measures building the evidence of a screen of two
// lanes x 3 runs x 2,000 requests (bootstrap of 2,000 resamples included)
// as a multiple of loadgen.Compute over the same records (x_compute).
func BenchmarkBuildEvidence(b *testing.B) {
	in := fixtureInputSized(2000, 64)
	in.Resamples = DefaultResamples
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := BuildEvidence(in); err != nil {
			b.Fatal(err)
		}
	}
	build := time.Since(start)
	b.StopTimer()
	base := timeIt(b.N, func() {
		for _, runs := range in.Runs {
			for _, r := range runs {
				loadgen.Compute(r.Records, loadgen.SLO{})
			}
		}
	})
	b.ReportMetric(float64(build)/float64(base), "x_compute")
}

// BenchmarkWriteParquet measures the records file of 12,000 requests as a
// multiple of writing the same records as JSONL (x_jsonl).
func BenchmarkWriteParquet(b *testing.B) {
	in := fixtureInputSized(2000, 64)
	ev, _ := BuildEvidence(in)
	runs := screenRecords(&in, ev[0])
	dir := b.TempDir()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := WriteParquetFile(dir+"/r.parquet", runs, nil); err != nil {
			b.Fatal(err)
		}
	}
	pq := time.Since(start)
	b.StopTimer()
	base := timeIt(b.N, func() {
		f, _ := os.Create(dir + "/r.jsonl")
		for _, lr := range runs {
			loadgen.WriteRecords(f, lr.Records)
		}
		f.Close()
	})
	b.ReportMetric(float64(pq)/float64(base), "x_jsonl")
}
