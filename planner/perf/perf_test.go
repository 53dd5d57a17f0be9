package perf

import (
	"math"
	"testing"
)

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

func TestCatalogLookups(t *testing.T) {
	for name, want := range map[string]string{"L40S": "L40S", "l40s": "L40S", " h100 ": "H100", "H100-SXM": "H100", "A100": "A100-40GB", "a10g": "A10"} {
		g, ok := LookupGPU(name)
		if !ok || g.Name != want {
			t.Errorf("LookupGPU(%q) = %q, %v; want %q", name, g.Name, ok, want)
		}
	}
	if _, ok := LookupGPU("TPUv5"); ok {
		t.Error("unknown GPU found")
	}
	if n := GPUNames(); len(n) != 10 || n[0] != "T4" || n[8] != "B200" || n[9] != "CPU" {
		t.Errorf("GPUNames = %v", n)
	}
	// Published figures of design section 8.
	l40s, _ := LookupGPU("L40S")
	if l40s.MemoryGB != 48 || l40s.BandwidthGBs != 864 || l40s.BF16TFLOPS != 362 || l40s.PricePerSecond != 0.000542 {
		t.Errorf("L40S = %+v", l40s)
	}
	m, ok := LookupModel("qwen/qwen3-0.6b")
	if !ok || m.Params != 596_049_920 || m.Layers != 28 || m.KVHeads != 8 || m.HeadDim != 128 || m.MaxPositions != 40_960 {
		t.Errorf("Qwen3-0.6B = %+v", m)
	}
	if ids := ModelIDs(); len(ids) < 6 || ids[0] > ids[1] {
		t.Errorf("ModelIDs = %v", ids)
	}
}

func TestModelBytes(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-0.6B")
	// 2 x 28 layers x 8 KV heads x 128 x 2 bytes
	if got := m.KVBytesPerToken(2); got != 114_688 {
		t.Errorf("KV bytes per token = %v", got)
	}
	if got := m.WeightBytes(2); got != 2*596_049_920 {
		t.Errorf("weight bytes = %v", got)
	}
}

func hw(gpu string, count int) Hardware {
	g, _ := LookupGPU(gpu)
	return Hardware{GPU: g, Count: count, BytesPerElem: 2, Assume: DefaultAssumptions(g)}
}

func TestStepSecondsRoofline(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-0.6B")
	h := hw("L40S", 1)
	// One decode step of one short sequence is memory-bound: the weights
	// read once at 80% of 864 GB/s, plus 1 ms of step overhead.
	want := m.WeightBytes(2)/(864e9*0.8) + 0.001
	if got := StepSeconds(m, h, 0, 1, 100); !near(got, want+100*m.KVBytesPerToken(2)/(864e9*0.8), 1e-9) {
		t.Errorf("decode step = %v, want %v", got, want)
	}
	// A long prefill is compute-bound: 2 x params x tokens at 32% of 362 TFLOPS.
	want = 2*float64(m.Params)*8192/(362e12*0.32) + 0.001
	if got := StepSeconds(m, h, 8192, 0, 0); !near(got, want, 1e-9) {
		t.Errorf("prefill step = %v, want %v", got, want)
	}
	if StepSeconds(m, h, 0, 0, 0) != 0 {
		t.Error("an empty step takes time")
	}
	// Two GPUs (tensor parallel) halve both rooflines.
	one, two := StepSeconds(m, h, 8192, 0, 0)-0.001, StepSeconds(m, hw("L40S", 2), 8192, 0, 0)-0.001
	if !near(one/two, 2, 1e-9) {
		t.Errorf("tensor parallel speedup %v", one/two)
	}
}

func TestCapacityAndStartup(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-8B")
	if got := KVCapacityTokens(m, hw("T4", 1)); got != 0 {
		t.Errorf("8B weights do not fit a T4, capacity %v", got)
	}
	h := hw("H100", 1)
	want := (80e9*0.9 - m.WeightBytes(2) - 1.5e9) / m.KVBytesPerToken(2)
	if got := KVCapacityTokens(m, h); !near(got, want, 1e-12) {
		t.Errorf("H100 capacity %v, want %v", got, want)
	}
	if got := StartupSeconds(m, h); !near(got, m.WeightBytes(2)/2e9+45, 1e-12) {
		t.Errorf("startup %v", got)
	}
}

func TestEstimateWorkload(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-1.7B")
	h := hw("L40S", 1)
	w := Workload{InputTokens: 1024, OutputTokens: 256, Concurrency: 1, Requests: 32}
	prev := EstimateWorkload(m, h, w)
	if prev.TTFTMs <= 0 || prev.TPOTMs <= 0 || !near(prev.LatencyMs, prev.TTFTMs+255*prev.TPOTMs, 1e-9) {
		t.Fatalf("c=1 estimate %+v", prev)
	}
	if !near(prev.RunSeconds, 32/prev.RequestThroughput, 1e-9) || !near(prev.OutputTokenThroughput, 256*prev.RequestThroughput, 1e-9) {
		t.Errorf("throughputs inconsistent: %+v", prev)
	}
	// More concurrency: more throughput, slower tokens (batching).
	for _, c := range []int{2, 4, 8, 16, 32} {
		w.Concurrency = c
		e := EstimateWorkload(m, h, w)
		if e.OutputTokenThroughput <= prev.OutputTokenThroughput || e.TPOTMs < prev.TPOTMs {
			t.Errorf("c=%d: %+v not above c/2 %+v", c, e, prev)
		}
		prev = e
	}
	// Open loop below capacity: achieved rate is the offered rate.
	w.Concurrency, w.RequestRate = 64, 0.5
	if e := EstimateWorkload(m, h, w); !near(e.RequestThroughput, 0.5, 1e-9) {
		t.Errorf("open loop at 0.5 req/s achieves %v", e.RequestThroughput)
	}
	// Far above capacity, the concurrency cap bounds it.
	w.RequestRate = 1e6
	capped := EstimateWorkload(m, h, w)
	w.RequestRate = 0
	closed := EstimateWorkload(m, h, w)
	if !near(capped.RequestThroughput, closed.RequestThroughput, 0.05) {
		t.Errorf("saturated open loop %v vs closed loop at the cap %v", capped.RequestThroughput, closed.RequestThroughput)
	}
}

func TestTTFTP95(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-0.6B")
	h := hw("L40S", 1)
	overhead := h.Assume.RequestOverheadMs / 1000
	// 8 of 32 requests open the run together: their joint prefill is the p95.
	e := EstimateWorkload(m, h, Workload{InputTokens: 1024, OutputTokens: 128, Concurrency: 8, Requests: 32})
	if want := (StepSeconds(m, h, 8*1024, 0, 0) + overhead) * 1000; !near(e.TTFTP95Ms, want, 1e-9) || e.TTFTP95Ms <= e.TTFTMs {
		t.Errorf("burst p95 %v, want %v (mean %v)", e.TTFTP95Ms, want, e.TTFTMs)
	}
	// 8 of 1,000: the opening burst is under 5% of the run; steady state sets it.
	e = EstimateWorkload(m, h, Workload{InputTokens: 1024, OutputTokens: 128, Concurrency: 8, Requests: 1000})
	decode := (e.TTFTMs/1000 - StepSeconds(m, h, 1024, 0, 0) - overhead) * 2
	if want := (StepSeconds(m, h, 1024, 0, 0) + overhead + 0.95*decode) * 1000; !near(e.TTFTP95Ms, want, 1e-6) {
		t.Errorf("steady p95 %v, want %v", e.TTFTP95Ms, want)
	}
	// One stream never waits: p95 is the prefill.
	e = EstimateWorkload(m, h, Workload{InputTokens: 1024, OutputTokens: 128, Concurrency: 1, Requests: 32})
	if !near(e.TTFTP95Ms, e.TTFTMs, 1e-9) {
		t.Errorf("c=1 p95 %v != mean %v", e.TTFTP95Ms, e.TTFTMs)
	}
}
