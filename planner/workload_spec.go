package planner

import (
	"fmt"
	"sort"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/load"
)

// workloadSpec converts a shape's lengths, prefix and session blocks to the
// load the lane sends; nil when the shape has none of them, so fixed-size
// lanes keep their inputs (and IDs) as before.
func workloadSpec(s *lang.Shape) *load.Spec {
	if s.Lengths == nil && s.Prefix == nil && s.Session == nil {
		return nil
	}
	w := &load.Spec{}
	if ls := s.Lengths; ls != nil {
		w.Input, w.Output = loadDist(ls.Input, false), loadDist(ls.Output, false)
	}
	if p := s.Prefix; p != nil {
		w.Prefix = &load.Prefix{Groups: p.Groups, SharedTokens: p.SharedTokens, HitRatio: loadDist(p.HitRatio, true)}
	}
	if ss := s.Session; ss != nil {
		w.Session = &load.Session{Turns: ss.Turns}
	}
	return w
}

// loadDist converts a spec distribution.
func loadDist(d *lang.Distribution, fraction bool) *load.Dist {
	if d == nil {
		return nil
	}
	if len(d.Points) > 0 {
		out := load.Dist{Kind: load.KindEmpirical, Fraction: fraction}
		for _, p := range d.Points {
			out.Points = append(out.Points, load.Point{Q: p.Q, V: p.V})
		}
		return &out
	}
	if len(d.Percentiles) == 4 {
		p := d.Percentiles
		out := load.FromPercentiles(p[0], p[1], p[2], p[3], fraction)
		return &out
	}
	return &load.Dist{Kind: load.KindLognormal, Median: d.Median, Sigma: d.Sigma}
}

// resolveWorkload fixes what the load generator needs beyond the shape: the
// window draws are clipped to (the server's context less any template
// reserve, see templateReserve) and the server's KV block size (from the
// resolved runtime, vLLM's default without one), which decides the cache
// hits a prefix shape intends.
func resolveWorkload(l *lanePlan) {
	w := l.Inputs.Workload
	if w == nil {
		return
	}
	if ctx, _ := effectiveContext(l); ctx > 0 {
		w.Window = max(ctx-templateReserve(l.Inputs), 0)
	}
	w.BlockSize = load.DefaultBlockSize
	if l.Perf != nil {
		w.BlockSize = l.Perf.Engine.BlockSize
	}
}

// workloadChecks reports what a lane's drawn requests do against its window:
// the fraction clipped, the intended prefix-cache hit ratio, and a load the
// load generator cannot send.
func workloadChecks(l *lanePlan, name string, f *findings) {
	w := l.Inputs.Workload
	if w == nil {
		return
	}
	if err := w.Validate(); err != nil {
		f.add(SeverityError, l.ID, "", fmt.Sprintf("shape %q cannot be sent: %v", l.Shape, err),
			fmt.Sprintf("%s: fix the lengths, prefix or session block of shape %q.", name, l.Shape))
		return
	}
	in := l.Inputs
	st := load.Summarize(w.Warmup(in.Seed, in.Warmup, in.InputTokens, in.OutputTokens),
		w.Sequence(in.Seed, in.Requests, in.InputTokens, in.OutputTokens), w.BlockSize)
	if st.Clipped > 0 {
		frac := float64(st.Clipped) / float64(st.Requests)
		sev := SeverityNote
		if frac > 0.05 {
			sev = SeverityWarning
		}
		f.add(sev, l.ID, "", fmt.Sprintf("%.1f%% of requests clipped to the %d-token window in shape %q", 100*frac, w.Window, l.Shape),
			fmt.Sprintf("%s: %d of %d drawn requests would exceed the context window less template headroom (%d tokens); their output is cut to at most half the window and their prompt fills the rest, as profile shapes are clipped. Raise the context window, or narrow the distribution, to screen the tail as drawn.",
				name, st.Clipped, st.Requests, w.Window))
	}
	if w.Input != nil || w.Output != nil || w.Session != nil {
		tailMemoryCheck(l, name, w, f)
	}
	if w.Prefix != nil || w.Session != nil {
		off := "A runtime without prefix caching reuses none of them."
		if l.Perf != nil && !l.Perf.Engine.PrefixCaching {
			off = fmt.Sprintf("Runtime %q has prefix caching off, so its server reuses none of them and the estimate prefills every prompt token.", orDefault(l.Runtime, "(none)"))
		}
		f.add(SeverityNote, l.ID, "", fmt.Sprintf("intended prefix-cache hit ratio %.1f%% in shape %q", 100*st.HitRatio(), l.Shape),
			fmt.Sprintf("%s: %d of %d prompt tokens are shared with an earlier sent request in whole %d-token blocks, what an unbounded cache would serve if each request's blocks were cached the moment it was sent; the estimate applies the engine's rule (a request finds the blocks of steps that completed before it was first scheduled, in a cache of the KV cache's size), so requests of a group in flight together reach less. The evidence reports the hit ratio the server achieved beside this one. %s",
				name, st.CachedTokens, st.PromptTokens, w.BlockSize, off))
	}
}

// tailMemoryCheck warns when the drawn requests' tail does not fit the KV
// cache at the shape's concurrency (the median's fit is memoryCheck's): a
// run of long requests would then queue or be preempted.
func tailMemoryCheck(l *lanePlan, name string, w *load.Spec, f *findings) {
	if len(l.missing) > 0 || !l.hwOK {
		return
	}
	in := l.Inputs
	seq := w.Sequence(in.Seed, in.Requests, in.InputTokens, in.OutputTokens)
	sizes := make([]float64, len(seq))
	for i, q := range seq {
		sizes[i] = float64(q.Input + q.Output)
	}
	sort.Float64s(sizes)
	p95 := load.NearestRank(sizes, 0.95)
	capacity := KVCapacityTokens(l.arch, l.hw)
	if need := float64(in.Concurrency) * p95; need > capacity && capacity > 0 {
		f.add(SeverityWarning, l.ID, "", fmt.Sprintf("the tail of shape %q does not fit the KV cache: %d x %.0f tokens (p95 request) > %.0f", l.Shape, in.Concurrency, p95, capacity),
			fmt.Sprintf("%s: when %d of the longest 5%% of requests run together they need %.0f tokens of KV cache and the GPU holds %.0f, so they queue or are preempted and the tail's latency includes it. Lower concurrency in shape %q to %d, or use a larger GPU or more GPUs in gpu %q.",
				name, in.Concurrency, need, capacity, l.Shape, max(1, int(capacity/p95)), l.GPU))
	}
}
