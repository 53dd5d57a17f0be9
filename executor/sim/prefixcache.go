package sim

import (
	"encoding/binary"
	"hash/fnv"
	"sync"

	"github.com/infercrane/infercrane/planner/load"
	"github.com/infercrane/infercrane/planner/perf"
)

// prefixCache is the engine's automatic prefix cache, block by block as
// vLLM keeps it: a request's KV is stored in blocks of blockSize tokens,
// each keyed by a hash of its tokens and of every block before it, so a
// new prompt reuses the longest run of leading blocks an earlier request
// left, the least recently used going first when capacity blocks are held
// (planner.BlockLRU). In model mode the step loop decides when
// (planner.PrefixCache): a request looks the cache up when it is first scheduled
// and a step's computed blocks, prompt chunks and filled output blocks,
// become hits when the step completes. In constant mode, which has no
// steps, a request looks it up when it arrives and its blocks are kept
// when it finishes.
type prefixCache struct {
	mu        sync.Mutex
	blockSize int
	lru       *perf.BlockLRU
}

func newPrefixCache(blockSize, capacity int) *prefixCache {
	return &prefixCache{blockSize: blockSize, lru: perf.NewBlockLRU(capacity)}
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

// hit returns how many leading tokens of a prompt of prompt tokens, whose
// full blocks hash to hs, the cache serves: whole blocks, and never the
// prompt's last token (it is computed to sample the first output token,
// as in vLLM).
func (c *prefixCache) hit(hs []uint64, prompt int) int {
	hs = hs[:min(len(hs), load.ServableTokens(prompt, prompt, c.blockSize)/c.blockSize)]
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Hit(hs) * c.blockSize
}

// insert keeps blocks hashed hs.
func (c *prefixCache) insert(hs []uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Insert(hs)
}

// stepCache is the prefix cache as model mode's step loop consults it
// (planner.PrefixCache); each request carries its blocks' hashes, prompt and
// output tokens.
type stepCache struct{ c *prefixCache }

// Lookup implements planner.PrefixCache.
func (s stepCache) Lookup(q *perf.Seq) int {
	g := q.Data.(*genState)
	return s.c.hit(g.blocks, g.prompt)
}

// Store implements planner.PrefixCache.
func (s stepCache) Store(q *perf.Seq, from, to int) {
	g := q.Data.(*genState)
	s.c.insert(g.blocks[min(from, len(g.blocks)):min(to, len(g.blocks))])
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
