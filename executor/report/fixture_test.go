package report

import (
	"fmt"
	"github.com/infercrane/infercrane/lang/shape"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner"
)

// fixtureTime is the observed_at of every fixture document.
var fixtureTime = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// makeRecords builds the records of one deterministic run: n requests with
// the given ttft and inter-token gap (ms), the gap growing by jitter per
// request, out tokens each, and the requests listed in fail failing with
// their class.
func makeRecords(n, out int, ttftMs, itlMs, jitterMs float64, fail map[int]string) []loadgen.Record {
	ms := func(f float64) int64 { return int64(f * 1e6) }
	recs := make([]loadgen.Record, 0, n)
	for i := 0; i < n; i++ {
		sent := ms(float64(i) * 7.5)
		r := loadgen.Record{Index: i, ScheduledNs: sent, SentNs: sent, InputTokens: 128, PromptTokens: 128, MaxTokens: out}
		if class, bad := fail[i]; bad {
			r.DoneNs = sent + ms(3)
			r.Status = 500
			r.ErrorClass = class
			r.Error = "simulated failure"
			recs = append(recs, r)
			continue
		}
		gap := itlMs + jitterMs*float64(i%5)
		t := sent + ms(ttftMs+float64(i%3))
		r.FirstTokenNs = t
		for k := 0; k < out; k++ {
			r.ChunkNs = append(r.ChunkNs, t)
			if k < out-1 {
				t += ms(gap)
			}
		}
		r.LastTokenNs = r.ChunkNs[len(r.ChunkNs)-1]
		r.DoneNs = r.LastTokenNs + ms(0.5)
		r.OutputTokens, r.ClientTokens, r.Status = out, out, 200
		recs = append(recs, r)
	}
	return recs
}

// fixtureInput is a screen of two models (the baseline "big" and "small")
// on one shape, three runs each, with three gates.
func fixtureInput() Input { return fixtureInputSized(20, 16) }

// fixtureInputSized is fixtureInput with n requests of out tokens per run.
func fixtureInputSized(n, out int) Input { return fixtureInputRuns(n, out, 3) }

// fixtureInputRuns is fixtureInputSized with the given runs per lane.
func fixtureInputRuns(n, out, nruns int) Input {
	lane := func(id, model, modelID string) *planner.Lane {
		return &planner.Lane{
			ID: id, Key: "s/" + model + "/chat/l40s", Screen: "s", Model: model, Shape: "chat", GPU: "l40s",
			Runtime: "vllm", Executor: "sim", Deployment: "dep-" + model, Action: planner.ActionRun, Runs: nruns, RequestsPerRun: n,
			Inputs: planner.LaneInputs{
				ModelID: modelID, Revision: "abc123", MaxContext: 4096,
				Settings: shape.Settings{InputTokens: 128, OutputTokens: out, TemplateHeadroom: 64, Concurrency: 4, Requests: n, Streaming: true, API: "chat"},
				GPUType:  "L40S", GPUCount: 1,
				Runtime:      engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: "0.11.0", RuntimeArgs: []string{"--max-model-len", "4096"}},
				ExecutorType: "sim", Capabilities: lang.BuiltinExecutors["sim"], Seed: 17, SLOTTFTMs: 60,
			},
		}
	}
	plan := &planner.Plan{
		FormatVersion: planner.FormatVersion, InfercraneVersion: "0.1.0",
		SpecDigest: "sha256:spec", PlanDigest: "sha256:plan",
		Screens: []*planner.Screen{{Name: "s", Baseline: "big", Gates: []string{"clean", "fast", "stable"},
			SelectionBoundary: "Performance-only screening; quality is not measured.", Seed: 17, Runs: nruns}},
		Lanes: []*planner.Lane{lane("aaaa1111", "small", "Org/Small-0.6B"), lane("bbbb2222", "big", "Org/Big-1.7B")},
		Preflight: []planner.Finding{
			{Severity: planner.SeverityWarning, Screen: "s", Summary: "3 runs are not decision grade", Detail: "use 5 or more runs"},
			{Severity: planner.SeverityWarning, Screen: "other", Summary: "not this screen"},
		},
	}
	runs := map[string][]RunData{}
	for r := 1; r <= nruns; r++ {
		small := makeRecords(n, out, 30+float64(r), 4+0.2*float64(r), 0.1, map[int]string{n / 3: loadgen.FailServerError})
		big := makeRecords(n, out, 50+2*float64(r), 6+0.3*float64(r), 0.2, nil)
		runs["aaaa1111"] = append(runs["aaaa1111"], RunData{Run: r, Records: small, RecordsFile: "runs/aaaa1111/" + string(rune('0'+r)) + ".jsonl",
			FinishedAt: "2026-11-29T11:5" + string(rune('0'+r)) + ":00Z", Server: map[string]string{"engine": "sim"}})
		runs["bbbb2222"] = append(runs["bbbb2222"], RunData{Run: r, Records: big, RecordsFile: "runs/bbbb2222/" + string(rune('0'+r)) + ".jsonl",
			FinishedAt: "2026-11-29T11:4" + string(rune('0'+r)) + ":00Z", Server: map[string]string{"engine": "sim"}})
	}
	// The gates as the planner resolves fixtureSpec's gate blocks (with
	// var.min_runs = 2).
	plan.Screens[0].GateSpecs = []planner.Gate{
		{Name: "clean", Condition: "lane.failed == 0", Metrics: []string{"failed"}, ErrorMessage: "Every request must succeed."},
		{Name: "fast", Condition: "lane.ttft_p95_ms <= 55", Metrics: []string{"ttft_p95_ms"}, ErrorMessage: "p95 TTFT must stay within 55 ms."},
		{Name: "stable", Condition: "lane.cv.output_token_throughput <= 0.5", Metrics: []string{"cv.output_token_throughput"}, ErrorMessage: "Throughput must be stable.", MinRuns: 2},
	}
	gates, warnings := GatesFromPlan(plan)
	if len(warnings) > 0 || len(gates) != 3 {
		panic(fmt.Sprint(gates, warnings))
	}
	return Input{
		Plan: plan, Runs: runs, Gates: gates, ObservedAt: fixtureTime, InfercraneVersion: "0.1.0", Resamples: 500,
		Cleanup: &evidence.Cleanup{State: "torn_down", DeploymentsTornDown: []string{"dep-big", "dep-small"}},
	}
}

func mustGate(name, src, msg string, minRuns int, maxCV float64) *GateSpec {
	expr, diags := hclsyntax.ParseExpression([]byte(src), "gate.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		panic(diags.Error())
	}
	return &GateSpec{Name: name, Condition: expr, ConditionText: src, ErrorMessage: msg, MinRuns: minRuns, MaxCV: maxCV}
}
