package perf

import "testing"

// groupSeq adds a request whose first shared prompt tokens are prefix
// stream 7's (the rest its own) to s.
func groupSeq(s *Scheduler, c *PlannedCache, prompt, shared, output int) *Seq {
	r := &vreq{size: RequestSize{Input: prompt, Output: output, Prefix: 7, PrefixTokens: shared}, own: c.ownStream()}
	r.seq = Seq{Prompt: prompt, Output: output, Data: r}
	s.Add(&r.seq)
	return &r.seq
}

// The timed rule (PrefixCache): a request is looked up when first
// scheduled and blocks hit only after the step that computed them ends.
func TestPrefixCacheTimedRule(t *testing.T) {
	cfg := EngineConfig{MaxNumSeqs: 16, MaxBatchedTokens: 8192, ChunkedPrefill: true, PrefixCaching: true, BlockSize: 16, KVBlocks: 10000}
	t.Run("same step no hit, next step hit", func(t *testing.T) {
		s := NewScheduler(cfg)
		c := NewPlannedCache(cfg)
		s.SetPrefixCache(c)
		a, b := groupSeq(s, c, 300, 200, 4), groupSeq(s, c, 300, 200, 4)
		var st Step
		s.Schedule(&st)
		if st.PrefillTokens != 600 || a.Cached != 0 || b.Cached != 0 {
			t.Fatalf("same step: prefill %d, cached %d and %d; want 600, 0 and 0", st.PrefillTokens, a.Cached, b.Cached)
		}
		later := groupSeq(s, c, 300, 200, 4)
		// Scheduled before the step ends (the scheduler is not told yet):
		// the group's blocks are being computed, not cached.
		s.Complete(&st, nil)
		s.Schedule(&st)
		if want := 200 / 16 * 16; later.Cached != want {
			t.Fatalf("next step: cached %d, want the group's %d whole blocks", later.Cached, want)
		}
		if st.PrefillTokens != 300-192 || st.DecodeSeqs != 2 {
			t.Fatalf("next step prefills %d tokens with %d decodes, want %d and 2", st.PrefillTokens, st.DecodeSeqs, 300-192)
		}
	})
	t.Run("chunked prefill caches chunk by chunk", func(t *testing.T) {
		chunked := cfg
		chunked.MaxBatchedTokens = 64
		s := NewScheduler(chunked)
		c := NewPlannedCache(chunked)
		s.SetPrefixCache(c)
		groupSeq(s, c, 400, 400, 2)
		var st Step
		s.Schedule(&st) // chunk 1: tokens 0-63
		s.Complete(&st, nil)
		s.Schedule(&st) // chunk 2: 64-127; budget spent, none admitted
		b := groupSeq(s, c, 400, 400, 2)
		s.Complete(&st, nil)
		for b.state == seqWaiting {
			s.Schedule(&st)
			s.Complete(&st, nil)
		}
		// b was admitted once the first request's prefill left budget:
		// after its last chunk (tokens 384-399, step 7), when every full
		// block before token 384 was cached and the rest still in flight.
		if b.Cached != 384 {
			t.Fatalf("cached %d, want 384 (the 24 blocks of the chunks completed before b was scheduled)", b.Cached)
		}
	})
	t.Run("decode fills output blocks", func(t *testing.T) {
		s := NewScheduler(cfg)
		c := NewPlannedCache(cfg)
		s.SetPrefixCache(c)
		// A session: the turn's prompt and answer are one stream.
		r := &vreq{size: RequestSize{Input: 30, Output: 20, Prefix: 9, PrefixTokens: 50}, own: c.ownStream()}
		r.seq = Seq{Prompt: 30, Output: 20, Data: r}
		s.Add(&r.seq)
		var st Step
		for r.seq.state != seqDone {
			s.Schedule(&st)
			s.Complete(&st, nil)
		}
		next := &vreq{size: RequestSize{Input: 60, Output: 2, Prefix: 9, PrefixTokens: 62}, own: c.ownStream()}
		if got := c.Lookup(&Seq{Prompt: 60, Data: next}); got != 48 {
			t.Fatalf("the next turn finds %d tokens, want 48: the 3 blocks of prompt and output the first turn computed (its last sampled token has no KV)", got)
		}
	})
}

// The decode fast path (skipDecodes) hands the cache the blocks stepping
// would, in the same order.
func TestPrefixCacheDecodeRunStores(t *testing.T) {
	cfg := EngineConfig{MaxNumSeqs: 16, MaxBatchedTokens: 8192, ChunkedPrefill: true, PrefixCaching: true, BlockSize: 16, KVBlocks: 10000}
	run := func(skip bool) []uint64 {
		s := NewScheduler(cfg)
		rec := &recordingCache{PlannedCache: NewPlannedCache(cfg)}
		s.SetPrefixCache(rec)
		for _, p := range []int{20, 37, 50} {
			groupSeq(s, rec.PlannedCache, p, 0, 60)
		}
		var st Step
		s.Schedule(&st)
		s.Complete(&st, nil)
		if skip {
			_, _, _, k := s.decodeRun(maxSteps)
			s.advanceDecode(k, func(*Seq) {})
		} else {
			for range 58 {
				s.Schedule(&st)
				s.Complete(&st, nil)
			}
		}
		return rec.keys
	}
	stepped, skipped := run(false), run(true)
	if len(stepped) == 0 || len(stepped) != len(skipped) {
		t.Fatalf("stepping stored %d blocks, the decode run %d", len(stepped), len(skipped))
	}
	for i := range stepped {
		if stepped[i] != skipped[i] {
			t.Fatalf("block %d stored in a different order", i)
		}
	}
}

// recordingCache records the blocks stored, in order.
type recordingCache struct {
	*PlannedCache
	keys []uint64
}

func (r *recordingCache) Store(q *Seq, from, to int) {
	r.keys = append(r.keys, r.blockKeys(q, from, to)...)
	r.PlannedCache.Store(q, from, to)
}

// BenchmarkPrefixLaneEstimate estimates a prefix-reuse lane (2 groups
// sharing 2,560 of 3,072 prompt tokens, 4 streams, 96 requests) with each
// request's cached prefix fixed in advance (the rule before the timed
// cache) and with the timed prefix cache (PlannedCache): the cost of
// the cache's bookkeeping.
func BenchmarkPrefixLaneEstimate(b *testing.B) {
	s := testLane(b, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true, PrefixCaching: true})
	sizes := func(timed bool) []RequestSize {
		out := make([]RequestSize, 96)
		for i := range out {
			out[i] = RequestSize{Input: 3072, Output: 64}
			if timed {
				out[i].Prefix, out[i].PrefixTokens = uint64(1+i%2), 2560
			} else if i >= 2 {
				out[i].Cached = 2560
			}
		}
		return out
	}
	for _, timed := range []bool{false, true} {
		name := map[bool]string{false: "fixed", true: "timed"}[timed]
		l := Load{Concurrency: 4, Requests: 96, Sizes: sizes(timed)}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Estimate(l, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
