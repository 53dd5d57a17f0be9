package workload

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// memFetcher serves ranges of a byte slice and records every range asked.
type memFetcher struct {
	data   []byte
	calls  atomic.Int64
	mu     sync.Mutex
	ranges [][2]int64
}

func (m *memFetcher) fetch(_ context.Context, off, n int64) ([]byte, error) {
	m.calls.Add(1)
	m.mu.Lock()
	m.ranges = append(m.ranges, [2]int64{off, off + n})
	m.mu.Unlock()
	return bytes.Clone(m.data[off : off+n]), nil
}

func TestPrefetchReaderServesExactBytesWithinExtents(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	f := &memFetcher{data: data}
	pr := newPrefetchReader(context.Background(), f, int64(len(data)), ReadOptions{BlockSize: 4096, ReadAhead: 2, Parallel: 4})
	ex := []extent{{10_000, 60_000}, {200_000, 200_100}, {500_000, 700_000}}
	pr.setExtents(ex)
	inExtent := func(a, b int64) bool {
		for _, e := range ex {
			if a >= e.start && b <= e.end {
				return true
			}
		}
		return false
	}
	// Sequential reads through each extent, then random reads anywhere.
	for _, e := range ex {
		for off := e.start; off < e.end; off += 3000 {
			n := min(3000, e.end-off)
			buf := make([]byte, n)
			if _, err := pr.ReadAt(buf, off); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf, data[off:off+n]) {
				t.Fatalf("wrong bytes at %d", off)
			}
		}
	}
	f.mu.Lock()
	for _, rg := range f.ranges {
		if !inExtent(rg[0], rg[1]) {
			t.Errorf("fetched %v outside the extents: read-ahead crossed a chunk end", rg)
		}
	}
	f.mu.Unlock()
	var extentBytes int64
	for _, e := range ex {
		extentBytes += e.end - e.start
	}
	if got := pr.fetched.Load(); got != extentBytes {
		t.Errorf("fetched %d bytes for %d bytes of extents: blocks were fetched twice or beyond", got, extentBytes)
	}
	for range 300 {
		off := r.Int64N(int64(len(data)))
		n := r.Int64N(20_000) + 1
		buf := make([]byte, n)
		got, err := pr.ReadAt(buf, off)
		want := min(n, int64(len(data))-off)
		if int64(got) != want || (want < n) != (err == io.EOF) || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt(%d, %d) = %d, %v", n, off, got, err)
		}
		if !bytes.Equal(buf[:got], data[off:off+int64(got)]) {
			t.Fatalf("wrong bytes for ReadAt(%d, %d)", n, off)
		}
	}
}
