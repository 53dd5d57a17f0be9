package workload

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// readPlan is what a scan of some row groups reads: the byte ranges of the
// column data it needs and, for a sample of leading rows, where each column
// chunk may be cut short.
type readPlan struct {
	// extents are read in blocks with read-ahead (whole chunks, or the
	// leading pages an offset index lists).
	extents []extent
	// clips are the tails of column chunks past the pages a sample needs:
	// reads stop there (io.EOF), so neither read-ahead nor the decoder's
	// buffer fetches them.
	clips []extent
	// needed is the bytes of column data the rows need: whole chunks, or
	// the leading pages (from the offset index) of a sampled chunk.
	needed int64
	// indexBytes is how many bytes of offset index were read.
	indexBytes int64
	// pageChunks and prefixChunks count sampled column chunks read by
	// their offset index and, lacking one, page by page from the start.
	pageChunks, prefixChunks int
}

// chunkRange is a column chunk's bytes, dictionary page included.
func chunkRange(cc *metadata.ColumnChunkMetaData) extent {
	start := cc.DataPageOffset()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
		start = cc.DictionaryPageOffset()
	}
	return extent{start, start + cc.TotalCompressedSize()}
}

// planReads decides what reading the first limit rows (0: all) of groups
// costs. A group read whole is its projected chunks. A group of which fewer
// rows are wanted than it holds is read page-level:
//
//   - with an offset index (Parquet's page index), only the dictionary page
//     and the data pages whose first row is below limit, fetched in blocks
//     with read-ahead up to exactly their end, and nothing after it;
//   - without one, the chunk is read from its start as the decoder asks for
//     it, one page header and page at a time, with no block rounding and no
//     read-ahead, until the rows are decoded: the bytes fetched are the
//     pages holding the rows plus at most the decoder's 64 KiB header
//     buffer past the last of them (nothing when that page is larger).
func (t *trace) planReads(groups []int, limit int64) (readPlan, error) {
	md := t.pf.MetaData()
	var p readPlan
	for _, g := range groups {
		rg := md.RowGroup(g)
		sampled := limit > 0 && limit < rg.NumRows()
		var idx map[int]metadata.OffsetIndex
		if sampled {
			var err error
			idx, err = t.offsetIndexes(rg, &p)
			if err != nil {
				return p, fmt.Errorf("%s: row group %d: %w", t.obj.Source, g, err)
			}
		}
		for _, leaf := range t.leaves {
			cc, err := rg.ColumnChunk(leaf)
			if err != nil {
				return p, fmt.Errorf("%s: row group %d: %w", t.obj.Source, g, err)
			}
			r := chunkRange(cc)
			if !sampled {
				p.extents = append(p.extents, r)
				p.needed += r.end - r.start
				continue
			}
			oi, ok := idx[leaf]
			if !ok {
				p.prefixChunks++
				continue
			}
			end := r.start
			for _, pl := range oi.GetPageLocations() {
				if pl.FirstRowIndex < limit {
					end = max(end, pl.Offset+int64(pl.CompressedPageSize))
				}
			}
			end = min(end, r.end)
			p.pageChunks++
			p.extents = append(p.extents, extent{r.start, end})
			p.needed += end - r.start
			if end < r.end {
				p.clips = append(p.clips, extent{end, r.end})
			}
		}
	}
	return p, nil
}

// offsetIndexes reads the offset indexes of the projected columns of one
// row group, in one read spanning them (they are stored together).
func (t *trace) offsetIndexes(rg *metadata.RowGroupMetaData, p *readPlan) (map[int]metadata.OffsetIndex, error) {
	locs := map[int]*metadata.IndexLocation{}
	lo, hi := int64(-1), int64(-1)
	for _, leaf := range t.leaves {
		cc, err := rg.ColumnChunk(leaf)
		if err != nil {
			return nil, err
		}
		loc := cc.GetOffsetIndexLocation()
		if loc == nil || loc.Length <= 0 || loc.Offset < 0 || loc.Offset+int64(loc.Length) > t.obj.Size {
			continue
		}
		locs[leaf] = loc
		if lo < 0 || loc.Offset < lo {
			lo = loc.Offset
		}
		hi = max(hi, loc.Offset+int64(loc.Length))
	}
	if len(locs) == 0 {
		return nil, nil
	}
	buf := make([]byte, hi-lo)
	if _, err := t.obj.ReadAt(buf, lo); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the offset index: %w", err)
	}
	p.indexBytes += hi - lo
	out := map[int]metadata.OffsetIndex{}
	for leaf, loc := range locs {
		oi, err := parseOffsetIndex(buf[loc.Offset-lo : loc.Offset-lo+int64(loc.Length)])
		if err != nil {
			continue // an unreadable index: read this chunk page by page
		}
		out[leaf] = oi
	}
	return out, nil
}

func parseOffsetIndex(b []byte) (oi metadata.OffsetIndex, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("bad offset index: %v", r)
		}
	}()
	oi = metadata.NewOffsetIndex(b, nil, nil)
	locs := oi.GetPageLocations()
	if !sort.SliceIsSorted(locs, func(i, j int) bool { return locs[i].FirstRowIndex < locs[j].FirstRowIndex }) {
		return nil, errors.New("bad offset index: pages out of row order")
	}
	return oi, nil
}
