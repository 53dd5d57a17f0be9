package benchresult

import (
	"fmt"
	"strings"
)

// Name is the result's file, and its label within the file when it has one.
func (r Result) Name() string {
	if r.Label == "" {
		return r.File
	}
	return r.File + " (" + r.Label + ")"
}

// SharedPrompts says, for each of rs, which others of rs sent it the same
// prompts, so that on one server with prefix caching (vLLM's default from
// 0.8) whichever ran later found the earlier's prompts in the cache and
// measured a cache, not a cold server (empty: none). The tools draw their
// prompts from a seed:
//   - vllm bench serve seeds every dataset from --seed (0 unless given,
//     and not saved in its result): two runs of one model with the same
//     --num-prompts draw the same ShareGPT sample, and the random
//     dataset's prompt i is offset[i] + i + 0, 1, 2, ... (benchmarks'
//     RandomDataset), with the same offsets for the same number of
//     prompts, so at one input length the prompts are identical and at
//     two the longer ones begin with the shorter ones (vLLM issue 52884
//     measured a repeated run on an H100 up to 86% faster on
//     throughput; issue 54227, a concurrency sweep's TPOT up to 76% fast);
//   - AIPerf with one --random-seed (recorded in its export) sends the
//     same prompts at the same input length (the earlier L40S screen:
//     docs/calibration.md, "Measured errors").
//
// GuideLLM is left out: it restarts its data at every rate of a sweep,
// but its synthetic generator marks each rate's prompts with the rate's
// index (not in every version), which this cannot tell from the report.
func SharedPrompts(rs []Result) []string {
	notes := make([]string, len(rs))
	for i, a := range rs {
		var with []string
		for j, b := range rs {
			if i != j && samePrompts(a, b) {
				with = append(with, b.Name())
			}
		}
		if len(with) == 0 {
			continue
		}
		switch a.Tool {
		case ToolVLLMBench:
			notes[i] = fmt.Sprintf("it and %s are vllm bench serve runs of %s with %d prompts: under one --seed (0 unless given; the result does not record it) they send the same prompts (the random dataset's longer prompts begin with the shorter ones'), so on one server with prefix caching the later run's TTFT is the cache's; give each run its own --seed, or serve with --no-enable-prefix-caching",
				strings.Join(with, ", "), a.Model, a.Requests)
		case ToolAIPerf:
			notes[i] = fmt.Sprintf("it and %s are AIPerf runs of %s with --random-seed %d and %d-token prompts: they send the same prompts, so on one server with prefix caching the later run's TTFT is the cache's; give each run its own --random-seed, or serve with --no-enable-prefix-caching",
				strings.Join(with, ", "), a.Model, *a.Seed, a.InputTokens)
		}
	}
	return notes
}

// samePrompts says whether a and b, two results of one tool and model,
// drew the same prompts (SharedPrompts). Their names may be the same:
// AIPerf names every export profile_export_aiperf.json.
func samePrompts(a, b Result) bool {
	if a.Tool != b.Tool || a.Model != b.Model {
		return false
	}
	switch a.Tool {
	case ToolVLLMBench:
		return a.Requests > 0 && a.Requests == b.Requests
	case ToolAIPerf:
		return a.Seed != nil && b.Seed != nil && *a.Seed == *b.Seed && a.InputTokens == b.InputTokens
	}
	return false
}
