package calibrate

import (
	"testing"

	"github.com/infercrane/infercrane/executor/evidence"
)

// In a screen comparing runtimes each campaign is modelled with its own
// runtime's settings, not the screen's first.
func TestObservationsUseTheCampaignsRuntime(t *testing.T) {
	p95 := 40.0
	camp := func(runtime string) evidence.Campaign {
		return evidence.Campaign{Profile: "chat", Lane: "lane-" + runtime, GPU: "l40s", GPUType: "L40S", Runtime: runtime,
			Workload:  evidence.Workload{InputTokens: 512, OutputTokens: 32, Concurrency: 4, RequestsPerRun: 16, TemplateHeadroom: 32},
			Aggregate: evidence.Metrics{OutputTokenThroughput: 100, Latencies: evidence.Latencies{TTFTP95Ms: &p95}}}
	}
	ev := &evidence.Evidence{Environment: evidence.Environment{
		GPURequest: []string{"L40S x1"},
		Runtime:    evidence.Runtime{Engine: "vllm", Version: "0.22.1", Args: []string{}},
		Runtimes: []evidence.Runtime{
			{Name: "wide", Engine: "vllm", Version: "0.22.1", Args: []string{}},
			{Name: "narrow", Engine: "vllm", Version: "0.22.1", Args: []string{"--max-num-seqs", "2", "--no-enable-prefix-caching"}},
		},
	}}
	m := evidence.ModelEvidence{Name: "q06", Model: "Qwen/Qwen3-0.6B", Campaigns: []evidence.Campaign{camp("wide"), camp("narrow")}}
	seqs := map[string]int{}
	caching := map[string]bool{}
	for _, c := range m.Campaigns {
		obs, _, why, _ := observations(ev, m, c, nil, nil, false)
		if why != "" || len(obs) != 1 {
			t.Fatalf("%s: %d observations (%s)", c.Runtime, len(obs), why)
		}
		seqs[c.Runtime], caching[c.Runtime] = obs[0].Lane.Engine.MaxNumSeqs, obs[0].Lane.Engine.PrefixCaching
	}
	if seqs["narrow"] != 2 || seqs["wide"] == 2 || caching["narrow"] || !caching["wide"] {
		t.Errorf("max_num_seqs %v, prefix caching %v: want each campaign's own runtime", seqs, caching)
	}
}
