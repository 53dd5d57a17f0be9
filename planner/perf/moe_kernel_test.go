package perf

import (
	"math"
	"strconv"
	"testing"

	"github.com/infercrane/infercrane/planner/arch"
)

// TestFusedMoEKernelTimes checks fusedMoESeconds against vLLM's fused MoE
// kernel timed by benchmarks/kernels/benchmark_moe.py in four pull
// requests (testdata/kernels/fused-moe.csv: in BF16 an A100 with 64
// experts of 1,408 x 2,048, an H100 with Mixtral's 8 of 7,168 x 4,096, an
// H200 with 128 of 704 x 2,816; in FP8 an L40S with 128 of 768 x 2,048;
// 64-8,192 tokens, the tuned configurations). The matrix multiplies are
// taken at the kernel level of the dense layers (kernelPeakShare,
// TestGEMMEfficiencyMatchesKernelProfiles) of the fused MoE kernel's
// peak (FusedMoEPeakTFLOPS: the BF16 one, FP8 included) and the experts
// the tokens reach (arch.ExpectedExperts) are read, at their own width,
// at the catalog's bandwidth efficiency. Their sum is within 25% of every
// timing; the larger of the two, what a dense layer's roofline takes,
// falls up to 54% short once the tokens make the kernel compute-bound,
// and its error is twice the sum's. At the FP8 peak the L40S's FP8
// timings at 4,096 and 8,192 tokens would come out 21% and 36% short.
func TestFusedMoEKernelTimes(t *testing.T) {
	rows := kernelProfiles(t, "fused-moe.csv")
	var sumErr, maxErr float64
	for _, r := range rows[1:] {
		g, ok := LookupGPU(r[0])
		if !ok {
			t.Fatalf("GPU %q is not in the catalog", r[0])
		}
		dtype, width := r[1], map[string]float64{"bf16": 2, "fp8": 1}[r[1]]
		if width == 0 {
			t.Fatalf("%s: dtype %q is neither bf16 nor fp8", r[0], dtype)
		}
		var v [6]float64
		for i := range v {
			v[i], _ = strconv.ParseFloat(r[i+2], 64)
		}
		experts, n, k, topk, tokens, measured := v[0], v[1], v[2], v[3], v[4], v[5]/1e6
		h := Hardware{GPU: g, Precision: &arch.Precision{Compute: dtype, LinearBytes: width}}
		params := 3 * k * n // gate, up and down of one expert
		compute := 2 * tokens * topk * params / (h.FusedMoEPeakTFLOPS() * 1e12 * kernelPeakShare)
		reached := arch.ExpectedExperts(int(experts), int(topk), tokens, 1)
		reads := reached * params * width / (g.BandwidthGBs * 1e9 * g.DecodeEfficiency)
		sum, larger := fusedMoESeconds(compute, reads), math.Max(compute, reads)
		t.Logf("%-9s %-4s E=%-3.0f N=%-4.0f %5.0f tokens: measured %7.1f us, model %7.1f (%+4.0f%%), the larger %7.1f (%+4.0f%%)",
			r[0], dtype, experts, n, tokens, measured*1e6, sum*1e6, 100*(sum/measured-1), larger*1e6, 100*(larger/measured-1))
		if math.Abs(sum/measured-1) > 0.25 {
			t.Errorf("%s E=%.0f N=%.0f at %.0f tokens: model %.1f us, measured %.1f (over 25%%)", r[0], experts, n, tokens, sum*1e6, measured*1e6)
		}
		sumErr += math.Pow(math.Log(sum/measured), 2)
		maxErr += math.Pow(math.Log(larger/measured), 2)
	}
	count := float64(len(rows) - 1)
	sumErr, maxErr = math.Sqrt(sumErr/count), math.Sqrt(maxErr/count)
	t.Logf("rms log error: the sum %.3f, the larger %.3f", sumErr, maxErr)
	if sumErr > 0.16 || maxErr < 2*sumErr {
		t.Errorf("rms log error %.3f of the sum (limit 0.16) against %.3f of the larger (expected at least twice)", sumErr, maxErr)
	}
}

// TestFP8ExpertsMultiplyAsBF16Ones: a mixture of experts' routed experts
// multiply at the fused MoE kernel's peak whether their weights are FP8 or
// BF16 (Hardware.FusedMoEPeakTFLOPS), their size law taken at that peak
// too (ModelArch.ExpertGEMMEfficiency), and are read at their own width:
// at FP8 the experts' multiplies take as long as at BF16 and their reads
// half as long, while the rest of the model multiplies at the FP8 peak.
// Before the size law was taken at the experts' own peak, an FP8 expert
// on an H100 multiplied at 0.35 of the MFU where a BF16 one did at 0.65,
// nearly twice as slow.
func TestFP8ExpertsMultiplyAsBF16Ones(t *testing.T) {
	for _, gpu := range []string{"H100", "L40S"} {
		g, _ := LookupGPU(gpu)
		m, ok := LookupModel("Qwen/Qwen3-30B-A3B")
		if !ok {
			t.Fatal("Qwen3-30B-A3B is not in the catalog")
		}
		for _, count := range []int{1, 4} {
			bf16 := precisionOn(t, m.ID, g, "", "")
			fp8 := precisionOn(t, m.ID, g, "fp8", "")
			bf16.Count, fp8.Count = count, count
			for _, tokens := range []int{64, 2048, 8192} {
				b, f := m.stepCost(bf16, tokens, 1), m.stepCost(fp8, tokens, 1)
				if math.Abs(f.experts/b.experts-1) > 1e-9 {
					t.Errorf("%dx %s, %d tokens: FP8 experts multiply in %.4g s, BF16 ones in %.4g", count, gpu, tokens, f.experts, b.experts)
				}
				if math.Abs(f.expertWeights/b.expertWeights-0.5) > 1e-9 {
					t.Errorf("%dx %s, %d tokens: FP8 experts read in %.4g s, BF16 ones in %.4g (want half)", count, gpu, tokens, f.expertWeights, b.expertWeights)
				}
				if !(f.compute < b.compute) {
					t.Errorf("%dx %s, %d tokens: the rest of the model multiplies in %.4g s at FP8, %.4g at BF16 (want faster)", count, gpu, tokens, f.compute, b.compute)
				}
			}
		}
	}
}

// TestServedExpertsMultiplyAtTheServedFactor: in a served step a mixture
// of experts' routed multiplies take servedExpertFactor times what the
// fused MoE kernel's timings give (the experts' roof at the served MFU
// and their size, fusedMoESeconds' compute), on every CUDA GPU and at
// any precision but MXFP4, whose dequantizing share holds it; their
// reads, the rest of the model's multiplies and a dense model are as the
// kernel law has them, and so is the CPU.
func TestServedExpertsMultiplyAtTheServedFactor(t *testing.T) {
	moe, ok := LookupModel("Qwen/Qwen3-30B-A3B")
	if !ok {
		t.Fatal("Qwen3-30B-A3B is not in the catalog")
	}
	kernelLaw := func(h Hardware, tokens int) (multiplies, reads float64) {
		roof := moe.roofAt(h, h.FusedMoEPeakTFLOPS())
		multiplies = matmulFLOPs(moe.routedParams(), 0, float64(tokens), 0) / roof
		reached := moe.routedBytes(h.linearBytes()) - unreadExpertBytes(moe.MoE, float64(tokens), h.Assume.MoERoutingSpread, h.linearBytes())
		return multiplies, reached / h.count() / (h.GPU.BandwidthGBs * 1e9 * h.Assume.DecodeEfficiency)
	}
	for _, c := range []struct {
		gpu, quantization string
		count             int
		factor            float64
	}{
		{"H100", "", 1, servedExpertFactor},
		{"H100", "fp8", 4, servedExpertFactor},
		{"A100-80GB", "", 4, servedExpertFactor},
		{"A100-80GB", "fp8", 2, servedExpertFactor}, // Marlin's weight-only FP8
		{"CPU", "", 1, 1},
	} {
		g, _ := LookupGPU(c.gpu)
		h := precisionOn(t, moe.ID, g, c.quantization, "")
		h.Count = c.count
		if f := h.ServedExpertFactor(); f != c.factor {
			t.Errorf("%dx %s %q: served factor %v, want %v", c.count, c.gpu, c.quantization, f, c.factor)
		}
		for _, tokens := range []int{16, 2048} {
			sc := moe.stepCost(h, tokens, 1)
			mult, reads := kernelLaw(h, tokens)
			if math.Abs(sc.experts/(c.factor*mult)-1) > 1e-9 || math.Abs(sc.expertWeights/reads-1) > 1e-9 {
				t.Errorf("%dx %s %q, %d tokens: experts multiply in %.4g s and read in %.4g, want %.4g (%v x the kernel law) and %.4g",
					c.count, c.gpu, c.quantization, tokens, sc.experts, sc.expertWeights, c.factor*mult, c.factor, reads)
			}
		}
	}
	// gpt-oss's MXFP4 experts keep the kernel law: their dequantizing
	// share was chosen on their served points.
	g, _ := LookupGPU("H100")
	if h := precisionOn(t, "openai/gpt-oss-20b", g, "", ""); h.ServedExpertFactor() != 1 {
		t.Errorf("gpt-oss-20b on an H100 (%+v): served factor %v, want 1", h.Precision, h.ServedExpertFactor())
	}
	// A dense model has no routed experts to slow.
	dense, _ := LookupModel("Qwen/Qwen3-8B")
	if sc := dense.stepCost(hw("H100", 1), 2048, 1); sc.experts != 0 || sc.expertWeights != 0 {
		t.Errorf("Qwen3-8B: routed experts %v and %v", sc.experts, sc.expertWeights)
	}
}
