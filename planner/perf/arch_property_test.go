package perf

import (
	"math/rand/v2"
	"testing"

	"github.com/infercrane/infercrane/planner/arch"
)

// precisionOn resolves a runtime's precision for catalog model id on g.
func precisionOn(t *testing.T, id string, g GPU, quantization, kvDtype string) Hardware {
	t.Helper()
	p, ok := arch.Lookup(id)
	if !ok {
		t.Fatalf("%s not in the catalog", id)
	}
	prec, err := arch.ResolvePrecision(p.Config, arch.PrecisionInputs{Quantization: quantization, KVCacheDtype: kvDtype, Capability: g.Capability})
	if err != nil {
		t.Fatal(err)
	}
	return Hardware{GPU: g, Count: 1, BytesPerElem: 2, Assume: DefaultAssumptions(g)}.WithPrecision(prec)
}

// TestFP8HalvesWeightsAndTheirReads: FP8 weights take half the memory of
// BF16's in every linear layer, and the embeddings and norms stay 16-bit
// (as vLLM leaves them), so the whole is half plus half the rest's share:
// 51.5% for Llama-3.1-70B, 65% for gemma-3-1b with its 262k vocabulary. A
// memory-bound decode step's weight reads shrink alike; the KV cache
// follows kv_cache_dtype alone.
func TestFP8HalvesWeightsAndTheirReads(t *testing.T) {
	g, _ := LookupGPU("H100")
	for _, id := range ModelIDs() {
		p, _ := arch.Lookup(id)
		if p.Config.Quantization != nil {
			continue // already quantised (DeepSeek-V3's FP8)
		}
		m := FromConfig(p)
		bf16, fp8 := precisionOn(t, id, g, "", ""), precisionOn(t, id, g, "fp8", "")
		w16, w8 := m.WeightBytesOn(bf16), m.WeightBytesOn(fp8)
		if saved := w16 - w8; saved != m.linearParams() {
			t.Errorf("%s: fp8 saves %.0f bytes, want one a linear parameter (%.0f)", id, saved, m.linearParams())
		}
		rest := (float64(m.Params) - m.linearParams()) / float64(m.Params)
		if r := w8 / w16; !near(r, 0.5+rest/2, 1e-12) {
			t.Errorf("%s: fp8 weights are %.3f of bf16's, want %.3f", id, r, 0.5+rest/2)
		}
		// A step reads the 16-bit rest whole and fp8 halves the linear
		// weights it reaches (a mixture of experts: 2-8 of them a token,
		// so the rest weighs more in its reads than in its memory).
		r16, r8 := m.stepCost(bf16, 1, 1).weights, m.stepCost(fp8, 1, 1).weights
		bw := g.BandwidthGBs * 1e9 * bf16.Assume.DecodeEfficiency
		restRead := 2 * (float64(m.Params) - m.linearParams()) / bw / r16
		if r := r8 / r16; !near(r, 0.5+restRead/2, 1e-9) || (m.MoE == nil && !near(restRead, rest, 1e-9)) {
			t.Errorf("%s: a decode step reads %.3f of bf16's weight bytes under fp8, want %.3f", id, r, 0.5+restRead/2)
		}
		if m.KVBytesPerTokenPerGPU(fp8) != m.KVBytesPerTokenPerGPU(bf16) || 2*m.KVBytesPerTokenPerGPU(precisionOn(t, id, g, "", "fp8")) != m.KVBytesPerTokenPerGPU(bf16) {
			t.Errorf("%s: the KV cache must follow kv_cache_dtype, not quantization", id)
		}
	}
}

// TestTensorParallelNeverMoreThanHalves: on two GPUs a step is never
// shorter than half of one GPU's (the all-reduces and the step overhead
// do not shrink, replicated KV heads do not split), over random steps of
// every catalog model that splits over two GPUs, on NVLink and PCIe.
func TestTensorParallelNeverMoreThanHalves(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 2))
	for _, gpu := range []string{"H100", "L40S"} {
		for _, id := range ModelIDs() {
			m, _ := LookupModel(id)
			if m.CheckTensorParallel(2) != nil {
				continue
			}
			one, two := hw(gpu, 1), hw(gpu, 2)
			for range 200 {
				prefill, decode := rng.IntN(8192), rng.IntN(256)
				seqs := min(prefill, 1+rng.IntN(4))
				kv := float64(rng.IntN(1 << 20))
				t1, t2 := StepTime(m, one, prefill, seqs, decode, kv), StepTime(m, two, prefill, seqs, decode, kv)
				if t2 < t1/2 {
					t.Fatalf("%s on %s: prefill %d (%d seqs), decode %d, kv %.0f: TP=2 %.6f s is less than half of %.6f s", id, gpu, prefill, seqs, decode, kv, t2, t1)
				}
			}
		}
	}
}

// TestMoEPrefillFollowsActiveParameters: a mixture of experts' prefill is
// compute-bound at its active parameters, not its total: Qwen3-30B-A3B's
// FLOPs a prompt token are those of its 3.35B active parameters (the
// output projection only for the token that produces logits), routing one more expert a token adds exactly that expert's,
// and twice the experts a token is not routed to add only their router
// weights.
func TestMoEPrefillFollowsActiveParameters(t *testing.T) {
	p, _ := arch.Lookup("Qwen/Qwen3-30B-A3B")
	m := FromConfig(p)
	h := hw("H100", 1)
	n := p.Config.Count()
	const tokens = 8192
	emb := float64(p.Config.Vocab) * float64(p.Config.Hidden)
	want := 2 * ((float64(n.Active)-emb)*tokens + emb)
	if got := m.stepFLOPs(tokens, 1); !near(got, want, 1e-12) {
		t.Fatalf("prefill FLOPs %.4g, want %.4g (active %d of %d)", got, want, n.Active, n.Total)
	}
	c := m.stepCost(h, tokens, 1)
	if c.compute+c.experts <= c.weights+c.expertWeights {
		t.Errorf("an 8,192-token prefill must be compute-bound: compute %.4f s, weights %.4f s", c.compute+c.experts, c.weights+c.expertWeights)
	}
	more := p
	moe := *more.Config.MoE
	moe.ExpertsPerToken++
	more.Config.MoE = &moe
	m2 := FromConfig(more)
	if d := m2.stepFLOPs(tokens, 1) - m.stepFLOPs(tokens, 1); !near(d, 2*tokens*float64(moe.Layers)*float64(m.MoE.ExpertParams), 1e-12) {
		t.Errorf("one more expert a token adds %.4g FLOPs", d)
	}
	moe.ExpertsPerToken--
	moe.Experts *= 2
	m3 := FromConfig(more)
	router := 2 * tokens * float64(moe.Layers) * float64(moe.Experts/2) * float64(p.Config.Hidden)
	if m3.Params <= m.Params || !near(m3.stepFLOPs(tokens, 1)-m.stepFLOPs(tokens, 1), router, 1e-9) {
		t.Errorf("twice the experts: %d parameters, FLOPs %.4g vs %.4g", m3.Params, m3.stepFLOPs(tokens, 1), m.stepFLOPs(tokens, 1))
	}
	// Decode reads the experts its batch reaches: one token 8 of 128, a
	// batch of 256 nearly all of them.
	reads := func(tokens int) float64 { c := m.stepCost(h, tokens, tokens); return c.weights + c.expertWeights }
	one, many := reads(1), reads(256)
	all := m.WeightBytesOn(h) / (h.GPU.BandwidthGBs * 1e9 * h.Assume.DecodeEfficiency)
	if !(one < 0.2*all && many > 0.99*all && many <= all) {
		t.Errorf("weight reads: one token %.4f s, 256 tokens %.4f s, every weight %.4f s", one, many, all)
	}
}

// TestStepCosterIsTheRoofline: the coster that prices a lane's steps
// (stepCoster, its model and GPUs' constants worked out once) gives the
// split, to the last bits of a float64 (1e-12 relative: the two sum the
// same bytes in another order), worked out afresh from the model and
// GPUs for each step (stepFLOPs over the GPUs' roof, stepWeightBytes and
// the KV cache at the bandwidth, the all-reduces) for every catalog model (dense, mixtures
// of experts, latent attention), at BF16 and FP8 (a checkpoint quantised
// otherwise, gpt-oss's MXFP4, at its own), on 1, 2, 3 and 8 GPUs, for
// prefills and decodes of many sizes.
func TestStepCosterIsTheRoofline(t *testing.T) {
	for _, gpu := range []string{"L40S", "H100"} {
		g, _ := LookupGPU(gpu)
		for _, id := range ModelIDs() {
			p, _ := arch.Lookup(id)
			m := FromConfig(p)
			hws := []Hardware{precisionOn(t, id, g, "", "")}
			if q := p.Config.Quantization; q == nil || q.Method == "fp8" {
				hws = append(hws, precisionOn(t, id, g, "fp8", "fp8")) // vLLM refuses fp8 over another checkpoint format
			}
			for _, h := range hws {
				for _, count := range []int{1, 2, 3, 8} {
					h.Count = count
					c := m.stepCoster(h)
					n, bw := h.count(), h.GPU.BandwidthGBs*1e9*h.Assume.DecodeEfficiency
					for _, tl := range [][2]int{{1, 1}, {7, 7}, {256, 256}, {4096, 1}, {4099, 4}, {8192, 16}} {
						tokens, logits := float64(tl[0]), float64(tl[1])
						roof := n * h.PeakTFLOPS() * 1e12 * h.Assume.PrefillMFU * m.GEMMEfficiency(h) * h.GEMMRoofShare()
						routed := m.routedBytes(h.linearBytes())
						// The routed experts multiply at the fused MoE kernel's peak,
						// their size law at that peak, slowed by their served factor.
						bf16 := h.GPU.BF16TFLOPS
						expertRoof := n * bf16 * 1e12 * h.Assume.PrefillMFU * gemmEfficiency(m.LayerParamsPerGPU(h), bf16/float64(h.GPU.SMs)) * h.GEMMRoofShare() / h.ServedExpertFactor()
						want := stepCost{
							compute:       (m.stepFLOPs(tokens, logits) - matmulFLOPs(m.routedParams(), 0, tokens, 0)) / roof,
							experts:       matmulFLOPs(m.routedParams(), 0, tokens, 0) / expertRoof,
							attend:        m.attentionSeconds(h),
							weights:       (m.WeightBytesOn(h) - routed) / n / bw,
							expertWeights: (m.stepWeightBytes(h, tokens) - m.WeightBytesOn(h) + routed) / n / bw,
							kvToken:       m.KVBytesPerTokenPerGPU(h) / bw,
							comm:          m.allReduceOf(h).seconds(tokens),
							elementwise:   tokens * m.elementwiseSeconds(h),
							fixed:         h.Assume.StepOverheadMs/1000 + h.Assume.StepSeqUs/1e6*logits,
							serial:        h.GPU.Serial,
						}
						if got := c.cost(tl[0], tl[1]); !sameCost(got, want) {
							t.Fatalf("%s on %dx %s (%+v), %d tokens, %d logits: %+v, want %+v", id, count, gpu, h.Precision, tl[0], tl[1], got, want)
						}
					}
				}
			}
		}
	}
}

// stepFLOPs is a step's matrix-multiply work worked out from m alone
// (matmulFLOPs of its active parameters but the output projection, and
// the output projection).
func (m ModelArch) stepFLOPs(tokens, logitSeqs float64) float64 {
	out := m.outputParams()
	return matmulFLOPs(m.activeParams()-out, out, tokens, logitSeqs)
}

// stepWeightBytes is the weight memory a step of tokens tokens reads on
// all of h's GPUs together, worked out from m alone: every weight but, in
// a mixture of experts, the routed experts none of its tokens goes to.
func (m ModelArch) stepWeightBytes(h Hardware, tokens float64) float64 {
	b := m.WeightBytesOn(h)
	if e := m.MoE; e != nil && e.Experts > 0 {
		b -= unreadExpertBytes(e, tokens, h.Assume.MoERoutingSpread, h.linearBytes())
	}
	return b
}

// sameCost reports whether two splits agree to 1e-12 relative in every
// term.
func sameCost(a, b stepCost) bool {
	x := []float64{a.compute, a.attend, a.weights, a.experts, a.expertWeights, a.kvToken, a.elementwise, a.comm, a.fixed}
	y := []float64{b.compute, b.attend, b.weights, b.experts, b.expertWeights, b.kvToken, b.elementwise, b.comm, b.fixed}
	for i := range x {
		if !near(x[i], y[i], 1e-12) {
			return false
		}
	}
	return a.serial == b.serial
}
