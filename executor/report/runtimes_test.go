package report

import (
	"bytes"
	"encoding/json"
	"github.com/infercrane/infercrane/lang/shape"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/load"
	"github.com/infercrane/infercrane/planner/perf"
)

// runtimesInput is a screen comparing two runtimes (prefix caching on,
// the reference, and off) for two models on one prefix-reuse shape, five
// runs each: the cached lanes answer 20 ms sooner and their server reports
// hits on 40% of the prompt tokens.
func runtimesInput() Input {
	const n, out, runs = 20, 16, 5
	lane := func(id, model, runtime string, caching bool) *planner.Lane {
		args := []string{"--enable-prefix-caching"}
		if !caching {
			args = []string{"--no-enable-prefix-caching"}
		}
		return &planner.Lane{
			ID: id, Key: "s/" + model + "/shared/l40s/" + runtime, Screen: "s", Model: model, Shape: "shared", GPU: "l40s",
			Runtime: runtime, Executor: "sim", Deployment: "dep-" + id, Action: planner.ActionRun, Runs: runs, RequestsPerRun: n,
			Inputs: planner.LaneInputs{
				ModelID: "Org/" + model, MaxContext: 4096,
				Settings: shape.Settings{InputTokens: 128, OutputTokens: out, Concurrency: 4, Requests: n, Streaming: true, API: "chat"},
				GPUType:  "L40S", GPUCount: 1,
				Runtime: engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: "0.11.0", RuntimeArgs: args}, ExecutorType: "sim", Capabilities: lang.BuiltinExecutors["sim"], Seed: 17,
				Workload: &load.Spec{Prefix: &load.Prefix{Groups: 2, SharedTokens: 64}},
			},
			Perf: &perf.Lane{Engine: perf.EngineConfig{PrefixCaching: caching}},
		}
	}
	plan := &planner.Plan{
		FormatVersion: planner.FormatVersion, SpecDigest: "sha256:spec", PlanDigest: "sha256:plan",
		Screens: []*planner.Screen{{Name: "s", Baseline: "big", Seed: 17, Runs: runs, Runtimes: []string{"on", "off"}}},
		Lanes: []*planner.Lane{
			lane("a1", "small", "on", true), lane("a2", "small", "off", false),
			lane("b1", "big", "on", true), lane("b2", "big", "off", false),
		},
	}
	data := map[string][]RunData{}
	for _, l := range plan.Lanes {
		ttft := 30.0
		if l.Model == "big" {
			ttft = 45
		}
		caching := l.Runtime == "on"
		if !caching {
			ttft += 20
		}
		for r := 1; r <= runs; r++ {
			rd := RunData{Run: r, Records: makeRecords(n, out, ttft+float64(r%2), 4, 0.1, nil), RecordsFile: "runs/" + l.ID + ".jsonl",
				FinishedAt: "2026-11-29T11:50:00Z", ServerView: &loadgen.ServerView{}}
			if caching {
				rd.ServerView.PrefixCache = &loadgen.ServerPrefixCache{QueriedTokens: 1000, HitTokens: 400}
			}
			data[l.ID] = append(data[l.ID], rd)
		}
	}
	return Input{Plan: plan, Runs: data, ObservedAt: fixtureTime, InfercraneVersion: "0.1.0", Resamples: 500}
}

func TestRuntimeComparisons(t *testing.T) {
	evs, err := BuildEvidence(runtimesInput())
	if err != nil {
		t.Fatal(err)
	}
	ev := evs[0]
	// Model comparisons stay within one runtime: small over big on each.
	if len(ev.Comparisons) != 2 {
		t.Fatalf("comparisons = %d, want one per runtime", len(ev.Comparisons))
	}
	for _, c := range ev.Comparisons {
		if c.Runtime != "on" && c.Runtime != "off" || c.Candidate != "small" || c.Baseline != "big" {
			t.Errorf("comparison %+v", c)
		}
		if r := c.Ratios["small_over_big_ttft_p95_ms"]; r.Value >= 1 {
			t.Errorf("runtime %s: small over big TTFT ratio %.2f, want < 1", c.Runtime, r.Value)
		}
	}
	// Runtime comparisons: off against the reference on, per model.
	if len(ev.RuntimeComparisons) != 2 {
		t.Fatalf("runtime comparisons = %d, want one per model", len(ev.RuntimeComparisons))
	}
	for _, rc := range ev.RuntimeComparisons {
		if rc.Candidate != "off" || rc.Baseline != "on" || rc.Profile != "shared" {
			t.Errorf("runtime comparison %+v", rc)
		}
		if len(rc.Metrics) == 0 || rc.Metrics[0].Metric != "ttft_p50_ms" {
			t.Fatalf("metrics %+v, want TTFT p50 first", rc.Metrics)
		}
		d := rc.Metrics[0]
		if d.Delta < 19 || d.Delta > 21 || d.Candidate-d.Baseline != d.Delta || !d.Significant || d.Value <= 1 {
			t.Errorf("TTFT p50 delta %+v, want about +20 ms, significant", d)
		}
		h := rc.PrefixCache
		if h == nil || h.Baseline == nil || *h.Baseline != 0.4 || h.Candidate != nil || h.Delta != nil ||
			!h.BaselineCaching || h.CandidateCaching {
			t.Errorf("hit ratios %+v", h)
		}
	}
	env := ev.Environment
	if len(env.Runtimes) != 2 || env.Runtimes[0].Name != "on" || env.Runtimes[1].Args[0] != "--no-enable-prefix-caching" ||
		env.Runtime.Args[0] != "--enable-prefix-caching" || env.Runtime.Name != "" {
		t.Errorf("environment runtimes %+v (runtime %+v)", env.Runtimes, env.Runtime)
	}
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			if c.Runtime == "" {
				t.Errorf("campaign %s names no runtime", c.Lane)
			}
			if got := ev.CampaignRuntime(&c); got.Args[0] != map[string]string{"on": "--enable-prefix-caching", "off": "--no-enable-prefix-caching"}[c.Runtime] {
				t.Errorf("campaign %s: runtime %+v", c.Lane, got)
			}
		}
	}
	// The document round-trips and verifies.
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var back evidence.Evidence
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if d, err := evidence.Digest(&back); err != nil || d != ev.Digest {
		t.Errorf("digest after a round trip %s (%v), want %s", d, err, ev.Digest)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, ev); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Runtime comparisons",
		"### small on shared (l40s): off against on",
		"| metric | on (reference) | off | delta | ratio |",
		"| p50 TTFT ms (lower is better) | 31.6 | 51.6 | +20.0 | 1.63x (95% CI 1.61–1.66, significant) |",
		"| prefix-cache hit ratio achieved (intended ",
		"| 40.0% | none reported (prefix caching off) | - |",
		"| Org/small | shared (off) |",
		"runtimes on: vllm 0.11.0 --enable-prefix-caching; off: vllm 0.11.0 --no-enable-prefix-caching",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, ev, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>Runtime comparisons</h2>", "<h3>big on shared (l40s): off against on</h3>", "none reported (prefix caching off)"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// A screen with one runtime writes none of the runtime members, so its
// evidence reads as it always did.
func TestOneRuntimeEvidenceUnchanged(t *testing.T) {
	evs, err := BuildEvidence(fixtureInput())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(evs[0])
	for _, key := range []string{`"runtime_comparisons"`, `"runtimes"`, `"candidate_prefix_caching"`} {
		if bytes.Contains(raw, []byte(key)) {
			t.Errorf("single-runtime evidence has %s", key)
		}
	}
	if bytes.Contains(raw, []byte(`"runtime":"vllm"`)) {
		t.Error("single-runtime campaigns or comparisons name their runtime")
	}
}
