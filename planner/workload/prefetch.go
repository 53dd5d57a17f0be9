package workload

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
)

// fetcher reads one byte range of an object.
type fetcher interface {
	fetch(ctx context.Context, off, n int64) ([]byte, error)
}

// extent is a byte range the scan will read (a projected column chunk).
type extent struct{ start, end int64 }

// block is one cached, block-aligned range of an extent.
type block struct {
	start int64
	done  chan struct{}
	data  []byte
	err   error
}

// prefetchReader is an io.ReaderAt over a fetcher. Reads inside a declared
// extent are served from blocks of blockSize bytes that are fetched in
// parallel (at most `parallel` requests at once), and every read starts the
// fetch of the next `ahead` blocks of the same extent, never past its end:
// read-ahead is bounded by ahead*blockSize per stream and never fetches
// bytes outside the projected column chunks. Reads outside every extent
// (the footer) are fetched exactly. At most maxBlocks blocks are kept.
type prefetchReader struct {
	ctx       context.Context
	f         fetcher
	size      int64
	blockSize int64
	ahead     int
	maxBlocks int
	sem       chan struct{}
	fetched   *atomic.Int64

	mu      sync.Mutex
	extents []extent // sorted, non-overlapping
	blocks  map[int64]*block
	order   []int64 // insertion order, for eviction
	tailOff int64
	tail    []byte
}

func newPrefetchReader(ctx context.Context, f fetcher, size int64, o ReadOptions) *prefetchReader {
	o.defaults()
	ahead := max(0, o.ReadAhead)
	return &prefetchReader{
		ctx: ctx, f: f, size: size, blockSize: o.BlockSize, ahead: ahead,
		maxBlocks: max(o.Parallel*(ahead+1)*8, 64), sem: make(chan struct{}, o.Parallel),
		fetched: new(atomic.Int64), blocks: map[int64]*block{}, tailOff: size,
	}
}

// setTail installs bytes already fetched at the end of the object.
func (r *prefetchReader) setTail(off int64, b []byte) {
	r.mu.Lock()
	r.tailOff, r.tail = off, b
	r.mu.Unlock()
}

// setExtents declares the ranges the scan will read.
func (r *prefetchReader) setExtents(ex []extent) {
	ex = append([]extent(nil), ex...)
	sort.Slice(ex, func(i, j int) bool { return ex[i].start < ex[j].start })
	var merged []extent
	for _, e := range ex {
		if n := len(merged); n > 0 && e.start <= merged[n-1].end {
			merged[n-1].end = max(merged[n-1].end, e.end)
			continue
		}
		merged = append(merged, e)
	}
	r.mu.Lock()
	r.extents = merged
	r.mu.Unlock()
}

func (r *prefetchReader) extentAt(off int64) (extent, bool) {
	i := sort.Search(len(r.extents), func(i int) bool { return r.extents[i].end > off })
	if i < len(r.extents) && r.extents[i].start <= off {
		return r.extents[i], true
	}
	return extent{}, false
}

func (r *prefetchReader) get(off, n int64) ([]byte, error) {
	r.sem <- struct{}{}
	defer func() { <-r.sem }()
	b, err := r.f.fetch(r.ctx, off, n)
	if err == nil {
		r.fetched.Add(int64(len(b)))
	}
	return b, err
}

// ReadAt implements io.ReaderAt.
func (r *prefetchReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read at negative offset %d", off)
	}
	if off >= r.size {
		return 0, io.EOF
	}
	want := p
	var eof error
	if off+int64(len(p)) > r.size {
		want, eof = p[:r.size-off], io.EOF
	}
	for done := 0; done < len(want); {
		n, err := r.readSome(want[done:], off+int64(done))
		if err != nil {
			return done, err
		}
		done += n
	}
	return len(want), eof
}

// readSome serves a prefix of p from the tail, from extent blocks, or with
// one exact fetch up to the next extent.
func (r *prefetchReader) readSome(p []byte, off int64) (int, error) {
	r.mu.Lock()
	if off >= r.tailOff {
		n := copy(p, r.tail[off-r.tailOff:])
		r.mu.Unlock()
		return n, nil
	}
	e, in := r.extentAt(off)
	if !in {
		end := min(off+int64(len(p)), r.tailOff)
		i := sort.Search(len(r.extents), func(i int) bool { return r.extents[i].start > off })
		if i < len(r.extents) {
			end = min(end, r.extents[i].start)
		}
		r.mu.Unlock()
		b, err := r.get(off, end-off)
		if err != nil {
			return 0, err
		}
		return copy(p, b), nil
	}
	end := min(off+int64(len(p)), e.end, r.tailOff)
	var need []*block
	for s := r.blockStart(e, off); s < end; s += r.blockSize {
		need = append(need, r.ensure(e, s))
	}
	last := need[len(need)-1].start
	for s, i := last+r.blockSize, 0; i < r.ahead && s < e.end; s, i = s+r.blockSize, i+1 {
		r.ensure(e, s)
	}
	r.mu.Unlock()
	n := 0
	for _, b := range need {
		<-b.done
		if b.err != nil {
			return n, b.err
		}
		from := max(off+int64(n), b.start) - b.start
		n += copy(p[n:end-off], b.data[from:])
	}
	return n, nil
}

func (r *prefetchReader) blockStart(e extent, off int64) int64 {
	return e.start + (off-e.start)/r.blockSize*r.blockSize
}

// ensure returns the block at start, starting its fetch if needed. r.mu is held.
func (r *prefetchReader) ensure(e extent, start int64) *block {
	if b, ok := r.blocks[start]; ok {
		return b
	}
	b := &block{start: start, done: make(chan struct{})}
	r.blocks[start] = b
	r.order = append(r.order, start)
	r.evict()
	n := min(r.blockSize, e.end-start)
	go func() {
		b.data, b.err = r.get(start, n)
		if b.err == nil && int64(len(b.data)) != n {
			b.err = fmt.Errorf("short read at %d: got %d of %d bytes", start, len(b.data), n)
		}
		close(b.done)
		if b.err != nil {
			r.mu.Lock()
			if r.blocks[start] == b {
				delete(r.blocks, start)
			}
			r.mu.Unlock()
		}
	}()
	return b
}

// evict drops the oldest finished blocks beyond maxBlocks. r.mu is held.
func (r *prefetchReader) evict() {
	for len(r.order) > r.maxBlocks {
		s := r.order[0]
		b, ok := r.blocks[s]
		if ok {
			select {
			case <-b.done:
			default:
				return // oldest still in flight: keep it
			}
			delete(r.blocks, s)
		}
		r.order = r.order[1:]
	}
}
