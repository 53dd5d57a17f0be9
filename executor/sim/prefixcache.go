package sim

import (
	"container/list"
	"encoding/binary"
	"hash/fnv"
	"sync"
)

// prefixCache is the engine's automatic prefix cache, block by block as
// vLLM keeps it: a request's KV is stored in blocks of blockSize tokens,
// each keyed by a hash of its tokens and of every block before it, so a
// new prompt reuses the longest run of leading blocks an earlier request
// left. Full blocks of a finished request (prompt and output) are kept;
// the least recently used go first when capacity blocks are held.
type prefixCache struct {
	mu        sync.Mutex
	blockSize int
	capacity  int // blocks; 0: unbounded
	lru       *list.List
	blocks    map[uint64]*list.Element
}

func newPrefixCache(blockSize, capacity int) *prefixCache {
	return &prefixCache{blockSize: blockSize, capacity: capacity, lru: list.New(), blocks: map[uint64]*list.Element{}}
}

// blockHashes returns the chained hashes of the full blocks of ids.
func (c *prefixCache) blockHashes(ids []int) []uint64 {
	n := len(ids) / c.blockSize
	out := make([]uint64, n)
	var prev uint64
	var buf [8]byte
	for b := range n {
		h := fnv.New64a()
		binary.LittleEndian.PutUint64(buf[:], prev)
		h.Write(buf[:])
		for _, id := range ids[b*c.blockSize : (b+1)*c.blockSize] {
			binary.LittleEndian.PutUint32(buf[:4], uint32(id))
			h.Write(buf[:4])
		}
		prev = h.Sum64()
		out[b] = prev
	}
	return out
}

// lookup returns how many leading tokens of a prompt the cache serves:
// whole blocks, and never the prompt's last token (it is computed to
// sample the first output token, as in vLLM).
func (c *prefixCache) lookup(prompt []int) int {
	hs := c.blockHashes(prompt[:max(len(prompt)-1, 0)])
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := 0
	for _, h := range hs {
		el, ok := c.blocks[h]
		if !ok {
			break
		}
		c.lru.MoveToFront(el)
		hit++
	}
	return hit * c.blockSize
}

// insert keeps the full blocks of a finished request's tokens.
func (c *prefixCache) insert(ids []int) {
	hs := c.blockHashes(ids)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range hs {
		if el, ok := c.blocks[h]; ok {
			c.lru.MoveToFront(el)
			continue
		}
		c.blocks[h] = c.lru.PushFront(h)
	}
	for c.capacity > 0 && c.lru.Len() > c.capacity {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.blocks, old.Value.(uint64))
	}
}

// prefixCacheFor returns the engine's prefix cache, nil when prefix caching
// is off. The plan's resolved engine (Options.Server) turns it on as the
// runtime does; in model mode the cache holds at most the KV cache's
// blocks unless PrefixCacheBlocks says otherwise.
func prefixCacheFor(o Options, t timing) *prefixCache {
	blockSize, capacity := o.BlockSize, o.PrefixCacheBlocks
	on := o.PrefixCaching
	if mt, ok := t.(*modelTiming); ok {
		on = on || mt.srv.Engine.PrefixCaching
		blockSize = mt.srv.Engine.BlockSize
		if capacity == 0 {
			capacity = mt.srv.Engine.KVBlocks
		}
	} else if o.Server != nil && o.Server.Engine.PrefixCaching {
		on = true
		blockSize = max(o.Server.Engine.BlockSize, 1)
	}
	if !on {
		return nil
	}
	return newPrefixCache(max(blockSize, 1), capacity)
}
