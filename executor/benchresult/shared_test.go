package benchresult

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSharedPrompts: two vllm bench serve runs of one model with the same
// number of prompts (make fidelity's closed-loop and open-loop runs of
// the CPU server, 24 prompts each, default --seed) name each other; a
// run with another prompt count, another model, or another tool does not;
// AIPerf runs name each other only with one recorded --random-seed and
// one input length.
func TestSharedPrompts(t *testing.T) {
	closed, open := read(t, realVLLMBench, cpuHints)[0], read(t, realVLLMBenchOpen, cpuHints)[0]
	fewer := closed
	fewer.File, fewer.Requests = "fewer.json", 12
	other := closed
	other.File, other.Model = "other.json", "Qwen/Qwen3-0.6B"
	aiperf := read(t, realAIPerf, cpuHints)[0]
	seeded := func(file string, seed int64, in int) Result {
		data, err := os.ReadFile(filepath.Join("testdata", realAIPerf))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		doc["input_config"].(map[string]any)["input"] = map[string]any{"random_seed": seed}
		edited, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := Parse(file, edited, cpuHints)
		if err != nil {
			t.Fatal(err)
		}
		if rs[0].Seed == nil || *rs[0].Seed != seed {
			t.Fatalf("AIPerf's --random-seed %d is not read: %v", seed, rs[0].Seed)
		}
		rs[0].InputTokens = in
		return rs[0]
	}
	rs := []Result{closed, open, fewer, other, aiperf, seeded("a17.json", 17, 72), seeded("b17.json", 17, 72), seeded("c17.json", 17, 144), seeded("d18.json", 18, 72),
		seeded("profile_export_aiperf.json", 5, 72), seeded("profile_export_aiperf.json", 5, 72)}
	notes := SharedPrompts(rs)
	want := []string{
		"it and " + realVLLMBenchOpen + " are vllm bench serve runs of tiny-qwen3 with 24 prompts",
		"it and " + realVLLMBench + " are vllm bench serve runs of tiny-qwen3 with 24 prompts",
		"", "", "",
		"it and b17.json are AIPerf runs of tiny-qwen3 with --random-seed 17 and 72-token prompts",
		"it and a17.json are AIPerf runs of tiny-qwen3 with --random-seed 17 and 72-token prompts",
		"", "",
		// two exports of one name, from two runs' artifact directories
		"it and profile_export_aiperf.json are AIPerf runs of tiny-qwen3 with --random-seed 5",
		"it and profile_export_aiperf.json are AIPerf runs of tiny-qwen3 with --random-seed 5",
	}
	for i, w := range want {
		if w == "" && notes[i] != "" || w != "" && !strings.HasPrefix(notes[i], w) {
			t.Errorf("%s: note %q, want one beginning %q", rs[i].Name(), notes[i], w)
		}
	}
	if !strings.Contains(notes[0], "give each run its own --seed") || !strings.Contains(notes[5], "give each run its own --random-seed") {
		t.Errorf("the notes do not say how to avoid it: %q, %q", notes[0], notes[5])
	}
}
