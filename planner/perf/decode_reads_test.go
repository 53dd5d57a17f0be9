package perf

import (
	"math"
	"strconv"
	"testing"
)

// decodeLaw is what a layer's four matrix multiplies take at decode
// sizes on one GPU, fitted to kernel timings: a fixed time and the
// weights' bytes at a bandwidth.
type decodeLaw struct {
	fixedUs, bandwidthGBs, rmsLogError float64
	n                                  int
}

// seconds is the law's time for a layer of bytes bytes.
func (l decodeLaw) seconds(bytes float64) float64 {
	return l.fixedUs/1e6 + bytes/(l.bandwidthGBs*1e9)
}

// decodeLaws fits decodeLaw to the timings of layers that multiply 16
// rows or fewer (purely memory-bound) on each GPU: Vidur's A100 and H100
// profiles (testdata/kernels/vidur-decode-layers.csv, from
// microsoft/vidur's data/profiling/compute at 7d47513, the same four
// multiplies as vidur-linear-layers.csv) and our H200's
// (h200-linear-layers.csv), by least squares of the time on the bytes.
func decodeLaws(t *testing.T) map[string]decodeLaw {
	t.Helper()
	type point struct{ bytes, seconds float64 }
	points := map[string][]point{}
	for _, name := range []string{"vidur-decode-layers.csv", "h200-linear-layers.csv"} {
		for _, r := range kernelProfiles(t, name)[1:] {
			tokens, _ := strconv.Atoi(r[3])
			params, _ := strconv.ParseFloat(r[4], 64)
			ms, _ := strconv.ParseFloat(r[5], 64)
			if tokens <= 16 {
				points[r[0]] = append(points[r[0]], point{2 * params, ms / 1000})
			}
		}
	}
	laws := map[string]decodeLaw{}
	for gpu, ps := range points {
		var sx, sy, sxx, sxy float64
		for _, p := range ps {
			sx, sy, sxx, sxy = sx+p.bytes, sy+p.seconds, sxx+p.bytes*p.bytes, sxy+p.bytes*p.seconds
		}
		n := float64(len(ps))
		slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
		law := decodeLaw{fixedUs: (sy - slope*sx) / n * 1e6, bandwidthGBs: 1 / slope / 1e9, n: len(ps)}
		var sq float64
		for _, p := range ps {
			sq += math.Pow(math.Log(law.seconds(p.bytes)/p.seconds), 2)
		}
		law.rmsLogError = math.Sqrt(sq / n)
		laws[gpu] = law
	}
	return laws
}

// TestDecodeLayersAreAFixedTimeAndTheirReads: at decode sizes a layer's
// multiplies take a fixed 15-25 us (four kernels of about 5 us each,
// whatever their size) and their weights' bytes at 0.75-0.95 of the
// memory's peak: on the A100 19.5 us and 0.79 of 2,039 GB/s, on the H100
// 18.1 us and 0.90 of 3,350, on our H200 20.6 us and 0.88 of 4,800 (its
// plain reads reach the same 0.87: h200-bandwidth.csv). The model
// charges layerMultiplyUs a layer, within 10% of each GPU's fixed time,
// and reads the weights at the GPU's DecodeEfficiency, a whole served
// step's figure: its multiplies for every dense model of the catalog at
// tensor parallelism 1-8 come within 0.9-1.2 times what the kernels
// measure (without the fixed time a small model's over eight GPUs would
// be planned at a third of it). The H200's DecodeEfficiency is the
// H100's times the ratio of the two GPUs' measured shares (the catalog's
// H200 figures are otherwise the H100's).
func TestDecodeLayersAreAFixedTimeAndTheirReads(t *testing.T) {
	laws := decodeLaws(t)
	catalog := map[string]string{"a100": "A100-80GB", "h100": "H100", "h200": "H200"}
	share := map[string]float64{}
	for gpu, name := range catalog {
		law, ok := laws[gpu]
		if !ok || law.n < 20 {
			t.Fatalf("%s: %d decode-size timings, want 20", gpu, law.n)
		}
		g, _ := LookupGPU(name)
		share[gpu] = law.bandwidthGBs / g.BandwidthGBs
		t.Logf("%s: %d timings: %.1f us + bytes at %.0f GB/s (%.2f of the peak), rms log error %.3f", gpu, law.n, law.fixedUs, law.bandwidthGBs, share[gpu], law.rmsLogError)
		if law.fixedUs < 15 || law.fixedUs > 25 || share[gpu] < 0.75 || share[gpu] > 0.95 || law.rmsLogError > 0.05 {
			t.Errorf("%s: %.1f us + bytes at %.2f of the peak (rms log error %.3f): want 15-25 us, 0.75-0.95, 0.05", gpu, law.fixedUs, share[gpu], law.rmsLogError)
		}
		if math.Abs(law.fixedUs/layerMultiplyUs-1) > 0.1 {
			t.Errorf("%s: a layer's multiplies take a fixed %.1f us, the model %.1f: want within 10%%", gpu, law.fixedUs, layerMultiplyUs)
		}
		for _, id := range []string{"Qwen/Qwen3-0.6B", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B-Instruct"} {
			m, _ := LookupModel(id)
			for _, tp := range []int{1, 2, 4, 8} {
				h := Hardware{GPU: g, Count: tp, BytesPerElem: 2, Assume: DefaultAssumptions(g)}
				layerBytes := 2 * m.LayerParamsPerGPU(h)
				kernels := float64(m.Layers) * law.seconds(layerBytes)
				c := m.stepCoster(h)
				planned := float64(m.Layers)*layerBytes/c.bw + c.cost(1, 1).multiplyFixed
				if r := planned / kernels; r < 0.9 || r > 1.2 {
					t.Errorf("%s on %d %s: a decode step's multiplies planned at %.2f ms, measured %.2f (%.2f times): want 0.9-1.2", id, tp, name, planned*1000, kernels*1000, r)
				}
			}
		}
	}
	h100, _ := LookupGPU("H100")
	h200, _ := LookupGPU("H200")
	want := h100.DecodeEfficiency * share["h200"] / share["h100"]
	if math.Abs(h200.DecodeEfficiency-want) > 0.01 {
		t.Errorf("the H200's DecodeEfficiency is %.3f; the H100's %.2f times the measured shares' ratio %.3f/%.3f is %.3f", h200.DecodeEfficiency, h100.DecodeEfficiency, share["h200"], share["h100"], want)
	}
}
