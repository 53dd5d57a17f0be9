package workload

import "testing"

// The page-buffer pool hands a freed buffer to the next allocation of its
// size class, cleared like a fresh one; it keeps at most poolPerClass of a
// class, and a buffer that is not one of its sizes (another allocator's)
// is left to the garbage collector.
func TestBufferPoolReusesClearedBuffers(t *testing.T) {
	var p bufferPool
	a := p.Allocate(5000)
	if len(a) != 5000 || cap(a) != 8192 {
		t.Fatalf("allocation of 5000: len %d cap %d, want 5000 in a class of 8192", len(a), cap(a))
	}
	for i := range a {
		a[i] = 0xff
	}
	p.Free(a)
	b := p.Allocate(8000)
	if &b[0] != &a[0] || len(b) != 8000 {
		t.Fatal("a freed buffer was not reused for the next allocation of its class")
	}
	for i, x := range b[:cap(b)] {
		if x != 0 {
			t.Fatalf("reused buffer not cleared at %d", i)
		}
	}
	// Growing keeps the content and frees the old buffer.
	b[0] = 7
	c := p.Reallocate(20000, b)
	if c[0] != 7 || len(c) != 20000 || cap(c) != 32768 {
		t.Fatalf("reallocated: first byte %d, len %d, cap %d", c[0], len(c), cap(c))
	}
	if d := p.Allocate(8000); &d[0] != &b[:1][0] {
		t.Error("the buffer a reallocation replaced was not freed")
	}
	p.Free(make([]byte, 5000)) // not a class size: not kept
	if n := len(p.free[poolClass(5000)]); n != 0 {
		t.Errorf("a foreign buffer was kept (%d free)", n)
	}
	for range poolPerClass + 10 {
		p.Free(make([]byte, 1<<16))
	}
	if n := len(p.free[16]); n != poolPerClass {
		t.Errorf("%d free buffers kept of one class, want at most %d", n, poolPerClass)
	}
}
