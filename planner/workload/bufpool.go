package workload

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bufferPool is the Parquet reader's allocator: it keeps the page buffers
// a closed column chunk reader frees (compressed and decompressed pages,
// the dictionary page) and hands them to the next chunk, so a scan does
// not allocate, and collect, a few megabytes of page buffers per row
// group. Buffers come in power-of-two sizes and are cleared when handed
// out again, as a fresh allocation is; at most poolPerClass of each size
// are kept, so what it holds is bounded whatever the file.
type bufferPool struct {
	mu   sync.Mutex
	free [64][][]byte // by log2 of the capacity
}

// poolPerClass bounds the free buffers kept of one size: more than the
// page buffers of every column a scan's workers have open at once.
const poolPerClass = 64

// minPoolClass is the smallest size class (4 KiB).
const minPoolClass = 12

func poolClass(size int) int {
	if size <= 1<<minPoolClass {
		return minPoolClass
	}
	return bits.Len(uint(size - 1))
}

func (p *bufferPool) Allocate(size int) []byte {
	c := poolClass(size)
	p.mu.Lock()
	if n := len(p.free[c]); n > 0 {
		b := p.free[c][n-1]
		p.free[c][n-1] = nil
		p.free[c] = p.free[c][:n-1]
		p.mu.Unlock()
		clear(b)
		return b[:size]
	}
	p.mu.Unlock()
	return make([]byte, size, 1<<c)
}

func (p *bufferPool) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	n := p.Allocate(size)
	copy(n, b)
	p.Free(b)
	return n
}

func (p *bufferPool) Free(b []byte) {
	c := bits.Len(uint(cap(b))) - 1
	if cap(b) == 0 || cap(b) != 1<<c || c < minPoolClass {
		return // not one of ours
	}
	p.mu.Lock()
	if len(p.free[c]) < poolPerClass {
		p.free[c] = append(p.free[c], b[:cap(b)])
	}
	p.mu.Unlock()
}

var _ memory.Allocator = (*bufferPool)(nil)
