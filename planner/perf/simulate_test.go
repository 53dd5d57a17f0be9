package perf

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/infercrane/infercrane/planner/arch"
	"github.com/infercrane/infercrane/planner/load"
)

// testLane is Qwen3-0.6B on one L40S with the given engine settings.
func testLane(t testing.TB, model, gpu string, e EngineConfig) Lane {
	t.Helper()
	m, _ := LookupModel(model)
	s, err := NewLane(m, hw(gpu, 1), e, 8192)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func v1() EngineConfig {
	return EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 8192, ChunkedPrefill: true}
}

// TestRunOneStream checks a single stream against hand arithmetic: TTFT
// is the request overhead plus one prefill step, every later token one
// decode step over a KV cache that grows by a token a step.
func TestRunOneStream(t *testing.T) {
	s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	st, err := s.Run(Load{InputTokens: 1000, OutputTokens: 5, Concurrency: 1, Requests: 3})
	if err != nil {
		t.Fatal(err)
	}
	ttft := s.RequestOverheadSeconds() + StepSeconds(s.Model, s.Hardware, 1000, 0, 1000)
	var decode float64
	for k := 1; k < 5; k++ {
		decode += StepSeconds(s.Model, s.Hardware, 0, 1, float64(1000+k))
	}
	if !near(st.TTFT.P50, ttft*1000, 1e-9) || !near(st.TTFT.P99, ttft*1000, 1e-9) {
		t.Errorf("ttft %+v, want %v ms", st.TTFT, ttft*1000)
	}
	if !near(st.TPOT.P50, decode/4*1000, 1e-9) || !near(st.Latency.P50, (ttft+decode)*1000, 1e-9) {
		t.Errorf("tpot %+v latency %+v, want %v and %v", st.TPOT, st.Latency, decode/4*1000, (ttft+decode)*1000)
	}
	if st.ITL.Count != 3*4 || st.Succeeded != 3 || st.OutputTokens != 15 {
		t.Errorf("counts: itl %d, succeeded %d, tokens %d", st.ITL.Count, st.Succeeded, st.OutputTokens)
	}
	if want := 3 * (ttft + decode); !near(st.WindowSeconds, want, 1e-9) || !near(st.RequestThroughput, 3/want, 1e-9) {
		t.Errorf("window %v, want %v", st.WindowSeconds, want)
	}
}

// TestRunOpeningBurst: a closed loop's streams start together, but the
// engine starts its first step the moment the first request enters, with
// that one alone; the other prompts enter during that step and are
// prefilled jointly (within the budget) in the next, beside the first's
// decode. The last of them is the p99 when they are enough of the run.
func TestRunOpeningBurst(t *testing.T) {
	s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	st, err := s.Run(Load{InputTokens: 1024, OutputTokens: 64, Concurrency: 8, Requests: 32})
	if err != nil {
		t.Fatal(err)
	}
	first := StepTime(s.Model, s.Hardware, 1024, 1, 0, 1024)
	burst := (s.RequestOverheadSeconds() + first + StepTime(s.Model, s.Hardware, 7*1024, 7, 1, 7*1024+1025)) * 1000
	if !near(st.TTFT.P99, burst, 1e-9) {
		t.Errorf("ttft %+v; the burst is %v ms", st.TTFT, burst)
	}
	// A budget of 2,048 tokens chunks the burst: the last of the 8 waits 4 steps.
	s2 := testLane(t, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true})
	st2, _ := s2.Run(Load{InputTokens: 1024, OutputTokens: 64, Concurrency: 8, Requests: 32})
	if st2.TTFT.P99 <= st.TTFT.P99 {
		t.Errorf("a smaller budget must delay the last of the burst: %v vs %v", st2.TTFT.P99, st.TTFT.P99)
	}
}

func TestRunConcurrencyAndOpenLoop(t *testing.T) {
	s := testLane(t, "Qwen/Qwen3-1.7B", "L40S", v1())
	l := Load{InputTokens: 1024, OutputTokens: 256, Concurrency: 1, Requests: 32}
	prev, _ := s.Run(l)
	for _, c := range []int{2, 4, 8, 16, 32} {
		l.Concurrency = c
		st, err := s.Run(l)
		if err != nil {
			t.Fatal(err)
		}
		if st.OutputTokenThroughput <= prev.OutputTokenThroughput || st.TPOT.P50 < prev.TPOT.P50 {
			t.Errorf("c=%d: throughput %v tpot %v not above c/2's %v %v", c, st.OutputTokenThroughput, st.TPOT.P50, prev.OutputTokenThroughput, prev.TPOT.P50)
		}
		prev = st
	}
	// Open loop far below capacity: the achieved rate is the offered rate.
	open := Load{InputTokens: 1024, OutputTokens: 256, Concurrency: 64, RequestRate: 0.5, Arrival: load.ArrivalConstant, Requests: 20}
	if st, _ := s.Run(open); !near(st.RequestThroughput, 20/(19/0.5+st.Latency.P50/1000), 1e-6) {
		t.Errorf("open loop at 0.5 req/s achieves %v (latency %v)", st.RequestThroughput, st.Latency.P50)
	}
	// Far above capacity the concurrency cap bounds it like a closed loop.
	open.RequestRate, open.Requests, open.Concurrency = 1e6, 256, 32
	capped, _ := s.Run(open)
	closed, _ := s.Run(Load{InputTokens: 1024, OutputTokens: 256, Concurrency: 32, Requests: 256})
	if !near(capped.RequestThroughput, closed.RequestThroughput, 0.02) {
		t.Errorf("saturated open loop %v vs closed loop at the cap %v", capped.RequestThroughput, closed.RequestThroughput)
	}
	// Poisson arrivals depend on the seed; the estimate averages the runs.
	open = Load{InputTokens: 512, OutputTokens: 64, RequestRate: 20, Requests: 64, Seed: 3}
	a, _ := s.Run(open)
	b, _ := s.Run(open)
	open.Seed = 4
	c, _ := s.Run(open)
	if a.TTFT != b.TTFT || a.TTFT == c.TTFT {
		t.Errorf("seeded arrivals: same seed %v vs %v, other seed %v", a.TTFT, b.TTFT, c.TTFT)
	}
	e, err := s.Estimate(Load{InputTokens: 512, OutputTokens: 64, RequestRate: 20, Requests: 64, Seed: 3}, 2)
	if err != nil || !near(e.TTFTP95Ms, (a.TTFT.P95+c.TTFT.P95)/2, 1e-9) {
		t.Errorf("estimate p95 %v, want the mean of %v and %v (%v)", e.TTFTP95Ms, a.TTFT.P95, c.TTFT.P95, err)
	}
}

// TestRunTurnaround: a single stream with a client turnaround sends each
// next request that much after the last token, so the window grows by it
// once per request after the first and the figures of each request stay.
func TestRunTurnaround(t *testing.T) {
	s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	l := Load{InputTokens: 1000, OutputTokens: 5, Concurrency: 1, Requests: 3}
	want, _ := s.Run(l)
	l.TurnaroundMs = 0.4
	got, err := s.Run(l)
	if err != nil {
		t.Fatal(err)
	}
	if !near(got.TTFT.P50, want.TTFT.P50, 1e-9) || !near(got.TPOT.P50, want.TPOT.P50, 1e-9) || !near(got.WindowSeconds, want.WindowSeconds+2*0.0004, 1e-9) {
		t.Errorf("turnaround 0.4 ms: ttft %+v window %v; without: %+v %v", got.TTFT, got.WindowSeconds, want.TTFT, want.WindowSeconds)
	}
}

// TestRunAtGivenSendTimes: an open loop replayed at given send times is
// the open loop whose schedule they are.
func TestRunAtGivenSendTimes(t *testing.T) {
	s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	l := Load{InputTokens: 512, OutputTokens: 64, Concurrency: 4, RequestRate: 30, Arrival: load.ArrivalPoisson, Requests: 40, Warmup: 2, Seed: 9}
	want, err := s.Run(l)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := load.NewArrivals(l.RequestRate, l.Arrival, 0, l.Seed)
	replay := l
	replay.RequestRate, replay.Arrival = 0, ""
	for range l.Requests {
		replay.Sends = append(replay.Sends, float64(a.Next())/1e9)
	}
	got, err := s.Run(replay)
	if err != nil {
		t.Fatal(err)
	}
	if got.TTFT != want.TTFT || got.Latency != want.Latency || got.Steps != want.Steps {
		t.Errorf("replayed sends: ttft %+v latency %+v steps %d; the schedule's: %+v %+v %d", got.TTFT, got.Latency, got.Steps, want.TTFT, want.Latency, want.Steps)
	}
	replay.Sends = replay.Sends[:10]
	if _, err := s.Run(replay); err == nil {
		t.Error("10 send times for 40 requests must be refused")
	}
}

func TestRunPreemptsUnderKVPressure(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-0.6B")
	h := hw("T4", 1)
	h.Assume.GPUMemoryUtilization = 0.2
	s, err := NewLane(m, h, v1(), 2048)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Run(Load{InputTokens: 400, OutputTokens: 400, Concurrency: 8, Requests: 8})
	if err != nil || st.Preemptions == 0 || st.Succeeded != 8 {
		t.Fatalf("preemptions %d, succeeded %d, err %v; the 8 requests need more KV cache than the %d blocks", st.Preemptions, st.Succeeded, err, s.Engine.KVBlocks)
	}
}

func TestWeightedDistIsNewDist(t *testing.T) {
	vals := []float64{3, 1, 1, 2, 2, 2, 9, 4}
	w := []weighted{{3, 1}, {1, 2}, {2, 3}, {9, 1}, {4, 1}}
	if a, b := NewDist(append([]float64{}, vals...)), weightedDist(w); a != b {
		t.Errorf("weighted %+v, plain %+v", b, a)
	}
}

// TestSkippingDecodesEqualsStepping: the virtual clock's shortcut through
// pure decode phases gives the figures of scheduling every step.
func TestSkippingDecodesEqualsStepping(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-0.6B")
	h := hw("T4", 1)
	h.Assume.GPUMemoryUtilization = 0.2 // tight: preemptions and block limits
	for _, e := range []EngineConfig{
		{MaxNumSeqs: 8, MaxBatchedTokens: 512, ChunkedPrefill: true},
		{MaxNumSeqs: 8, MaxBatchedTokens: 512, ChunkedPrefill: true, PrefixCaching: true},
		{MaxNumSeqs: 8, MaxBatchedTokens: 2048},
	} {
		s, err := NewLane(m, h, e, 2048)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("chunked=%v,prefix-caching=%v", e.ChunkedPrefill, e.PrefixCaching), func(t *testing.T) {
			skippingEqualsStepping(t, s)
		})
	}
}

func skippingEqualsStepping(t *testing.T, s Lane) {
	checkSkipping(t, s, []Load{
		{InputTokens: 700, OutputTokens: 300, Concurrency: 1, Requests: 4},
		{InputTokens: 300, OutputTokens: 500, Concurrency: 12, Requests: 30, RampUpMs: 50},
		{InputTokens: 200, OutputTokens: 200, Concurrency: 6, RequestRate: 30, Requests: 40, Seed: 2},
		// Requests waiting on the batch cap (20 streams, 8 running) and on
		// the KV cache (preemptions), through long decodes.
		{InputTokens: 100, OutputTokens: 900, Concurrency: 20, Requests: 60},
		{InputTokens: 600, OutputTokens: 1200, Concurrency: 8, Requests: 24},
	})
}

// TestSkippingDecodesEqualsSteppingAsync: the shortcut holds under async
// scheduling, whose decode phases last the engine's work for their
// sequences while it exceeds the GPU's and follow the growing attention
// once it does not (decodeLine's floor): a per-sequence cost that is
// always hidden, one that sets the pace for part of a phase, and one that
// always does.
func TestSkippingDecodesEqualsSteppingAsync(t *testing.T) {
	for _, us := range []float64{20, 400, 4000} {
		s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: 16, MaxBatchedTokens: 512, ChunkedPrefill: true})
		s.Hardware.Assume.StepSeqUs, s.Hardware.Assume.AsyncScheduling = us, true
		t.Run(fmt.Sprintf("%gus", us), func(t *testing.T) { skippingEqualsStepping(t, s) })
	}
}

// TestSkippingDecodesEqualsSteppingArchitectures: the shortcut holds for
// a mixture of experts (whose weight reads follow the batch), FP8 weights
// on tensor-parallel GPUs (all-reduces in every step) and a serial CPU.
func TestSkippingDecodesEqualsSteppingArchitectures(t *testing.T) {
	moe, _ := LookupModel("Qwen/Qwen3-30B-A3B")
	llama, _ := LookupModel("meta-llama/Llama-3.1-8B-Instruct")
	tiny, _ := LookupModel("Qwen/Qwen3-0.6B")
	fp8 := hw("L40S", 2).WithPrecision(arch.Precision{Quantization: "fp8", LinearBytes: 1, OtherBytes: 2, KVBytes: 1, Compute: "fp8"})
	for _, c := range []struct {
		m ModelArch
		h Hardware
	}{{moe, hw("H100", 1)}, {llama, fp8}, {tiny, hw("CPU", 1)}} {
		s, err := NewLane(c.m, c.h, EngineConfig{MaxNumSeqs: 16, MaxBatchedTokens: 512, ChunkedPrefill: true}, 2048)
		if err != nil {
			t.Fatal(err)
		}
		checkSkipping(t, s, []Load{
			{InputTokens: 300, OutputTokens: 200, Concurrency: 12, Requests: 24, RampUpMs: 50},
			{InputTokens: 200, OutputTokens: 100, Concurrency: 6, RequestRate: 30, Requests: 20, Seed: 2},
		})
	}
}

// checkSkipping runs each load on s scheduling every step and skipping
// pure decode phases, and compares the figures.
func checkSkipping(t *testing.T, s Lane, loads []Load) {
	t.Helper()
	for _, l := range loads {
		skipDecodePhases = false
		want, err1 := s.Run(l)
		skipDecodePhases = true
		got, err2 := s.Run(l)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		for name, pair := range map[string][2]Dist{"ttft": {got.TTFT, want.TTFT}, "tpot": {got.TPOT, want.TPOT}, "latency": {got.Latency, want.Latency}, "itl": {got.ITL, want.ITL}} {
			g, w := pair[0], pair[1]
			tol := 1e-6
			if name == "itl" {
				tol = 1e-3 // a value on a bin's edge may fall in its neighbour
			}
			if g.Count != w.Count || !near(g.P50, w.P50, tol) || !near(g.P95, w.P95, tol) || !near(g.P99, w.P99, tol) || !near(g.Mean, w.Mean, tol) {
				t.Errorf("%+v %s: skipping %+v, stepping %+v", l, name, g, w)
			}
		}
		if got.Steps != want.Steps || got.Preemptions != want.Preemptions || !near(got.OutputTokenThroughput, want.OutputTokenThroughput, 1e-9) {
			t.Errorf("%+v: steps %d/%d preemptions %d/%d throughput %v/%v", l, got.Steps, want.Steps, got.Preemptions, want.Preemptions, got.OutputTokenThroughput, want.OutputTokenThroughput)
		}
		t.Logf("%s on %dx %s %+v: %d steps (%d stepped, %d when stepping), %d preemptions", s.Model.ID, s.Hardware.Count, s.Hardware.GPU.Name, l, got.Steps, got.Stepped, want.Stepped, got.Preemptions)
	}
}

// BenchmarkLaneEstimate is one lane's estimate (the planner's cost per
// lane): a closed loop, a long decode-heavy closed loop and a Poisson
// open loop over 3 seeded runs.
func BenchmarkLaneEstimate(b *testing.B) {
	s := testLane(b, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true})
	for _, c := range []struct {
		name string
		l    Load
		runs int
	}{
		{"closed-c8", Load{InputTokens: 3919, OutputTokens: 295, Concurrency: 8, Requests: 32, Warmup: 1}, 3},
		{"decode-heavy-c4", Load{InputTokens: 3919, OutputTokens: 1377, Concurrency: 4, Requests: 32, Warmup: 1}, 3},
		{"poisson", Load{InputTokens: 512, OutputTokens: 128, Concurrency: 64, RequestRate: 20, Requests: 64, Warmup: 1, Seed: 3}, 3},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Estimate(c.l, c.runs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEstimateWorkDoesNotGrowWithOutputTokens counts the steps a virtual
// run schedules one by one (its work; the rest are skipped in closed
// form) as each request's output grows tenfold: with requests waiting for
// the batch cap (20 streams, 8 running) the work must stay flat. Before,
// any waiting request made every step of the run scheduled one by one.
func TestEstimateWorkDoesNotGrowWithOutputTokens(t *testing.T) {
	for _, e := range []EngineConfig{
		{MaxNumSeqs: 8, MaxBatchedTokens: 2048, ChunkedPrefill: true, PrefixCaching: true},
		{MaxNumSeqs: 8, MaxBatchedTokens: 8192},
	} {
		s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", e)
		var stepped [2]int
		for i, out := range []int{500, 5000} {
			st, err := s.Run(Load{InputTokens: 100, OutputTokens: out, Concurrency: 20, Requests: 60})
			if err != nil {
				t.Fatal(err)
			}
			if st.Preemptions > 0 {
				t.Fatalf("%d preemptions: the KV cache should hold the batch", st.Preemptions)
			}
			stepped[i] = st.Stepped
		}
		if stepped[1] > stepped[0]*3/2 {
			t.Errorf("chunked=%v: %d steps scheduled one by one at 500 output tokens, %d at 5000", e.ChunkedPrefill, stepped[0], stepped[1])
		}
		t.Logf("chunked=%v: stepped %d at 500 output tokens, %d at 5000", e.ChunkedPrefill, stepped[0], stepped[1])
	}
}

// TestEstimateSimulatesABoundedPart: whatever a run's warmup, requests and
// output tokens (at their bounds, docs/language/bounds.md), the estimate
// simulates at most maxSimulatedRequests requests of each phase and, past
// the first, maxSimulatedTokens output tokens, and scales the rest. Before,
// a warmup of 10000000 requests was simulated whole: 80 s and 2.4 GB for
// one lane's plan.
func TestEstimateSimulatesABoundedPart(t *testing.T) {
	for _, c := range []struct {
		l                  Load
		requests, warmup   int
		scale, warmupScale float64
	}{
		{Load{OutputTokens: 100, Requests: 500, Warmup: 10}, 500, 10, 1, 1},
		{Load{OutputTokens: 100, Requests: 10_000_000, Warmup: 10_000_000}, 10_000, 10_000, 1000, 1000},
		{Load{OutputTokens: 40_000, Requests: 1000, Warmup: 1}, 250, 1, 4, 1},
		{Load{OutputTokens: 10_000_000, Requests: 10_000_000, Warmup: 10_000_000}, 1, 1, 10_000_000, 10_000_000},
		{Load{Requests: 30, Sizes: []RequestSize{{Output: 9_000_000}, {Output: 2_000_000}, {Output: 5}}}, 2, 0, 15, 1},
	} {
		part, scale, warmupScale := simulated(c.l)
		if part.Requests != c.requests || part.Warmup != c.warmup || scale != c.scale || warmupScale != c.warmupScale {
			t.Errorf("%d requests (warmup %d) of %d output tokens: simulated %d (warmup %d), scales %g and %g; want %d (%d), %g and %g",
				c.l.Requests, c.l.Warmup, c.l.OutputTokens, part.Requests, part.Warmup, scale, warmupScale, c.requests, c.warmup, c.scale, c.warmupScale)
		}
	}
	// A lane's estimate with a warmup at its bound allocates little (a
	// count of work: the allocations, not the time).
	s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	l := Load{InputTokens: 64, OutputTokens: 16, Concurrency: 16, Requests: 100, Warmup: 10_000_000}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	e, err := s.Estimate(l, 1)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("the estimate allocated %d MiB", alloc>>20)
	}
	// The warmup's 10000000 requests take about 1000 times its simulated
	// 10000's time.
	part, _, _ := simulated(l)
	part.Requests = 0
	w, _ := s.Run(part)
	if !(e.RunSeconds > 999*w.WarmupEnd) {
		t.Errorf("run of %g s, the simulated warmup alone %g s", e.RunSeconds, w.WarmupEnd)
	}
}

// TestPreemptionRecomputesOnlyWhatWasEvicted: a burst of two long prompts
// on a KV cache that holds one of them and a part of the other, as
// GPUStack's 32,000-token bursts of Qwen3-32B on one A100 (vLLM 0.11,
// prefix caching on by default). The second preempts itself when the
// cache is full, waits with its blocks cached while the first decodes
// alone, and is readmitted with them hit: the burst takes about as long
// as the two requests one after the other (it overlaps a little), not
// the second's prefill chunks in every other decode step.
func TestPreemptionRecomputesOnlyWhatWasEvicted(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-32B")
	cfg := EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true, PrefixCaching: true, KVBlocks: 2000}
	s, err := NewLane(m, hw("A100-80GB", 1), cfg, 24000)
	if err != nil {
		t.Fatal(err)
	}
	run := func(sizes ...RequestSize) RunStats {
		st, err := s.Run(Load{Concurrency: len(sizes), Requests: len(sizes), Sizes: sizes, InputTokens: sizes[0].Input, OutputTokens: sizes[0].Output})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	first, second := RequestSize{Input: 20000, Output: 100}, RequestSize{Input: 20000, Output: 100}
	both := run(first, second)
	alone := run(first).DurationSeconds + run(second).DurationSeconds
	t.Logf("the burst took %.2f s with %d preemptions; the requests one after the other %.2f s", both.DurationSeconds, both.Preemptions, alone)
	if both.Preemptions == 0 || both.DurationSeconds > 1.01*alone {
		t.Errorf("the burst took %.2f s with %d preemptions; the requests one after the other %.2f s", both.DurationSeconds, both.Preemptions, alone)
	}
}

// bins returns the histogram's nonzero bins and their counts.
func (h *itlHist) bins() map[int32]int {
	out := map[int32]int{}
	for i, n := range h.counts {
		if n != 0 {
			out[h.lo+int32(i)] = n
		}
	}
	for b, n := range h.far {
		out[b] += n
	}
	return out
}

// TestITLHistCountsAsAMap: the histogram's slice and map of far bins count
// every bin as a map of bins would, whichever way its bins spread (up,
// down, beyond the slice's bound, to the ends of int32) and after reset.
func TestITLHistCountsAsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h itlHist
	for round := range 200 {
		h.reset()
		want := map[int32]int{}
		base := int32(rng.IntN(20_000) - 10_000)
		for range rng.IntN(300) {
			b := base + int32(rng.IntN(40)-20)
			switch rng.IntN(20) {
			case 0:
				b = base - int32(rng.IntN(3*maxDenseBins))
			case 1:
				b = base + int32(rng.IntN(3*maxDenseBins))
			case 2:
				b = []int32{math.MinInt32, math.MaxInt32}[rng.IntN(2)]
			}
			n := 1 + rng.IntN(5)
			h.addBin(b, n)
			want[b] += n
		}
		if got := h.bins(); !maps.Equal(got, want) {
			t.Fatalf("round %d: %v, want %v", round, got, want)
		}
		if len(h.counts) > maxDenseBins {
			t.Fatalf("round %d: %d bins in the slice", round, len(h.counts))
		}
		w := h.weights(nil)
		if len(w) != len(want) {
			t.Fatalf("round %d: %d weights for %d bins", round, len(w), len(want))
		}
		byValue := map[float64]int{}
		for b, n := range want {
			byValue[binCentreMs(b)] += n
		}
		for _, x := range w {
			byValue[x.v] -= x.n
		}
		for v, n := range byValue {
			if n != 0 {
				t.Fatalf("round %d: the weights of %v ms are off by %d", round, v, n)
			}
		}
	}
}

// TestReusedEngineLeavesNoTrace: the virtual runs of a plan reuse one
// engine, scheduler and step from phase to phase (Engine.reset), so a
// run must not depend on what ran before it. Runs that preempt (a small KV
// cache, with and without prefix caching), keep a prefix cache, run an
// open loop, prefill whole prompts or use a batching front end, each run
// after each of the others, give the figures they give on their own.
func TestReusedEngineLeavesNoTrace(t *testing.T) {
	shared := make([]RequestSize, 24)
	for i := range shared {
		shared[i] = RequestSize{Input: 900 + 10*i, Output: 40 + i, Prefix: uint64(1 + i%3), PrefixTokens: 600}
	}
	type run struct {
		s Lane
		l Load
	}
	small := func(e EngineConfig, blocks int) Lane { // too small for 8 streams: preemptions
		s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", e)
		s.Engine.KVBlocks = blocks
		return s
	}
	batching := testLane(t, "Qwen/Qwen3-0.6B", "H100", v1())
	batching.Hardware.Assume.FrontEndAdmitUs, batching.Hardware.Assume.FrontEndTokenUs = 300, 20
	runs := []run{
		{small(v1(), 600), Load{InputTokens: 2000, OutputTokens: 900, Concurrency: 8, Requests: 24, Warmup: 2}},
		{small(EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 8192, ChunkedPrefill: true, PrefixCaching: true}, 400), Load{Sizes: shared, Concurrency: 8, Requests: 24}},
		{testLane(t, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 8192, ChunkedPrefill: true, PrefixCaching: true}), Load{Sizes: shared, Concurrency: 4, Requests: 24, Warmup: 3, WarmupSizes: shared[:3]}},
		{testLane(t, "Qwen/Qwen3-0.6B", "L40S", EngineConfig{MaxNumSeqs: 16, MaxBatchedTokens: 8192}), Load{InputTokens: 700, OutputTokens: 60, Concurrency: 32, RequestRate: 40, Requests: 48, Seed: 5}},
		{batching, Load{InputTokens: 300, OutputTokens: 50, Concurrency: 16, Requests: 40, Warmup: 1}},
	}
	alone := make([]RunStats, len(runs))
	for i, r := range runs {
		var err error
		if alone[i], err = r.s.Run(r.l); err != nil {
			t.Fatal(err)
		}
	}
	if alone[0].Preemptions == 0 || alone[1].Preemptions == 0 {
		t.Fatalf("preemptions %d and %d: the small caches must preempt", alone[0].Preemptions, alone[1].Preemptions)
	}
	for i, before := range runs {
		for j, r := range runs {
			if _, err := before.s.Run(before.l); err != nil {
				t.Fatal(err)
			}
			got, err := r.s.Run(r.l)
			if err != nil {
				t.Fatal(err)
			}
			if got != alone[j] {
				t.Errorf("run %d after run %d: %+v, on its own %+v", j, i, got, alone[j])
			}
		}
	}
}

// The mean TTFT's parts add up to it and are where the time goes: one
// stream pays the front end's request overhead and one prefill step and
// never queues; a burst of 200 requests into a batch of 8 spends most of
// its TTFT queued in the engine; a one-process front end (vLLM 0.8 and
// later's completions) holding a burst of 100 makes the front end the
// larger part.
func TestTTFTPartsSplitTheMeanTTFT(t *testing.T) {
	s := testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	one, err := s.Run(Load{InputTokens: 1000, OutputTokens: 5, Concurrency: 1, Requests: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := one.TTFTParts
	prefill := 1000 * StepSeconds(s.Model, s.Hardware, 1000, 0, 1000)
	if !near(p.MeanMs, one.TTFT.Mean, 1e-9) || !near(p.FrontEndMs, s.Hardware.Assume.RequestOverheadMs, 1e-9) || p.QueuedMs != 0 || !near(p.PrefillMs, prefill, 1e-9) {
		t.Errorf("one stream: %+v, TTFT mean %g ms, prefill step %g ms", p, one.TTFT.Mean, prefill)
	}

	small := v1()
	small.MaxNumSeqs = 8
	s = testLane(t, "Qwen/Qwen3-0.6B", "L40S", small)
	burst, err := s.Run(Load{InputTokens: 512, OutputTokens: 64, Concurrency: 200, Requests: 200})
	if err != nil {
		t.Fatal(err)
	}
	p = burst.TTFTParts
	if !near(p.MeanMs, burst.TTFT.Mean, 1e-9) || p.QueuedMs < 0.8*p.MeanMs || p.FrontEndMs <= 0 || p.PrefillMs <= 0 {
		t.Errorf("a burst into a batch of 8: %+v, TTFT mean %g ms", p, burst.TTFT.Mean)
	}

	s = testLane(t, "Qwen/Qwen3-0.6B", "L40S", v1())
	o, _ := FrontEnd("vllm", "0.19.0", "completions")
	o.Apply(&s.Hardware.Assume, s.Hardware.GPU)
	front, err := s.Run(Load{InputTokens: 128, OutputTokens: 128, Concurrency: 100, Requests: 100})
	if err != nil {
		t.Fatal(err)
	}
	p = front.TTFTParts
	t.Logf("one stream %+v; burst into 8 %+v; through the front end %+v", one.TTFTParts, burst.TTFTParts, p)
	if !near(p.MeanMs, front.TTFT.Mean, 1e-9) || p.FrontEndMs < p.QueuedMs+p.PrefillMs {
		t.Errorf("a burst through a one-process front end: %+v, TTFT mean %g ms", p, front.TTFT.Mean)
	}
}
