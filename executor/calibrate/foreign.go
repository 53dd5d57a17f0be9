package calibrate

import (
	"fmt"
	"strings"

	"github.com/infercrane/infercrane/executor/benchresult"
	"github.com/infercrane/infercrane/executor/cachehit"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/perf"
)

// CachedTTFTFraction is how far below a lone prefill's compute a measured
// TTFT p50 must fall to count as served from a prefix cache the evidence
// does not declare (cachehit.Fraction).
const CachedTTFTFraction = cachehit.Fraction

// cachedTTFT says why a measured TTFT p50 of ttft ms for prompts of input
// tokens looks served from a prefix cache ("" when it does not).
func cachedTTFT(lane perf.Lane, input int, ttft float64) string {
	return cachehit.TTFT(lane, input, ttft, 1)
}

// foreignRef is the calibration's record of another tool's result.
func foreignRef(r benchresult.Result) perf.EvidenceRef {
	return perf.EvidenceRef{File: r.File, Screen: r.Label, Digest: r.Digest, Tool: r.Tool, ToolVersion: orNotRecorded(r.ToolVersion)}
}

func orNotRecorded(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}

// foreignObservations turns one result of another tool into observations
// (one per run when the document has each run's figures), with its group.
// warn says why it cannot be used; notes are what the user should know
// (runs left out as cache-contaminated).
func foreignObservations(r benchresult.Result, opts Options) (obs []perf.Observation, gr *group, warn string, notes []string) {
	arch, ok := opts.lookupModel(r.Model)
	if !ok {
		return nil, nil, fmt.Sprintf("model %q is not in the model catalog (%s); give its config.json with -model-config FILE", r.Model, strings.Join(perf.ModelIDs(), ", ")), nil
	}
	g, ok := perf.LookupGPU(r.GPU)
	if !ok {
		return nil, nil, fmt.Sprintf("GPU %q is not in the catalog", r.GPU), nil
	}
	longest := r.InputTokens + r.OutputTokens
	for _, z := range r.Sizes {
		longest = max(longest, z.Input+z.Output)
	}
	maxLen := longest + templateHeadroom
	// The version's settings and front end, and the checkpoint's precision
	// (an FP8 or MXFP4 model's weights at their own width), as the plan
	// models them.
	hw, rs, err := perf.CatalogServer(r.Model, g, r.GPUCount, engine.Runtime{RuntimeEngine: r.Engine, RuntimeVersion: r.EngineVersion}, "completions", maxLen)
	if err != nil {
		return nil, nil, err.Error(), nil
	}
	lane, err := perf.NewLane(arch, hw, rs.Engine(), maxLen)
	if err != nil {
		return nil, nil, err.Error(), nil
	}
	in := planner.LaneInputs{Settings: r.Settings()}
	load := (&planner.Lane{Inputs: in}).PerfLoad()
	for _, z := range r.Sizes {
		load.Sizes = append(load.Sizes, perf.RequestSize{Input: z.Input, Output: z.Output})
	}
	gr = &group{gpuType: g.Name, engine: r.Engine, version: r.EngineVersion, start: perf.ParamsOf(hw.Assume), executor: "external: " + r.Tool}
	name := r.Model + " " + r.File
	if r.Label != "" {
		name += " " + r.Label
	}
	add := func(label string, m map[string]float64, runs int) {
		if why := cachedTTFT(lane, r.InputTokens, m[benchresult.TTFTP50]); why != "" {
			if !opts.KeepCached {
				notes = append(notes, fmt.Sprintf("%s left out of the fit: %s; give -keep-cached to fit it anyway", label, why))
				return
			}
			notes = append(notes, fmt.Sprintf("%s kept (-keep-cached) though %s", label, why))
		}
		obs = append(obs, perf.Observation{Name: label, Lane: lane, Load: load, Runs: runs, Measured: m})
	}
	switch {
	case len(r.RunMetrics) > 0:
		for i, m := range r.RunMetrics {
			add(fmt.Sprintf("%s run %d", name, i+1), m, 1)
		}
	default:
		m := r.Metrics
		if len(r.TTFTsMs) > 0 {
			// Per-request TTFTs: the share of requests served from a cache.
			hit, floor := cachehit.Requests(lane, r.InputTokens, r.TTFTsMs, 1)
			if hit > 0 && 2*hit <= len(r.TTFTsMs) {
				notes = append(notes, fmt.Sprintf("%s: %d of %d requests' TTFT is under %.1f ms (half a lone prefill): some prompts were served from a prefix cache", name, hit, len(r.TTFTsMs), floor))
			}
		}
		add(name, m, r.Runs)
	}
	if len(obs) == 0 {
		return nil, nil, "every run's TTFT says its prompts were served from a prefix cache; nothing is left to fit (give -keep-cached to fit them anyway)", notes
	}
	for _, n := range r.Notes {
		notes = append(notes, name+": "+n)
	}
	return obs, gr, "", notes
}

// templateHeadroom is the context calibrate reserves beyond a result's
// longest request for the chat template (the tools do not record it).
const templateHeadroom = 64
