package workload

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// reference recomputes the distributions straight from the whole table,
// with its own filters and percentile code, for the given row groups.
type reference struct {
	in, out, cached, ttft, dur, frac []float64
}

func computeReference(t *testing.T, path string, groups []int, rowsPerGroup int) reference {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	var ref reference
	for _, g := range groups {
		tbl, err := fr.ReadRowGroups(context.Background(), AllRowGroups(rdr.MetaData().Schema.NumColumns()), []int{g})
		if err != nil {
			t.Fatal(err)
		}
		col := func(name string) arrow.Array {
			idx := tbl.Schema().FieldIndices(name)[0]
			chunks := tbl.Column(idx).Data().Chunks()
			if len(chunks) != 1 {
				arr, err := array.Concatenate(chunks, memory.DefaultAllocator)
				if err != nil {
					t.Fatal(err)
				}
				return arr
			}
			return chunks[0]
		}
		st, ct := col("started_at").(*array.Timestamp), col("completed_at").(*array.Timestamp)
		it, ot, cc := col("it").(*array.Int64), col("ot").(*array.Int64), col("ct").(*array.Int64)
		tt := col("ttft").(*array.Float32)
		n := int(tbl.NumRows())
		if rowsPerGroup > 0 {
			n = min(n, rowsPerGroup)
		}
		for i := 0; i < n; i++ {
			if it.IsValid(i) && it.Value(i) > 0 {
				ref.in = append(ref.in, float64(it.Value(i)))
				if cc.IsValid(i) && cc.Value(i) >= 0 {
					ref.cached = append(ref.cached, float64(cc.Value(i)))
					ref.frac = append(ref.frac, math.Min(1, float64(cc.Value(i))/float64(it.Value(i))))
				}
			}
			if ot.IsValid(i) && ot.Value(i) > 0 {
				ref.out = append(ref.out, float64(ot.Value(i)))
			}
			secs := float64(int64(ct.Value(i))-int64(st.Value(i))) / 1e6
			if secs > 0 && secs < 300 {
				ref.dur = append(ref.dur, secs*1000)
			}
			if tt.IsValid(i) && tt.Value(i) > 0 && tt.Value(i) < 300 {
				ref.ttft = append(ref.ttft, float64(tt.Value(i))*1000)
			}
		}
		tbl.Release()
	}
	return ref
}

// refPercentile is nearest rank written independently: the smallest value
// with at least q*n values at or below it.
func refPercentile(values []float64, q float64) float64 {
	s := slices.Clone(values)
	slices.Sort(s)
	rank := int(math.Ceil(q * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}

func checkDist(t *testing.T, name string, got Distribution, values []float64, relErr float64) {
	t.Helper()
	if got.Samples != len(values) {
		t.Errorf("%s: samples = %d, want %d", name, got.Samples, len(values))
	}
	for i, g := range []float64{got.Percentiles.P50, got.Percentiles.P90, got.Percentiles.P95, got.Percentiles.P99} {
		want := refPercentile(values, Quantiles[i])
		if relErr == 0 && g != want || math.Abs(g-want) > relErr*math.Abs(want) {
			t.Errorf("%s p%g = %v, want %v (relative error bound %g)", name, Quantiles[i]*100, g, want, relErr)
		}
	}
}

func TestBuildMatchesIndependentComputation(t *testing.T) {
	path := synthTrace(t, smallTrace)
	fixed := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	res, err := Build(context.Background(), Options{Source: path, RowGroups: 3, RowsPerGroup: 2000, MaxContext: 8192, Now: func() time.Time { return fixed }})
	if err != nil {
		t.Fatal(err)
	}
	doc := res.Document
	if want := []int{1, 6, 10}; !slices.Equal(doc.Sampling.RowGroups, want) {
		t.Fatalf("row groups %v, want %v (10%%..90%% rule over 12 groups)", doc.Sampling.RowGroups, want)
	}
	if doc.Sampling.RowsInspected != 6000 || doc.Source.TraceRows != 60000 || doc.Sampling.TotalRowGroups != 12 {
		t.Fatalf("sampling %+v source %+v", doc.Sampling, doc.Source)
	}
	ref := computeReference(t, path, []int{1, 6, 10}, 2000)
	d := doc.Distributions
	checkDist(t, "input_tokens", d.InputTokens, ref.in, 0)
	checkDist(t, "output_tokens", d.OutputTokens, ref.out, 0)
	checkDist(t, "cached_tokens", d.CachedTokens, ref.cached, 0)
	checkDist(t, "ttft_ms", d.TTFTMs, ref.ttft, 0)
	checkDist(t, "duration_ms", d.DurationMs, ref.dur, 0)
	checkDist(t, "cache_hit_fraction", d.CacheHitFraction, ref.frac, 0)
	if probs := Validate(doc); len(probs) > 0 {
		t.Fatalf("built profile does not validate: %v", probs)
	}
	// The same inputs give the same digest.
	again, err := Build(context.Background(), Options{Source: path, RowGroups: 3, RowsPerGroup: 2000, MaxContext: 8192, Workers: 1, Now: func() time.Time { return fixed }})
	if err != nil {
		t.Fatal(err)
	}
	if again.Document.Digest != doc.Digest {
		t.Fatalf("digest not stable across worker counts: %s vs %s", again.Document.Digest, doc.Digest)
	}
	if res.BytesRead >= res.FileSize {
		t.Fatalf("read %d bytes of a %d-byte file: the projection did not apply", res.BytesRead, res.FileSize)
	}
	tr := doc.Traffic
	if tr == nil || tr.PerSecond.Windows == 0 || tr.InterarrivalSamples != 6000-3 {
		t.Fatalf("traffic %+v", tr)
	}
	// The generator's arrivals average 50/s with one gap in ten ten times
	// shorter: mean rate 1/(0.9*0.02+0.1*0.002) = ~55/s; bursts make CV > 1.
	if tr.PerSecond.Mean < 45 || tr.PerSecond.Mean > 65 || tr.InterarrivalCV <= 1 {
		t.Errorf("arrival mean %v/s, CV %v: want ~55/s and CV > 1", tr.PerSecond.Mean, tr.InterarrivalCV)
	}
	if len(tr.Functions) != 4 || tr.Functions[0].Name != "chat_stream" {
		t.Errorf("functions %+v", tr.Functions)
	}
}

func TestFullScanSketchWithinBound(t *testing.T) {
	path := synthTrace(t, smallTrace)
	var last Progress
	res, err := Build(context.Background(), Options{Source: path, All: true, Workers: 3, Progress: func(p Progress) { last = p }})
	if err != nil {
		t.Fatal(err)
	}
	doc := res.Document
	if doc.Sampling.RowsInspected != 60000 || len(doc.Sampling.RowGroups) != 12 || doc.Sampling.QuantileRelativeError != SketchRelativeError {
		t.Fatalf("sampling %+v", doc.Sampling)
	}
	if last.GroupsDone != 12 || last.GroupsTotal != 12 || last.RowsInspected != 60000 {
		t.Fatalf("last progress %+v", last)
	}
	ref := computeReference(t, path, AllRowGroups(12), 0)
	d := doc.Distributions
	checkDist(t, "input_tokens", d.InputTokens, ref.in, SketchRelativeError)
	checkDist(t, "output_tokens", d.OutputTokens, ref.out, SketchRelativeError)
	checkDist(t, "cached_tokens", d.CachedTokens, ref.cached, SketchRelativeError)
	checkDist(t, "ttft_ms", d.TTFTMs, ref.ttft, SketchRelativeError)
	checkDist(t, "duration_ms", d.DurationMs, ref.dur, SketchRelativeError)
	checkDist(t, "cache_hit_fraction", d.CacheHitFraction, ref.frac, SketchRelativeError)
}
