package perf

import (
	"encoding/csv"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// kernelPeakShare is the share of the peak a large layer's matrix
// multiplies reach alone in the kernel profiles (the size law's top;
// gemmHalfParams).
const kernelPeakShare = 0.72

// TestGEMMEfficiencyMatchesKernelProfiles checks gemmEfficiency against
// the kernel profiles it was fitted to (Vidur's timings of a layer's four
// matrix multiplies: testdata/kernels, see gemmEfficiency): at
// compute-bound sizes a layer takes its FLOPs over the peak at 0.72 times
// the efficiency of its size. The A100 and H100 are the fit, the A40 (not
// in the catalog: 149.7 TFLOPS BF16 with FP32 accumulation, 84
// multiprocessors) is held out. The size term matters on the H100, whose
// multiprocessors are the fastest (without it its small layers at 1,024
// tokens are a third slower than the roof); on the A100 and the A40 it
// changes little, and must not make them worse (nor on the H200).
//
// Our own timings of the same four multiplies on an H200
// (testdata/kernels/h200-linear-layers.csv, time_kernels.py;
// docs/performance-model.md, "Kernel timings on an H200") are held out
// too, at the sizes the law was fitted over: layers of 25M parameters a
// GPU and more (Vidur's smallest), compute-bound as the fit's rows.
func TestGEMMEfficiencyMatchesKernelProfiles(t *testing.T) {
	rows := kernelProfiles(t, "vidur-linear-layers.csv")
	h200Rows := kernelProfiles(t, "h200-linear-layers.csv")
	a100, _ := LookupGPU("A100-80GB")
	h100, _ := LookupGPU("H100")
	h200, _ := LookupGPU("H200")
	gpus := map[string]GPU{"a100": a100, "h100": h100, "h200": h200, "a40": {Name: "A40", BF16TFLOPS: 149.7, SMs: 84}}
	// The largest root-mean-square log error allowed with the size term
	// (what the law reaches, rounded up) and the least without it (where
	// the term matters).
	limits := map[string][2]float64{"a100": {0.065, 0}, "h100": {0.075, 0.09}, "h200": {0.06, 0}, "a40": {0.055, 0}}
	type sums struct {
		with, without float64
		n             int
	}
	got := map[string]*sums{}
	for _, r := range append(rows[1:], h200Rows[1:]...) {
		g, ok := gpus[r[0]]
		if !ok {
			t.Fatalf("unknown GPU %q", r[0])
		}
		tokens, _ := strconv.ParseFloat(r[3], 64)
		params, _ := strconv.ParseFloat(r[4], 64)
		measured, _ := strconv.ParseFloat(r[5], 64)
		sized := lawMs(g, g.BF16TFLOPS, tokens, params)
		flat := sized * gemmEfficiency(params, g.BF16TFLOPS/float64(g.SMs))
		if r[0] == "h200" && !inTheLawsRange(g, tokens, params, 2, sized) {
			continue
		}
		s := got[r[0]]
		if s == nil {
			s = &sums{}
			got[r[0]] = s
		}
		s.with += math.Pow(math.Log(sized/measured), 2)
		s.without += math.Pow(math.Log(flat/measured), 2)
		s.n++
	}
	for name, s := range got {
		with, without := math.Sqrt(s.with/float64(s.n)), math.Sqrt(s.without/float64(s.n))
		t.Logf("%s: %d layer timings, rms log error %.3f with the size term, %.3f without", name, s.n, with, without)
		if l := limits[name]; with > l[0] || without < l[1] || with > without+0.002 {
			t.Errorf("%s: rms log error %.3f with the size term (limit %.3f), %.3f without (expected at least %.3f)", name, with, l[0], without, l[1])
		}
	}
	if len(got) != 4 || got["h200"] == nil || got["h200"].n < 40 {
		t.Errorf("profiles of %d GPUs, want 4 with 40 H200 timings or more", len(got))
	}
}

// lawMs is what the size law gives a layer of params parameters a GPU
// multiplying tokens rows at peak TFLOP/s on g (milliseconds): the FLOPs
// at kernelPeakShare of the peak over gemmEfficiency.
func lawMs(g GPU, peak, tokens, params float64) float64 {
	return 2 * tokens * params / (peak * 1e12 * kernelPeakShare) * 1000 / gemmEfficiency(params, peak/float64(g.SMs))
}

// inTheLawsRange says whether a layer of params parameters a GPU of
// bytes a parameter multiplying tokens rows on g, which the size law
// times at sized milliseconds, lies where the law was fitted: 25M
// parameters or more, 512 tokens or more, and compute over four times the
// weights' reads.
func inTheLawsRange(g GPU, tokens, params, bytes, sized float64) bool {
	reads := bytes * params / (g.BandwidthGBs * 1e9) * 1000
	return params >= 25e6 && tokens >= 512 && sized >= 4*reads
}

// TestSmallLayersBeatTheSizeLaw: below the size law's range the law is
// conservative. Qwen3-0.6B's layers (15.7M parameters) multiply 1,024 to
// 8,192 tokens on an H200 at 0.57-0.65 of the peak, where the law gives
// them 0.47 (testdata/kernels/h200-linear-layers.csv): its prefill is
// planned 24-43% slower than its multiplies run. The test keeps the
// direction, and fails if a change of the law made such layers faster
// than measured.
func TestSmallLayersBeatTheSizeLaw(t *testing.T) {
	h200, _ := LookupGPU("H200")
	n := 0
	for _, r := range kernelProfiles(t, "h200-linear-layers.csv")[1:] {
		tokens, _ := strconv.ParseFloat(r[3], 64)
		params, _ := strconv.ParseFloat(r[4], 64)
		measured, _ := strconv.ParseFloat(r[5], 64)
		if params >= 25e6 || tokens < 1024 {
			continue
		}
		sized := lawMs(h200, h200.BF16TFLOPS, tokens, params)
		t.Logf("%s at %v tokens: the law %.3f ms, measured %.3f (%+.0f%%)", r[1], tokens, sized, measured, (sized/measured-1)*100)
		if sized < measured || sized > 1.6*measured {
			t.Errorf("%s at %v tokens: the law gives %.3f ms, measured %.3f: want 1-1.6 times", r[1], tokens, sized, measured)
		}
		n++
	}
	if n < 4 {
		t.Errorf("%d timings of small layers, want 4", n)
	}
}

// The size term's figures in the catalog: a small model's layers lose
// more on an H100 than on an A100 or an L40S, tensor parallelism shrinks
// each GPU's share, and the CPU has no multiprocessors.
func TestGEMMEfficiencyOfCatalogModels(t *testing.T) {
	small, _ := LookupModel("Qwen/Qwen3-0.6B") // 28 layers of 15.7M
	big, _ := LookupModel("Qwen/Qwen3-32B")
	for _, c := range []struct {
		m        ModelArch
		gpu      string
		count    int
		min, max float64
	}{
		{small, "H100", 1, 0.63, 0.66},
		{small, "A100-80GB", 1, 0.90, 0.92},
		{small, "L40S", 1, 0.92, 0.94},
		{big, "H100", 1, 0.99, 1},
		{big, "H100", 8, 0.95, 0.97},
		{small, "CPU", 1, 1, 1},
	} {
		h := hw(c.gpu, c.count)
		if got := c.m.GEMMEfficiency(h); got < c.min || got > c.max {
			t.Errorf("%s on %dx %s (%.1fM a layer a GPU): efficiency %.3f, want %.2f-%.2f", c.m.ID, c.count, c.gpu, c.m.LayerParamsPerGPU(h)/1e6, got, c.min, c.max)
		}
	}
}

// TestElementwiseKernelsMatchProfiles checks ElementwiseBytesPerToken
// and the catalog's ElementwiseEfficiency against Vidur's timings of a
// layer's norms, rotary embedding, activation and residual add
// (testdata/kernels/vidur-elementwise.csv: Llama 2 7B and 70B, Llama 3 8B
// and 70B, CodeLlama 34B, InternLM 20B and Qwen 72B at tensor parallelism
// 1-8 and 1,024 tokens or more, the A100 and H100 at the catalog's
// figures and the A40, 696 GB/s, at its own 0.70: the catalog's GDDR
// parts leave the term in their MFU, see GPU.ElementwiseEfficiency).
// Each row is one layer: its bytes over the GPU's bandwidth at the
// efficiency, against the sum of the five kernels' medians.
func TestElementwiseKernelsMatchProfiles(t *testing.T) {
	rows := kernelProfiles(t, "vidur-elementwise.csv")
	a100, _ := LookupGPU("A100-80GB")
	h100, _ := LookupGPU("H100")
	gpus := map[string]GPU{"a100": a100, "h100": h100, "a40": {Name: "A40", BandwidthGBs: 696, ElementwiseEfficiency: 0.70}}
	limits := map[string]float64{"a100": 0.05, "h100": 0.075, "a40": 0.04}
	sq, n := map[string]float64{}, map[string]int{}
	for _, r := range rows[1:] {
		g, ok := gpus[r[0]]
		if !ok {
			t.Fatalf("unknown GPU %q", r[0])
		}
		v := make([]int, 5)
		for i, s := range r[2:7] {
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatal(err)
			}
			v[i] = n
		}
		hidden, heads, kvHeads := v[2], v[3], v[4]
		width, _ := strconv.Atoi(r[7])
		measured, _ := strconv.ParseFloat(r[8], 64)
		m := ModelArch{Layers: 1, Hidden: hidden, Heads: heads, KVHeads: kvHeads, HeadDim: hidden / heads, MLPWidth: width}
		h := Hardware{GPU: g, Count: v[0], BytesPerElem: 2}
		predicted := float64(v[1]) * m.elementwiseSeconds(h) * 1000
		sq[r[0]] += math.Pow(math.Log(predicted/measured), 2)
		n[r[0]]++
	}
	for name, limit := range limits {
		rms := math.Sqrt(sq[name] / float64(n[name]))
		t.Logf("%s: %d layer timings, rms log error %.3f", name, n[name], rms)
		if n[name] < 50 || rms > limit {
			t.Errorf("%s: %d timings, rms log error %.3f (limit %.3f)", name, n[name], rms, limit)
		}
	}
}

// kernelProfiles reads a CSV of testdata/kernels, its header first.
func kernelProfiles(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open("testdata/kernels/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("%s: %d rows, %v", name, len(rows), err)
	}
	return rows
}

// TestFP8MultipliesRunAtTheFP8Peak: the model multiplies FP8 weights at
// the FP8 peak with the MFU and size law of BF16 (roofAt at
// PeakTFLOPS). Our H200's timings of the same layers through
// torch._scaled_mm (e4m3, per-token and per-channel scales, fast
// accumulation; testdata/kernels/h200-fp8-linear-layers.csv,
// time_fp8.py) bear it out where they are compute-bound: 0.60-0.75 of
// the 1,979 TFLOP/s FP8 peak, about half of BF16's time, within the law
// as BF16 is. At decode sizes they are not half of BF16's time:
// cuBLASLt's FP8 kernels take about 49 us a layer beside their reads
// (BF16's 19), 0.74-1.1 of BF16's time at 1-16 rows. The model keeps
// the BF16 fixed time for FP8 (vLLM runs its own CUTLASS kernels there,
// and the published FP8 points on H100s do not ask for more: Llama 3.1
// 8B FP8 at ten prompts is planned 4% over already); the test logs the
// ratios.
func TestFP8MultipliesRunAtTheFP8Peak(t *testing.T) {
	h200, _ := LookupGPU("H200")
	var sq float64
	var n int
	decodeRatios := []float64{}
	bf16 := map[string]float64{}
	rows := kernelProfiles(t, "h200-fp8-linear-layers.csv")[1:]
	for _, r := range rows {
		if r[5] == "bf16" {
			bf16[strings.Join(r[1:4], ",")], _ = strconv.ParseFloat(r[6], 64)
		}
	}
	for _, r := range rows {
		if r[5] != "fp8" {
			continue
		}
		tokens, _ := strconv.ParseFloat(r[3], 64)
		params, _ := strconv.ParseFloat(r[4], 64)
		measured, _ := strconv.ParseFloat(r[6], 64)
		if tokens <= 16 {
			decodeRatios = append(decodeRatios, measured/bf16[strings.Join(r[1:4], ",")])
			continue
		}
		sized := lawMs(h200, h200.FP8TFLOPS, tokens, params)
		if !inTheLawsRange(h200, tokens, params, 1, sized) {
			continue
		}
		sq += math.Pow(math.Log(sized/measured), 2)
		n++
	}
	rms := math.Sqrt(sq / float64(n))
	t.Logf("%d compute-bound FP8 timings: rms log error %.3f against the law at the FP8 peak; FP8 over BF16 at 1-16 rows: %.2f", n, rms, decodeRatios)
	if n < 20 || rms > 0.1 {
		t.Errorf("%d compute-bound FP8 timings, rms log error %.3f: want 20 or more within 0.1", n, rms)
	}
}
