package perf

import (
	"math"
	"testing"
)

// A long prefill's attention: 2 x 2 x heads x head_dim FLOPs a layer for
// each of the n(n+1)/2 causal query-key pairs, besides the weights' 2
// FLOPs a parameter a token, at the same MFU; grouped-query attention
// (fewer KV heads) does not reduce it. The catalog's assumptions count it.
func TestAttentionFLOPsOfAPrefill(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-0.6B") // 28 layers, 16 heads of 128
	h := hw("L40S", 1)
	emb := 151_936.0 * 1024
	linear := 2 * ((float64(m.Params)-emb)*8192 + emb)
	attention := 4.0 * 16 * 128 * 28 * 8192 * 8193 / 2
	// The weights' multiplies run at the MFU times the efficiency of
	// the model's small layers (GEMMEfficiency); attention at the MFU.
	eff := m.GEMMEfficiency(h)
	elementwise := 8192 * m.elementwiseSeconds(h)
	want := linear/(362e12*0.32*eff) + attention/(362e12*0.32) + elementwise + 0.001
	if got := StepSeconds(m, h, 8192, 0, 0); !near(got, want, 1e-9) {
		t.Errorf("prefill step = %v, want %v (%v without attention)", got, want, linear/(362e12*0.32*eff)+0.001)
	}
	mha := m
	mha.KVHeads = mha.Heads
	// (Only the elementwise kernels read and write the wider keys.)
	if a, b := StepSeconds(m, h, 8192, 0, 0)-elementwise, StepSeconds(mha, h, 8192, 0, 0)-8192*mha.elementwiseSeconds(h); !near(a, b, 1e-12) {
		t.Errorf("8 KV heads %v, 16 KV heads %v: grouped-query attention must not change the FLOPs", a, b)
	}
	// Two GPUs split the heads: half the attention each.
	two := hw("L40S", 2)
	comm := m.allReduceOf(two).seconds(8192)
	if got := StepSeconds(m, two, 8192, 0, 0) - comm - 0.001 - 8192*m.elementwiseSeconds(two); !near(got, linear/2/(362e12*0.32*m.GEMMEfficiency(two))+attention/2/(362e12*0.32), 1e-9) {
		t.Errorf("two GPUs: %v", got)
	}
	// A decode attends to its KV cache: 4 x heads x head_dim x layers a
	// cached token, at the compute roof beside the reads.
	c := m.stepCost(h, 1, 1)
	if got, want := c.attend*1000, 4.0*16*128*28*1000/(362e12*0.32); !near(got, want, 1e-12) {
		t.Errorf("a decode over 1,000 tokens: attention %v s, want %v", got, want)
	}
}

// Causal pairs: a prompt prefilled in chunks attends to as many pairs as
// in one piece, a decoded token to its whole KV cache (KVTokens), and a
// sliding-window layer to at most its window.
func TestAttendedPairs(t *testing.T) {
	brute := func(c EngineConfig, before, n int) float64 {
		var sum float64
		for p := before + 1; p <= before+n; p++ {
			full := float64(p)
			sum += full
			if c.windowed() && p > c.SlidingWindow {
				sum -= float64(c.SlidingLayers) * float64(p-c.SlidingWindow) / float64(c.KVLayers)
			}
		}
		return sum
	}
	for _, c := range []EngineConfig{{}, {SlidingWindow: 512, SlidingLayers: 3, KVLayers: 4}} {
		var chunks float64
		for before := 0; before < 10_000; before += 2048 {
			n := min(2048, 10_000-before)
			got := c.Attended(before, n)
			if want := brute(c, before, n); !near(got, want, 1e-12) {
				t.Errorf("%+v: chunk of %d after %d attends %v pairs, want %v", c, n, before, got, want)
			}
			chunks += got
		}
		if want := brute(c, 0, 10_000); !near(chunks, want, 1e-12) || (!c.windowed() && chunks != 10_000*10_001/2) {
			t.Errorf("%+v: chunks attend %v pairs, the whole prompt %v", c, chunks, want)
		}
		for _, before := range []int{0, 100, 510, 511, 512, 513, 9000} {
			if got, want := c.Attended(before, 1), c.KVTokens(before+1); !near(got, want, 1e-12) {
				t.Errorf("%+v: a decode after %d attends %v, its KV cache holds %v", c, before, got, want)
			}
		}
		if c.Attended(5, 0) != 0 {
			t.Error("no tokens attend nothing")
		}
	}
}

// The scheduler's chunks of a long prompt attend its n(n+1)/2 pairs in
// all, each chunk to everything before it; the first decode then attends
// to the prompt and the sampled token.
func TestChunkedPrefillAttendsTheWholePrompt(t *testing.T) {
	s := NewScheduler(EngineConfig{MaxNumSeqs: 8, MaxBatchedTokens: 2048, ChunkedPrefill: true, KVBlocks: 10_000})
	q := &Seq{Prompt: 10_000, Output: 3}
	s.Add(q)
	var st Step
	var pairs float64
	steps := 0
	for q.Sampled == 0 {
		s.Schedule(&st)
		pairs += st.Attended
		s.Complete(&st, nil)
		steps++
	}
	if steps != 5 || pairs != 10_000*10_001/2 {
		t.Errorf("%d steps attended %v pairs, want 5 and %v", steps, pairs, 10_000*10_001/2)
	}
	s.Schedule(&st)
	if st.DecodeSeqs != 1 || st.Attended != 10_001 || st.Attended != st.KVTokens {
		t.Errorf("first decode: %+v", st)
	}
}

// With attention counted a decode phase's steps grow with its KV cache:
// skipping through it still gives the figures of stepping, on a GPU and
// on a serial CPU.
func TestSkippingDecodesEqualsSteppingWithAttention(t *testing.T) {
	m, _ := LookupModel("Qwen/Qwen3-0.6B")
	big, err := NewLane(m, hw("T4", 1), EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 8192, ChunkedPrefill: true}, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if line := decodeLineOf(big.Model.stepCost(big.Hardware, 200, 200), 200*64, 200); line.slope <= 0 {
		t.Fatalf("200 decodes on a T4 should slow down as their KV cache grows: %+v", line)
	}
	checkSkipping(t, big, []Load{{InputTokens: 64, OutputTokens: 400, Concurrency: 200, Requests: 200}})
	h := hw("T4", 1)
	h.Assume.GPUMemoryUtilization = 0.2
	tight, err := NewLane(m, h, EngineConfig{MaxNumSeqs: 8, MaxBatchedTokens: 512, ChunkedPrefill: true}, 2048)
	if err != nil {
		t.Fatal(err)
	}
	skippingEqualsStepping(t, tight)
	cpu, err := NewLane(m, hw("CPU", 1), EngineConfig{MaxNumSeqs: 16, MaxBatchedTokens: 512, ChunkedPrefill: true}, 2048)
	if err != nil {
		t.Fatal(err)
	}
	checkSkipping(t, cpu, []Load{{InputTokens: 300, OutputTokens: 200, Concurrency: 12, Requests: 24, RampUpMs: 50}})
}

// A decode line's closed forms equal its steps, rising or flat.
func TestDecodeLineSumsItsSteps(t *testing.T) {
	for _, l := range []decodeLine{
		{v0: 5, slope: 0.01},
		{v0: 0.5, slope: 0.2},
		{v0: 4, slope: 0},
	} {
		for _, n := range []int{1, 2, 50, 399, 1000} {
			var want float64
			var steps itlHist
			for j := range n {
				want += l.at(j)
				steps.add(l.at(j), 3)
			}
			if got := l.sum(n); math.Abs(got-want) > 1e-9*want {
				t.Errorf("%+v: %d steps sum to %v, want %v", l, n, got, want)
			}
			var gaps itlHist
			l.gaps(n, 3, &gaps)
			total, off := 0, 0
			counts := steps.bins()
			for b, k := range gaps.bins() {
				total += k
				if d := k - counts[b]; d > 0 {
					off += d
				}
			}
			if total != 3*n || off > 3 { // a step on a bin's edge may fall in its neighbour
				t.Errorf("%+v: %d steps: %d gaps, %d in other bins than stepping's", l, n, total, off)
			}
		}
	}
}

// gpt-oss's attention sinks put vLLM's prefill attention in its Triton
// kernel on a GPU of compute capability 8.x, at tritonSinkAttentionFactor
// times the FlashAttention rate: the step's attention grows by that and
// nothing else does; Hopper and Blackwell (kernels that take sinks), a
// model without sinks on an A100 and the KV reads of a decode step keep
// the FlashAttention rate.
func TestSinkAttentionRunsTritonOnAmpere(t *testing.T) {
	oss, ok := LookupModel("openai/gpt-oss-20b")
	if !ok || !oss.AttentionSinks {
		t.Fatalf("gpt-oss-20b: in the catalog %v, attention sinks %v; want both", ok, oss.AttentionSinks)
	}
	noSinks := oss
	noSinks.AttentionSinks = false
	for _, c := range []struct {
		gpu  string
		want float64
	}{{"A100-80GB", tritonSinkAttentionFactor}, {"A10", tritonSinkAttentionFactor}, {"L40S", tritonSinkAttentionFactor}, {"H100", 1}, {"B200", 1}} {
		g, _ := LookupGPU(c.gpu)
		h := precisionOn(t, "openai/gpt-oss-20b", g, "", "")
		if f := oss.AttentionKernelFactor(h); f != c.want {
			t.Errorf("gpt-oss-20b on %s: attention kernel factor %v, want %v", c.gpu, f, c.want)
		}
		with, without := StepPartsOf(oss, h, 8192, 1, 0, 8192), StepPartsOf(noSinks, h, 8192, 1, 0, 8192)
		if !near(with.Attention, c.want*without.Attention, 1e-9) || without.Attention <= 0 {
			t.Errorf("gpt-oss-20b on %s: a 8,192-token prefill's attention %v s, want %v x %v", c.gpu, with.Attention, c.want, without.Attention)
		}
		if with.Multiplies != without.Multiplies || with.ExpertMultiplies != without.ExpertMultiplies || with.Elementwise != without.Elementwise {
			t.Errorf("gpt-oss-20b on %s: the sinks changed more than attention: %+v against %+v", c.gpu, with, without)
		}
		dWith, dWithout := StepPartsOf(oss, h, 0, 0, 64, 64*4096), StepPartsOf(noSinks, h, 0, 0, 64, 64*4096)
		if dWith.KVReads != dWithout.KVReads {
			t.Errorf("gpt-oss-20b on %s: a decode step's KV reads %v s with sinks, %v without; want the same", c.gpu, dWith.KVReads, dWithout.KVReads)
		}
	}
	q, _ := LookupModel("Qwen/Qwen3-8B")
	a100, _ := LookupGPU("A100-80GB")
	if f := q.AttentionKernelFactor(precisionOn(t, "Qwen/Qwen3-8B", a100, "", "")); f != 1 {
		t.Errorf("Qwen3-8B on an A100 (no sinks): attention kernel factor %v, want 1", f)
	}
}
