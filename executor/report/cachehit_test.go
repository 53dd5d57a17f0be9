package report

import (
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor"
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

// The evidence says where each campaign's prompts came from and whether
// any run repeats another's prompts (issue 27: "make bench/evidence state
// whether prompts repeat across runs"): the screen's runs do not (run n
// has the lane's seed + n - 1, salted with the lane's id). The check is
// the load generator's own prompt seed, so two lanes whose seeds and
// salts do give one prompt seed are said to repeat.
func TestEvidenceSaysWhetherPromptsRepeat(t *testing.T) {
	in := fixtureInputRuns(20, 16, 3)
	evs, err := BuildEvidence(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range evs[0].Models {
		for _, c := range m.Campaigns {
			p := c.Workload.Prompts
			if p == nil || p.RepeatAcrossRuns || p.RepeatAcrossLanes || !strings.Contains(p.Source, "seed 17 + n - 1 salted with the lane's id "+c.Lane) {
				t.Errorf("%s: prompts %+v, want seed 17 + n - 1 salted with %s, repeating nothing", m.Name, p, c.Lane)
			}
		}
	}
	// A lane whose seed, with its salt, gives lane aaaa1111's run 2's
	// prompt seed for its own run 1.
	sc := in.Plan.Screens[0]
	a := in.Plan.Lanes[0]
	target := loadgen.PromptSeed(executor.RunSpecFor(a, 2).Load)
	twin := &planner.Lane{ID: "cccc3333", Screen: sc.Name, Runs: 1}
	twin.Inputs.Seed = target ^ loadgen.PromptSeed(loadgen.Config{PromptSalt: twin.ID})
	if got := loadgen.PromptSeed(executor.RunSpecFor(twin, 1).Load); got != target {
		t.Fatalf("the twin's prompt seed %d, want %d", got, target)
	}
	in.Plan.Lanes = append(in.Plan.Lanes, twin)
	if p := promptsOf(in.Plan, sc, a, 3); !p.RepeatAcrossLanes || p.RepeatAcrossRuns {
		t.Errorf("lane %s's run 2 sends the twin's prompts, but the evidence says %+v", a.ID, p)
	}
	if p := promptsOf(in.Plan, sc, in.Plan.Lanes[1], 3); p.RepeatAcrossLanes {
		t.Errorf("lane %s repeats nothing, but the evidence says %+v", in.Plan.Lanes[1].ID, p)
	}
}
