package perf

import (
	"math"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang/engine"
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
	if l40s.MemoryGB != gib(44.42) || l40s.BandwidthGBs != 864 || l40s.BF16TFLOPS != 362 || l40s.PricePerSecond != 0.000542 {
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
	// read once at 80% of 864 GB/s, then the attention kernel reads the KV
	// cache, plus the multiplies' fixed time of its 28 layers
	// (layerMultiplyUs) and 1 ms of step overhead. (The L40S's MFU
	// includes the elementwise kernels: TestElementwiseBytesOfAToken.)
	want := m.WeightBytes(2)/(864e9*0.8) + 28*layerMultiplyUs/1e6 + 0.001
	if got := StepSeconds(m, h, 0, 1, 100); !near(got, want+100*m.KVBytesPerToken(2)/(864e9*0.8), 1e-9) {
		t.Errorf("decode step = %v, want %v", got, want)
	}
	// A long prefill is compute-bound: 2 FLOPs per parameter per token at
	// 32% of 362 TFLOPS times the efficiency of the model's 15.7M-parameter
	// layers (GEMMEfficiency: 0.85 on an L40S), the output projection (tied to the 151,936 x 1,024
	// embedding) only for the one token that produces logits; attention's
	// own FLOPs come on top (TestAttentionFLOPsOfAPrefill), left out here.
	emb := 151_936.0 * 1024
	eff := m.GEMMEfficiency(h)
	want = 2*((float64(m.Params)-emb)*8192+emb)/(362e12*0.32*eff) + 0.001
	weightsOnly := h
	weightsOnly.Assume.OmitAttention = true
	if got := StepSeconds(m, weightsOnly, 8192, 0, 0); !near(got, want, 1e-9) {
		t.Errorf("prefill step = %v, want %v", got, want)
	}
	if StepSeconds(m, h, 0, 0, 0) != 0 {
		t.Error("an empty step takes time")
	}
	// Two GPUs (tensor parallel) halve both rooflines, each GPU's half
	// layers run their multiplies less efficiently, and they add two
	// all-reduces a layer of the step's 8,192 x 1,024 16-bit activations:
	// a ring over two GPUs moves half of each over PCIe 4.0 (32 GB/s at
	// 70%), after 25 µs. The attention left out above is split evenly.
	weightsOnly2 := hw("L40S", 2)
	weightsOnly2.Assume.OmitAttention = true
	one, two := StepSeconds(m, weightsOnly, 8192, 0, 0)-0.001, StepSeconds(m, weightsOnly2, 8192, 0, 0)-0.001
	comm := 2 * 28 * (25e-6 + 8192*1024*2.0/(32e9*0.7))
	eff2 := m.GEMMEfficiency(weightsOnly2)
	if !near(one/(two-comm), 2*eff2/eff, 1e-9) || eff2 >= eff || one/two >= 2 {
		t.Errorf("tensor parallel: one GPU %v, two %v (all-reduces %v)", one, two, comm)
	}
}

// One token's elementwise kernels, counted by hand for Qwen3-0.6B (28
// layers, hidden 1,024, 16 query heads and 8 KV heads of 128 with
// per-head norms, an MLP of 3,072): two norms and the residual add read
// and write 7 x 1,024 elements on every GPU; rotary embedding and the
// per-head norms read and write the queries and keys, 2 x 2 x 3,072; the
// gated activation reads two and writes one of 3,072. Two GPUs split the
// last two. 16-bit elements.
func TestElementwiseBytesOfAToken(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-0.6B")
	if got, want := m.ElementwiseBytesPerToken(hw("L40S", 1)), 28*2*(7*1024+4*3072+3*3072.0); got != want || want != 1_605_632 {
		t.Errorf("one GPU: %v bytes, want %v", got, want)
	}
	if got, want := m.ElementwiseBytesPerToken(hw("L40S", 2)), 28*2*(7*1024+(4*3072+3*3072)/2.0); got != want || want != 1_003_520 {
		t.Errorf("two GPUs: %v bytes, want %v", got, want)
	}
	// Without a config's MLP width it is what the layers' parameters
	// leave after attention's projections (and the norms' few weights).
	bare := m
	bare.MLPWidth = 0
	if got := bare.mlpWidth(); math.Abs(got-3072) > 3 {
		t.Errorf("MLP width from the parameters: %v, want about 3,072", got)
	}
	// A mixture of experts counts the experts a token reaches.
	moe, _ := LookupModel("Qwen/Qwen3-30B-A3B")
	if moe.MLPWidth != 8*768 {
		t.Errorf("Qwen3-30B-A3B: MLP width %d, want 8 experts x 768", moe.MLPWidth)
	}
	// An H100 moves them at half its peak bandwidth after the step's
	// other kernels: a decode step of one token grows by that much.
	h := hw("H100", 1)
	if got, want := m.elementwiseSeconds(h), 1_605_632/(3350e9*0.5); !near(got, want, 1e-12) {
		t.Errorf("H100: %v s a token, want %v", got, want)
	}
	without := h
	without.GPU.ElementwiseEfficiency = 0
	if got, want := StepSeconds(m, h, 0, 1, 100)-StepSeconds(m, without, 0, 1, 100), 1_605_632/(3350e9*0.5); !near(got, want, 1e-12) {
		t.Errorf("H100 decode step: %v s for the elementwise kernels, want %v", got, want)
	}
	// Where the catalog's MFU is an end-to-end figure that includes them
	// (the GDDR parts' llm-d figure, the CPU's fit) they are not costed
	// apart.
	for _, gpu := range []string{"L40S", "L4", "A10", "T4", "CPU"} {
		if got := m.elementwiseSeconds(hw(gpu, 1)); got != 0 {
			t.Errorf("%s: %v s", gpu, got)
		}
	}
}

func TestCapacityAndStartup(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-8B")
	if got := KVCapacityTokens(m, hw("T4", 1)); got != 0 {
		t.Errorf("8B weights do not fit a T4, capacity %v", got)
	}
	// An H100's memory is what vLLM's profile reports as total_gpu_memory,
	// 79.22 GiB (vllm-project/vllm PR 10511), not the nominal 80e9 bytes.
	h := hw("H100", 1)
	want := (79.22*(1<<30)*0.9 - m.WeightBytes(2) - 1.5e9) / m.KVBytesPerToken(2)
	if got := KVCapacityTokens(m, h); !near(got, want, 1e-12) {
		t.Errorf("H100 capacity %v, want %v", got, want)
	}
	if got := StartupSeconds(m, h); !near(got, m.WeightBytes(2)/2e9+45, 1e-12) {
		t.Errorf("startup %v", got)
	}
}

// TestMaxModelLenWithinTheReserve: GPUStack served Qwen3-32B on one H100
// with vLLM 0.11's defaults (max model len 40,960), so a KV cache that
// holds one such request only without the catalog's activation reserve
// plans with StartRisk set; one that cannot hold it even without the
// reserve is refused, as is a KV cache the runtime sized itself.
func TestMaxModelLenWithinTheReserve(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-32B")
	rs, err := ResolveRuntime(engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: "0.11.0"}, hw("H100", 1).GPU, 1, 40960)
	if err != nil {
		t.Fatal(err)
	}
	h := hw("H100", 1)
	if c := KVCapacityTokens(m, h); c >= 40960 {
		t.Fatalf("capacity %v: the case needs one under 40,960", c)
	}
	l, err := NewLane(m, h, rs.Engine(), 40960)
	if err != nil || !strings.Contains(l.StartRisk, "may refuse to start") || !strings.Contains(l.StartRisk, "40960") ||
		!strings.Contains(l.StartRisk, "the reserve is the sampler's start-up profile: 1024 sequences x 151936 vocabulary entries, which a lower --max-num-seqs shrinks") {
		t.Errorf("40,960 tokens: err %v, start risk %q", err, l.StartRisk)
	}
	// A server that started holds one request of max model len: the lane
	// plans with that cache, not the smaller one the reserve leaves.
	if got := l.Engine.KVBlocks * l.Engine.BlockSize; got < 40960 || got >= 40960+l.Engine.BlockSize {
		t.Errorf("a lane at risk of not starting plans with %d tokens of cache, want the 40,960 a started server holds", got)
	}
	if _, err := NewLane(m, h, rs.Engine(), 50000); err == nil || !strings.Contains(err.Error(), "fewer than max model len 50000") {
		t.Errorf("50,000 tokens fit nowhere, err %v", err)
	}
	e := rs.Engine()
	e.KVBlocks = 40000 / e.BlockSize
	if _, err := NewLane(m, h, e, 40960); err == nil {
		t.Error("a KV cache of given size smaller than max model len was accepted")
	}
	if l, err := NewLane(m, h, rs.Engine(), 24576); err != nil || l.StartRisk != "" {
		t.Errorf("24,576 tokens fit: err %v, start risk %q", err, l.StartRisk)
	}
}

// TestSamplerProfileSizesTheReserve: vLLM profiles its sampler at start-up
// on max_num_seqs requests over the whole vocabulary and keeps that peak
// from the KV cache. gpt-oss-120b (201,088 entries) on one H100 under
// vLLM 0.11's defaults (1,024 sequences) keeps about 5.4 GB, so the cache
// holds one of GPUStack's 32,000/100 requests and not two (the burst's
// measured TPOT, 24 ms, is a decode with no prefill beside it); with the
// catalog's 1.5 GB alone it held five. Qwen3-14B on an A100 (256
// sequences) keeps the catalog's 1.5 GB, and the plan says which it is.
func TestSamplerProfileSizesTheReserve(t *testing.T) {
	m, _ := LookupModel("openai/gpt-oss-120b")
	g, _ := LookupGPU("H100")
	rt := engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: "0.11.0"}
	h, rs, err := CatalogServer(m.ID, g, 1, rt, "completions", 32768)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLane(m, h, rs.Engine(), 32768)
	if err != nil {
		t.Fatal(err)
	}
	if r := l.Hardware.Assume.ActivationReserveGB; math.Abs(r-(0.5+24*1024*201088/1e9)) > 1e-9 {
		t.Errorf("reserve %.3f GB, want the sampler profile's %.3f", r, 0.5+24*1024*201088/1e9)
	}
	one, held := l.Engine.KVTokens(32100), float64(l.Engine.KVBlocks*l.Engine.BlockSize)
	if held < one || held >= 2*one {
		t.Errorf("the cache holds %.0f tokens: want one request of 32,100 (%.0f) and not two", held, one)
	}
	if !strings.Contains(l.ReserveSource(), "1024 sequences x 201088 vocabulary entries") {
		t.Errorf("reserve source %q", l.ReserveSource())
	}
	q, _ := LookupModel("Qwen/Qwen3-14B")
	a, _ := LookupGPU("A100-80GB")
	h, rs, err = CatalogServer(q.ID, a, 1, rt, "chat", 40960)
	if err != nil {
		t.Fatal(err)
	}
	if l, err = NewLane(q, h, rs.Engine(), 40960); err != nil || l.Hardware.Assume.ActivationReserveGB != 1.5 || l.ReserveSource() != "" {
		t.Errorf("Qwen3-14B on an A100 at 256 sequences: err %v, reserve %.3f GB (%q), want the catalog's 1.5", err, l.Hardware.Assume.ActivationReserveGB, l.ReserveSource())
	}
}

// StepPartsOf splits exactly the step StepTime costs: its Total is
// StepTime's, and the parts that count (the larger of each overlapping
// pair, both on a serial processor) add up to it, for a dense model and a
// mixture of experts, on one GPU and over NVLink, prefilling and
// decoding, with async scheduling's overlap, with eager steps' kernel
// launches, and on the CPU. A step's parts are those of its kind: a dense
// model has no routed experts, one GPU no all-reduces, a graphed step no
// launches.
func TestStepPartsAddUpToTheStep(t *testing.T) {
	type step struct{ prefill, prefillSeqs, decodes int }
	steps := []step{{0, 0, 1}, {0, 0, 256}, {2048, 1, 0}, {1792, 2, 256}}
	for _, c := range []struct {
		model string
		h     Hardware
		async bool
		eager EagerSteps
	}{
		{"Qwen/Qwen3-8B", hw("H100", 1), false, EagerNone},
		{"Qwen/Qwen3-8B", hw("H100", 1), true, EagerNone},
		{"Qwen/Qwen3-8B", hw("H100", 4), true, EagerAll},
		{"Qwen/Qwen3-30B-A3B", hw("A100-80GB", 4), false, EagerUncaptured},
		{"Qwen/Qwen3-0.6B", hw("CPU", 1), false, EagerNone},
	} {
		m, ok := LookupModel(c.model)
		if !ok {
			t.Fatalf("%s is not in the catalog", c.model)
		}
		c.h.Assume.AsyncScheduling, c.h.Assume.StepSeqUs = c.async, 65
		if c.eager != EagerNone {
			c.h.Assume.EagerSteps, c.h.Assume.EagerLayerUs = c.eager, eagerLayerUs
		}
		launched := false
		for _, s := range steps {
			kv := float64(s.prefill + 700*s.decodes)
			p := StepPartsOf(m, c.h, s.prefill, s.prefillSeqs, s.decodes, kv)
			want := StepTime(m, c.h, s.prefill, s.prefillSeqs, s.decodes, kv)
			gemm, attn := math.Max(p.Multiplies, p.WeightReads+p.MultiplyFixed), math.Max(p.Attention, p.KVReads)
			if p.Serial {
				gemm, attn = p.Multiplies+p.WeightReads+p.MultiplyFixed, p.Attention+p.KVReads
			}
			sum := gemm + p.ExpertMultiplies + p.ExpertReads + attn + p.Elementwise + p.AllReduces + p.Launches + p.Engine
			launched = launched || p.Launches > 0
			name := c.model + " on " + c.h.GPU.Name
			if p.Total != want || !near(sum, want, 1e-12) || want <= 0 {
				t.Errorf("%s %+v: parts %+v add to %g, total %g, StepTime %g", name, s, p, sum, p.Total, want)
			}
			if (p.ExpertMultiplies > 0) != m.RoutesExperts() || (p.AllReduces > 0) != (c.h.Count > 1) || p.Serial != c.h.GPU.Serial || p.Engine <= 0 || p.Launches < 0 {
				t.Errorf("%s %+v: parts %+v", name, s, p)
			}
		}
		// Some step of these outlasts its GPU work in launches exactly
		// when steps run eager (the lone decode does, on four H100s).
		if launched != (c.eager == EagerAll) {
			t.Errorf("%s on %s, eager steps %q: launches outlasting the GPU's work: %v", c.model, c.h.GPU.Name, c.eager, launched)
		}
	}
	if p := StepPartsOf(ModelArch{}, hw("H100", 1), 0, 0, 0, 0); p != (StepParts{}) {
		t.Errorf("an empty step: %+v", p)
	}
}

// The reference steps plan -verbose shows are the engine's: a decode step
// holds at most its batch cap and what its KV cache holds, a prefill chunk
// at most its token budget.
func TestReferenceStepsStayWithinTheEngine(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-8B")
	l, err := NewLane(m, hw("L40S", 1), EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 2048, ChunkedPrefill: true}, 8192)
	if err != nil {
		t.Fatal(err)
	}
	kv := l.Engine.KVBlocks * l.Engine.BlockSize
	for _, c := range []struct{ concurrency, ctx, want int }{
		{8, 1000, 8},      // the requests in flight
		{1000, 100, 256},  // the batch cap
		{0, 100, 256},     // an open loop: the batch cap
		{64, kv / 10, 10}, // what the KV cache holds
		{64, 10 * kv, 1},  // one request at least
	} {
		seqs, p := l.DecodeStep(c.concurrency, c.ctx)
		if seqs != c.want || p.Total != StepTime(m, l.Hardware, 0, 0, seqs, float64(seqs*c.ctx)) {
			t.Errorf("DecodeStep(%d, %d) = %d sequences, %g s; want %d", c.concurrency, c.ctx, seqs, p.Total, c.want)
		}
	}
	if chunk, p := l.PrefillChunk(5000); chunk != 2048 || p.Total != StepTime(m, l.Hardware, 2048, 1, 0, 2048) {
		t.Errorf("PrefillChunk(5000) = %d tokens, %g s", chunk, p.Total)
	}
	if chunk, _ := l.PrefillChunk(300); chunk != 300 {
		t.Errorf("PrefillChunk(300) = %d tokens", chunk)
	}
}
