package perf

import (
	"sort"

	"github.com/infercrane/infercrane/planner/load"
)

// PrefixCache is the engine's automatic prefix cache as the step loop
// consults it, by vLLM v1's timing: a request looks the cache up when it
// is first scheduled (Lookup, again after a preemption or when the KV
// cache had no room for it), and the full KV blocks a step computed become
// hits only once that step completes (Store; prompt blocks chunk by chunk,
// output blocks as decoding fills them). So a request prefilled in the
// same step as another gets no hit from it, and one scheduled a step later
// does. Both clocks hand the scheduler one (Engine.SetPrefixCache): the
// simulated engine's keys its blocks by token hashes, the estimator's by
// the planned prefix streams (PlannedCache), so they make the same
// decisions.
type PrefixCache interface {
	// Lookup returns how many leading prompt tokens of q the cache holds
	// now, in whole blocks and never the prompt's last token.
	Lookup(q *Seq) int
	// Store records that blocks [from, to) of q's tokens (prompt, then
	// output) are computed and full.
	Store(q *Seq, from, to int)
}

// BlockLRU is a set of KV block keys with least-recently-used eviction:
// the prefix cache's bookkeeping, shared by both clocks' caches. A block
// key stands for the block's tokens and every token before it (a chained
// hash). Entries live in one slice linked most recently used first, so
// the cache allocates only as it grows. Not safe for concurrent use.
type BlockLRU struct {
	capacity int // blocks; 0: unbounded
	index    map[uint64]int32
	nodes    []lruNode
	head     int32 // most recently used (-1: empty)
	tail     int32
	free     int32 // a node freed by eviction (-1: none)
}

type lruNode struct {
	key        uint64
	prev, next int32
}

// NewBlockLRU returns an empty cache of capacity blocks (0: unbounded).
func NewBlockLRU(capacity int) *BlockLRU {
	return &BlockLRU{capacity: max(capacity, 0), index: map[uint64]int32{}, head: -1, tail: -1, free: -1}
}

func (c *BlockLRU) unlink(i int32) {
	n := &c.nodes[i]
	if n.prev >= 0 {
		c.nodes[n.prev].next = n.next
	} else {
		c.head = n.next
	}
	if n.next >= 0 {
		c.nodes[n.next].prev = n.prev
	} else {
		c.tail = n.prev
	}
}

func (c *BlockLRU) pushFront(i int32) {
	n := &c.nodes[i]
	n.prev, n.next = -1, c.head
	if c.head >= 0 {
		c.nodes[c.head].prev = i
	} else {
		c.tail = i
	}
	c.head = i
}

func (c *BlockLRU) touch(i int32) {
	if c.head != i {
		c.unlink(i)
		c.pushFront(i)
	}
}

// Hit returns how many leading keys the cache holds, marking them used.
func (c *BlockLRU) Hit(keys []uint64) int {
	hit := 0
	for _, k := range keys {
		i, ok := c.index[k]
		if !ok {
			break
		}
		c.touch(i)
		hit++
	}
	return hit
}

// Insert adds keys (or marks them used), evicting the least recently used
// blocks beyond the capacity.
func (c *BlockLRU) Insert(keys []uint64) {
	for _, k := range keys {
		if i, ok := c.index[k]; ok {
			c.touch(i)
			continue
		}
		if c.capacity > 0 && len(c.index) >= c.capacity {
			old := c.tail
			c.unlink(old)
			delete(c.index, c.nodes[old].key)
			c.free = old
		}
		i := c.free
		if i >= 0 {
			c.free = -1
		} else {
			i = int32(len(c.nodes))
			c.nodes = append(c.nodes, lruNode{})
		}
		c.nodes[i].key = k
		c.index[k] = i
		c.pushFront(i)
	}
}

// Len is the number of blocks held.
func (c *BlockLRU) Len() int { return len(c.index) }

// PlannedCache is the estimator's prefix cache: the simulated engine's
// rule on the planned sequence instead of token ids. A request's first
// RequestSize.PrefixTokens tokens are blocks of its prefix stream
// (RequestSize.Prefix: a prefix group, or a session whose turns extend one
// conversation), shared by every request of that stream; the rest are its
// own. It holds Lane.Engine.KVBlocks blocks, as the simulated engine's
// cache does.
type PlannedCache struct {
	lru       *BlockLRU
	blockSize int
	next      uint64 // the next request's own stream
	keys      []uint64
}

// NewPlannedCache returns an empty estimator cache for engine cfg.
func NewPlannedCache(cfg EngineConfig) *PlannedCache {
	return &PlannedCache{lru: NewBlockLRU(cfg.KVBlocks), blockSize: cfg.blockSize()}
}

// plannedKey is block b of stream s (own streams have the top bit set).
func plannedKey(s uint64, b int) uint64 {
	x := s*0x9e3779b97f4a7c15 + uint64(b) + 1
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// plannedSeq is what PlannedCache needs of a request (vreq carries it).
type plannedSeq interface {
	prefix() (stream uint64, tokens int, own uint64)
}

func (c *PlannedCache) blockKeys(q *Seq, from, to int) []uint64 {
	stream, shared, own := q.Data.(plannedSeq).prefix()
	c.keys = c.keys[:0]
	for b := from; b < to; b++ {
		if stream != 0 && (b+1)*c.blockSize <= shared {
			c.keys = append(c.keys, plannedKey(stream, b))
		} else {
			c.keys = append(c.keys, plannedKey(own|1<<63, b))
		}
	}
	return c.keys
}

// ownStream returns a stream no other request shares.
func (c *PlannedCache) ownStream() uint64 { c.next++; return c.next }

// Lookup implements PrefixCache.
func (c *PlannedCache) Lookup(q *Seq) int {
	return c.lru.Hit(c.blockKeys(q, 0, load.ServableTokens(q.Prompt, q.Prompt, c.blockSize)/c.blockSize)) * c.blockSize
}

// Store implements PrefixCache.
func (c *PlannedCache) Store(q *Seq, from, to int) { c.lru.Insert(c.blockKeys(q, from, to)) }

// storeDecodes tells the cache the blocks k pure decode steps of the
// running requests fill, in the order stepping would: step by step, and
// within a step in the running order.
func (s *Scheduler) storeDecodes(k int) {
	type fill struct{ step, i, block int }
	var fills []fill
	bs := s.cfg.BlockSize
	for i, q := range s.running {
		// Step j (1-based) completes KV up to computed+j tokens.
		for b := q.stored; (b+1)*bs <= q.computed+k; b++ {
			fills = append(fills, fill{max((b+1)*bs-q.computed, 1), i, b})
		}
	}
	sort.Slice(fills, func(a, b int) bool {
		if fills[a].step != fills[b].step {
			return fills[a].step < fills[b].step
		}
		return fills[a].i < fills[b].i
	})
	for _, f := range fills {
		q := s.running[f.i]
		s.cache.Store(q, f.block, f.block+1)
		q.stored = f.block + 1
	}
}
