// Package cachehit tells measurements served from a prefix cache apart
// from cold ones: a request's first token cannot come sooner than the GPU
// takes to prefill its prompt, unless the server found the prompt (or most
// of it) in its prefix cache. calibrate leaves such runs out of a fit, and
// the report flags them beside the plan's estimate, because a cached run
// measures the cache, not the model's prefill.
package cachehit

import (
	"fmt"

	"github.com/infercrane/infercrane/planner/perf"
)

// Fraction is how far below a lone prefill's compute a measured TTFT must
// fall to count as served from a prefix cache: the catalog's time for the
// GPU to prefill one prompt alone (no front end, no queueing), times this
// fraction. Nothing but a cache hit makes a first token come sooner than
// half of that.
const Fraction = 0.5

// LonePrefillMs is the catalog's time for lane's GPU to prefill one prompt
// of input tokens alone, in milliseconds: the floor of any cold TTFT.
func LonePrefillMs(lane perf.Lane, input int) float64 {
	return 1000 * perf.StepTime(lane.Model, lane.Hardware, input, 1, 0, 0)
}

// Floor is the TTFT in milliseconds below which a request of input tokens
// on lane counts as served from a prefix cache, with the times scaled by
// scale (the sim executor's speedup divides them; 1 elsewhere).
func Floor(lane perf.Lane, input int, scale float64) float64 {
	if scale <= 0 {
		scale = 1
	}
	return Fraction * LonePrefillMs(lane, input) / scale
}

// TTFT says why a measured TTFT p50 of ttft ms for prompts of input tokens
// on lane looks served from a prefix cache the measurement does not
// declare ("" when it does not), at the given time scale (see Floor).
func TTFT(lane perf.Lane, input int, ttft, scale float64) string {
	floor := Floor(lane, input, scale)
	if ttft <= 0 || ttft >= floor {
		return ""
	}
	return fmt.Sprintf("TTFT p50 %.1f ms is under %.0f%% of a lone %d-token prefill's %.1f ms on %s: the prompts were served from a prefix cache the measurement does not declare (identical prompts across runs?)",
		ttft, 100*Fraction, input, floor/Fraction, lane.Hardware.GPU.Name)
}

// Requests counts the TTFTs (ms) under Floor: the requests whose prompts
// a prefix cache served.
func Requests(lane perf.Lane, input int, ttfts []float64, scale float64) (hits int, floor float64) {
	floor = Floor(lane, input, scale)
	for _, t := range ttfts {
		if t > 0 && t < floor {
			hits++
		}
	}
	return hits, floor
}
