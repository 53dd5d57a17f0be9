package perf

import (
	"encoding/csv"
	"math"
	"os"
	"strconv"
	"testing"
)

// TestGEMMEfficiencyMatchesKernelProfiles checks gemmEfficiency against
// the kernel profiles it was fitted to (Vidur's timings of a layer's
// linear layers, norms and activations: testdata/kernels, see
// gemmEfficiency): at compute-bound sizes a layer takes its FLOPs over
// the peak at an MFU of 0.65 times the efficiency of its size. The A100
// and H100 are the fit, the A40 (not in the catalog: 149.7 TFLOPS BF16
// with FP32 accumulation, 84 multiprocessors) is held out. Without the
// size term the H100's small layers (tensor parallelism over 4 and 8
// GPUs) are up to 2x slower than the roof, and the H100's error
// triples; on the A100 and A40 the term is smaller, and so is its gain.
func TestGEMMEfficiencyMatchesKernelProfiles(t *testing.T) {
	f, err := os.Open("testdata/kernels/vidur-linear-layers.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	a100, _ := LookupGPU("A100-80GB")
	h100, _ := LookupGPU("H100")
	gpus := map[string]GPU{"a100": a100, "h100": h100, "a40": {Name: "A40", BF16TFLOPS: 149.7, SMs: 84}}
	// The largest root-mean-square log error allowed with the size term
	// (what the law reaches, rounded up) and the least without it.
	limits := map[string][2]float64{"a100": {0.075, 0.085}, "h100": {0.065, 0.17}, "a40": {0.08, 0.085}}
	type sums struct {
		with, without float64
		n             int
	}
	got := map[string]*sums{}
	for _, r := range rows[1:] {
		g, ok := gpus[r[0]]
		if !ok {
			t.Fatalf("unknown GPU %q", r[0])
		}
		tokens, _ := strconv.ParseFloat(r[3], 64)
		params, _ := strconv.ParseFloat(r[4], 64)
		measured, _ := strconv.ParseFloat(r[5], 64)
		roof := g.BF16TFLOPS * 1e12 * 0.65
		flat := 2 * tokens * params / roof * 1000
		sized := flat / gemmEfficiency(params, g.BF16TFLOPS*0.65/float64(g.SMs))
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
		if l := limits[name]; with > l[0] || without < l[1] {
			t.Errorf("%s: rms log error %.3f with the size term (limit %.3f), %.3f without (expected at least %.3f)", name, with, l[0], without, l[1])
		}
	}
	if len(got) != 3 {
		t.Errorf("profiles of %d GPUs, want 3", len(got))
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
		{small, "H100", 1, 0.38, 0.41},
		{small, "A100-80GB", 1, 0.66, 0.69},
		{small, "L40S", 1, 0.83, 0.86},
		{big, "H100", 1, 0.97, 0.99},
		{big, "H100", 8, 0.76, 0.79},
		{small, "CPU", 1, 1, 1},
	} {
		h := hw(c.gpu, c.count)
		if got := c.m.GEMMEfficiency(h); got < c.min || got > c.max {
			t.Errorf("%s on %dx %s (%.1fM a layer a GPU): efficiency %.3f, want %.2f-%.2f", c.m.ID, c.count, c.gpu, c.m.LayerParamsPerGPU(h)/1e6, got, c.min, c.max)
		}
	}
}
