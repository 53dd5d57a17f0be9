package report

import (
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/perf"
)

// catalogLane is Qwen3-0.6B on one L40S as the catalog models it, the
// performance model's input a planned lane carries (Lane.Perf).
func catalogLane(t *testing.T) *perf.Lane {
	t.Helper()
	m, ok := perf.LookupModel("Qwen/Qwen3-0.6B")
	g, ok2 := perf.LookupGPU("L40S")
	if !ok || !ok2 {
		t.Fatal("Qwen/Qwen3-0.6B or L40S is not in the catalog")
	}
	l, err := perf.NewLane(m, perf.Hardware{GPU: g, Count: 1, BytesPerElem: 2, Assume: perf.DefaultAssumptions(g)},
		perf.EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true, PrefixCaching: true, BlockSize: 16}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return &l
}

// The report flags, beside the plan's estimate, a campaign's runs whose
// TTFT p50 is under half a lone prefill's compute with no prefix-cache hit
// declared (issue 27: "calibrate and the report flag runs whose TTFT falls
// far below a lone prefill's compute"): the evidence names them
// (prediction.cache_hits) and the Markdown table marks the rows and says
// why. A run whose server declared its hits is modelled, not flagged; the
// other lane's cold runs are not flagged. Before, the report set a cached
// run's 0.4 ms TTFT beside the estimate as if it were the model's error.
func TestReportFlagsCacheServedRuns(t *testing.T) {
	in := fixtureInputRuns(20, 16, 3)
	pl := catalogLane(t)
	floor := 0.5 * 1000 * perf.StepTime(pl.Model, pl.Hardware, 128, 1, 0, 0)
	if floor < 0.5 || floor > 20 {
		t.Fatalf("a lone 128-token prefill's half is %.2f ms on L40S: the fixture's TTFTs no longer straddle it", floor)
	}
	for _, l := range in.Plan.Lanes {
		l.Perf = pl
		l.Inputs.ExecutorType, l.Executor = "openai", "openai"
		l.Estimate = planner.Estimate{Available: true, Estimate: perf.Estimate{TTFTMs: 20, TPOTMs: 5, LatencyMs: 100}}
	}
	// The small model's runs 2 and 3 answered their first token in 0.3 ms
	// (from the cache); run 3's server said so.
	small := in.Runs["aaaa1111"]
	for k := range small[1:] {
		r := &small[1+k]
		r.Records = makeRecords(20, 16, 0.3*floor, 4, 0.1, nil)
		for i := range r.Records { // makeRecords adds up to 2 ms: keep them under the floor
			rec := &r.Records[i]
			rec.FirstTokenNs = rec.SentNs + int64(0.3*floor*1e6)
			rec.ChunkNs[0] = rec.FirstTokenNs
		}
	}
	in.Runs["aaaa1111"] = small
	evs, err := BuildEvidence(in)
	if err != nil {
		t.Fatal(err)
	}
	flagged := map[string][]string{}
	for _, m := range evs[0].Models {
		for _, c := range m.Campaigns {
			if c.Prediction == nil {
				t.Fatalf("%s: no prediction", m.Name)
			}
			flagged[m.Name] = c.Prediction.CacheHits
		}
	}
	if len(flagged["big"]) != 0 {
		t.Errorf("the big model's cold runs are flagged: %q", flagged["big"])
	}
	if h := flagged["small"]; len(h) != 2 || !strings.HasPrefix(h[0], "run 2: TTFT p50 ") || !strings.HasPrefix(h[1], "run 3: ") ||
		!strings.Contains(h[0], "served from a prefix cache") {
		t.Errorf("the small model's cache hits: %q, want runs 2 and 3", h)
	}
	var b strings.Builder
	if err := WriteMarkdown(&b, evs[0]); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if !strings.Contains(md, "CACHE-SERVED: Org/Small-0.6B ") || !strings.Contains(md, "run 2: TTFT p50") {
		t.Errorf("the Markdown report does not say which runs a cache served:\n%s", md)
	}
	if strings.Contains(md, "CACHE-SERVED: Org/Big-1.7B") {
		t.Errorf("the Markdown report flags the cold lane")
	}

	// Declared hits (the server's prefix-cache counters) are modelled, not flagged.
	runs := []evidence.RunEvidence{{Run: 1}}
	v := 0.3 * floor
	runs[0].TTFTP50Ms = &v
	if h := campaignCacheHits(in.Plan.Lanes[0], runs, 1); len(h) != 1 {
		t.Fatalf("undeclared: %q, want one flag", h)
	}
	runs[0].ServerView = &loadgen.ServerView{PrefixCache: &loadgen.ServerPrefixCache{QueriedTokens: 2560, HitTokens: 2400}}
	if h := campaignCacheHits(in.Plan.Lanes[0], runs, 1); len(h) != 0 {
		t.Errorf("a run whose server declared its cache hits is flagged: %q", h)
	}
}
