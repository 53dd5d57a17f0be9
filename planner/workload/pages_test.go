package workload

import (
	"context"
	"encoding/binary"
	"os"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/infercrane/infercrane/planner/workload/synth"
)

// The real trace's layout: row groups of a million rows, of which a sample
// wants the first 50,000. Two files with the same rows, with and without
// Parquet's offset index.
var (
	millionRows   = synth.Options{Rows: 1_060_000, RowsPerGroup: 1_000_000, Seed: 13, PageIndex: true}
	millionNoIdx  = synth.Options{Rows: 1_060_000, RowsPerGroup: 1_000_000, Seed: 13}
	sampleRows    = int64(50_000)
	sampleGroups  = []int{0, 1}
	sampledColumn = append(append([]string(nil), Columns...), FunctionColumn)
)

// minimumBytes is what a sample of the first rows of groups needs, from the
// file's own metadata: the footer, the offset index entries of the
// projected columns, and for each projected column chunk its bytes from its
// start (dictionary page) to the end of the last data page whose first row
// is below rows.
func minimumBytes(t *testing.T, path string, rows int64, groups []int) (footer, index, pages int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	footer = int64(binary.LittleEndian.Uint32(data[len(data)-8:])) + 8
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	for _, g := range groups {
		rgr := rdr.RowGroup(g)
		pir, err := rdr.GetPageIndexReader().RowGroup(g)
		if err != nil || pir == nil {
			t.Fatalf("row group %d has no page index (%v)", g, err)
		}
		lo, hi := int64(-1), int64(0)
		for _, name := range sampledColumn {
			leaf := rdr.MetaData().Schema.ColumnIndexByName(name)
			cc, err := rgr.MetaData().ColumnChunk(leaf)
			if err != nil {
				t.Fatal(err)
			}
			loc := cc.GetOffsetIndexLocation()
			if lo < 0 || loc.Offset < lo {
				lo = loc.Offset
			}
			hi = max(hi, loc.Offset+int64(loc.Length))
			oi, err := pir.GetOffsetIndex(leaf)
			if err != nil {
				t.Fatal(err)
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() {
				start = min(start, cc.DictionaryPageOffset())
			}
			end := start
			for _, p := range oi.GetPageLocations() {
				if p.FirstRowIndex < rows {
					end = max(end, p.Offset+int64(p.CompressedPageSize))
				}
			}
			pages += end - start
		}
		index += hi - lo
	}
	return footer, index, pages
}

// A page-level sample over S3 fetches within 1.05x of the minimum, with
// the default 1 MiB blocks and read-ahead, with or without an offset index;
// a whole-chunk read would be far above it.
func TestS3PageLevelSampleReadsOnlyThePagesNeeded(t *testing.T) {
	withIdx, noIdx := synthTrace(t, millionRows), synthTrace(t, millionNoIdx)
	footer, index, pages := minimumBytes(t, withIdx, sampleRows, sampleGroups)
	s3 := newFakeS3(t)
	for _, tc := range []struct {
		name, path string
		min        int64
		pageChunks int
	}{
		{"offset index", withIdx, footer + index + pages, 2 * len(sampledColumn)},
		// The twin's pages: same rows, same writer (its page headers lack
		// the index's statistics, about 0.1% smaller); no index to read.
		{"no offset index", noIdx, footer + pages, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			s3.put(t, "traces", tc.name+".parquet", data)
			read := s3.opts()
			read.BlockSize, read.ReadAhead, read.TailSize = 0, 0, 0 // the defaults: 1 MiB, 2 ahead, 64 KiB
			tail := int64(64 << 10)
			s3.served.Store(0)
			res, err := Build(context.Background(), Options{Source: "s3://traces/" + tc.name + ".parquet", Read: read,
				RowGroupIndices: sampleGroups, RowsPerGroup: int(sampleRows)})
			if err != nil {
				t.Fatal(err)
			}
			served := s3.served.Load()
			// The open fetches a fixed 64 KiB tail for the footer; count it
			// at what the footer needs, as a tail sized to the footer would.
			got := served - (tail - footer)
			if res.PageChunks != tc.pageChunks || res.PrefixChunks != 2*len(sampledColumn)-tc.pageChunks {
				t.Errorf("page chunks %d prefix chunks %d", res.PageChunks, res.PrefixChunks)
			}
			t.Logf("served %d bytes (%d with a footer-sized tail), minimum %d (footer %d, index %d, pages %d), whole chunks %d",
				served, got, tc.min, footer, index, pages, res.ProjectedBytes)
			if float64(got) > 1.05*float64(tc.min) {
				t.Errorf("served %d bytes, %.3fx the minimum %d", got, float64(got)/float64(tc.min), tc.min)
			}
			if float64(res.ProjectedBytes) < 1.5*float64(tc.min) {
				t.Errorf("whole chunks %d are close to the minimum %d: the test does not tell page-level reads apart", res.ProjectedBytes, tc.min)
			}
			if res.Document.Sampling.RowsInspected != int(sampleRows)*len(sampleGroups) {
				t.Errorf("rows inspected %d", res.Document.Sampling.RowsInspected)
			}
			local, err := Build(context.Background(), Options{Source: tc.path, RowGroupIndices: sampleGroups, RowsPerGroup: int(sampleRows)})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(local.Document.Distributions, res.Document.Distributions) {
				t.Errorf("S3 and local distributions differ")
			}
		})
	}
}

// ReadAhead = -1 turns read-ahead off; the defaults are applied twice on
// the way (Open, then the prefetch reader) and once turned it back on.
func TestReadAheadOff(t *testing.T) {
	data, err := os.ReadFile(synthTrace(t, smallTrace))
	if err != nil {
		t.Fatal(err)
	}
	s3 := newFakeS3(t)
	s3.put(t, "traces", "t.parquet", data)
	for _, tc := range []struct {
		ahead, blocks int64
	}{{-1, 1}, {0, 3}, {1, 2}} {
		o := s3.opts()
		o.BlockSize, o.ReadAhead = 4096, int(tc.ahead)
		obj, err := Open(context.Background(), "s3://traces/t.parquet", o)
		if err != nil {
			t.Fatal(err)
		}
		obj.plan(readPlan{extents: []extent{{4, 4 + 10*4096}}})
		before := obj.BytesRead()
		if _, err := obj.ReadAt(make([]byte, 100), 4); err != nil {
			t.Fatal(err)
		}
		obj.pf.mu.Lock()
		pending := make([]*block, 0, len(obj.pf.blocks))
		for _, b := range obj.pf.blocks {
			pending = append(pending, b)
		}
		obj.pf.mu.Unlock()
		for _, b := range pending {
			<-b.done
		}
		if got := obj.BytesRead() - before; got != tc.blocks*4096 {
			t.Errorf("ReadAhead %d: fetched %d bytes for a 100-byte read, want %d blocks of 4096", tc.ahead, got, tc.blocks)
		}
		obj.Close()
	}
}
