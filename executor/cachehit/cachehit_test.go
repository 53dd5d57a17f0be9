package cachehit

import (
	"strings"
	"testing"

	"github.com/infercrane/infercrane/planner/perf"
)

// A TTFT under half a lone prefill's compute is flagged, one at or above
// it is not, and the sim executor's speedup (scale) lowers the floor in
// proportion: the judgement is relative to the catalog's prefill time.
func TestFloorAndFlags(t *testing.T) {
	m, _ := perf.LookupModel("meta-llama/Llama-3.1-8B-Instruct")
	g, _ := perf.LookupGPU("H100")
	lane, err := perf.NewLane(m, perf.Hardware{GPU: g, Count: 1, BytesPerElem: 2, Assume: perf.DefaultAssumptions(g)},
		perf.EngineConfig{MaxNumSeqs: 256, MaxBatchedTokens: 8192, ChunkedPrefill: true, BlockSize: 16}, 8192)
	if err != nil {
		t.Fatal(err)
	}
	floor := Floor(lane, 4096, 1)
	if lone := LonePrefillMs(lane, 4096); floor != Fraction*lone || lone < 20 || lone > 500 {
		t.Fatalf("floor %.2f ms of a lone 4096-token prefill's %.2f ms on an H100", floor, lone)
	}
	if got := Floor(lane, 4096, 4); got != floor/4 {
		t.Errorf("at speedup 4 the floor is %.3f, want %.3f", got, floor/4)
	}
	if why := TTFT(lane, 4096, 0.9*floor, 1); !strings.Contains(why, "served from a prefix cache") {
		t.Errorf("a TTFT under the floor is not flagged: %q", why)
	}
	if why := TTFT(lane, 4096, floor, 1); why != "" {
		t.Errorf("a TTFT at the floor is flagged: %q", why)
	}
	if hits, _ := Requests(lane, 4096, []float64{0.5 * floor, floor, 2 * floor, 0}, 1); hits != 1 {
		t.Errorf("%d requests under the floor, want 1 (a zero TTFT is no measurement)", hits)
	}
}
