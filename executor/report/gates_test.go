package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner"
)

// campaignOf builds the fixture and returns the campaign of model name.
func campaignOf(t *testing.T, in Input, model string) evidence.Campaign {
	t.Helper()
	evs, err := BuildEvidence(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range evs[0].Models {
		if m.Name == model {
			return m.Campaigns[0]
		}
	}
	t.Fatalf("no model %s", model)
	return evidence.Campaign{}
}

func TestEvaluateGate(t *testing.T) {
	c := campaignOf(t, fixtureInput(), "big")
	cases := []struct {
		name, src      string
		minRuns        int
		maxCV          float64
		status, reason string
	}{
		{"pass", "lane.failed == 0 && lane.succeeded == 60", 0, 0, evidence.StatusPass, "holds"},
		{"fail", "lane.ttft_p95_ms <= 10", 0, 0, evidence.StatusFail, "gate fail failed"},
		{"functions", "max(lane.ttft_p99_ms, lane.ttft_p95_ms) < 1000", 0, 0, evidence.StatusPass, "holds"},
		{"failure class", "lane.failures.timeout == 0", 0, 0, evidence.StatusPass, "holds"},
		{"truncated class", "lane.failures.truncated == 0", 0, 0, evidence.StatusPass, "holds"},
		{"pooled", "lane.pooled.latency_p99_ms > 0", 0, 0, evidence.StatusPass, "holds"},
		{"runs", "lane.runs == 3", 0, 0, evidence.StatusPass, "holds"},
		{"missing metric", "lane.ttft_p42_ms < 5", 0, 0, evidence.StatusInconclusive, "metric lane.ttft_p42_ms is missing"},
		{"cv with SLO", "lane.cv.goodput < 1", 0, 0, evidence.StatusPass, "holds"},
		{"not lane", "var.x == 1", 0, 0, evidence.StatusInconclusive, `refers to "var"`},
		{"not bool", "lane.failed + 1", 0, 0, evidence.StatusInconclusive, "not true or false"},
		{"too few runs", "lane.failed == 0", 5, 0, evidence.StatusInconclusive, "3 completed run(s), the gate needs min_runs = 5"},
		{"too few runs and false", "lane.failed > 0", 5, 0, evidence.StatusInconclusive, "(condition is false)"},
		{"cv too high", "lane.failed == 0", 0, 0.001, evidence.StatusInconclusive, "above max_cv = 0.001"},
		{"cv fine", "lane.failed == 0", 3, 0.5, evidence.StatusPass, "holds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := mustGate(tc.name, tc.src, "gate "+tc.name+" failed", tc.minRuns, tc.maxCV)
			res := evaluateGate(g, &c)
			if res.Status != tc.status || !strings.Contains(res.Reason, tc.reason) {
				t.Errorf("%s: %s (%q), want %s containing %q", tc.src, res.Status, res.Reason, tc.status, tc.reason)
			}
		})
	}
}

func TestGateNeedsRunsAndCV(t *testing.T) {
	in := fixtureInput()
	for id := range in.Runs {
		in.Runs[id] = in.Runs[id][:1]
	}
	for _, l := range in.Plan.Lanes {
		l.Runs = 1
	}
	c := campaignOf(t, in, "big")
	res := evaluateGate(mustGate("g", "lane.failed == 0", "", 0, 0.2), &c)
	if res.Status != evidence.StatusInconclusive || !strings.Contains(res.Reason, "needs at least 2 runs") {
		t.Errorf("one run with max_cv: %+v", res)
	}
	res = evaluateGate(mustGate("g", "lane.cv.output_token_throughput < 0.1", "", 0, 0), &c)
	if res.Status != evidence.StatusInconclusive || !strings.Contains(res.Reason, "lane.cv.output_token_throughput is missing") {
		t.Errorf("cv of one run: %+v", res)
	}
	in.Runs["bbbb2222"] = nil
	c = campaignOf(t, in, "big")
	if res := evaluateGate(mustGate("g", "lane.failed == 0", "", 0, 0), &c); res.Status != evidence.StatusInconclusive || res.Reason != "incomplete: 0 of 1 runs (no completed runs)" {
		t.Errorf("no runs: %+v", res)
	}
}

// TestExitCodes: fail beats inconclusive beats pass.
func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		gates map[string]string
		want  int
	}{
		{map[string]string{"clean": "lane.runs > 0", "fast": "lane.failed >= 0", "stable": "true"}, evidence.ExitPass},
		{map[string]string{"clean": "lane.runs > 0", "fast": "lane.nope == 1", "stable": "true"}, evidence.ExitInconclusive},
		{map[string]string{"clean": "lane.failed == 0", "fast": "lane.nope == 1", "stable": "true"}, evidence.ExitFail},
	} {
		in := fixtureInput()
		for name, src := range tc.gates {
			in.Gates[name] = mustGate(name, src, "", 0, 0)
		}
		evs, err := BuildEvidence(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := evs[0].GateSummary.ExitCode; got != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.gates, got, tc.want)
		}
	}
	if worseExit(evidence.ExitInconclusive, evidence.ExitFail) != evidence.ExitFail || worseExit(evidence.ExitFail, evidence.ExitInconclusive) != evidence.ExitFail || worseExit(evidence.ExitPass, evidence.ExitInconclusive) != evidence.ExitInconclusive {
		t.Error("worseExit ranks fail over inconclusive over pass")
	}
}

// TestUnknownGateIsInconclusive: a gate named by the screen but not defined.
func TestUnknownGateIsInconclusive(t *testing.T) {
	in := fixtureInput()
	delete(in.Gates, "fast")
	c := campaignOf(t, in, "small")
	for _, g := range c.Gates {
		if g.Gate == "fast" && g.Status != evidence.StatusInconclusive {
			t.Errorf("%+v", g)
		}
	}
}

// TestIncompleteLaneIsInconclusive: a lane with fewer runs than planned
// passes no gate, even one whose condition holds, and the screen's exit
// code is inconclusive even without gates.
func TestIncompleteLaneIsInconclusive(t *testing.T) {
	in := fixtureInput()
	in.Runs["bbbb2222"] = in.Runs["bbbb2222"][:1]
	in.Gates = map[string]*GateSpec{"clean": mustGate("clean", "lane.failed == 0", "", 0, 0)}
	in.Plan.Screens[0].Gates = []string{"clean"}
	evs, err := BuildEvidence(in)
	if err != nil {
		t.Fatal(err)
	}
	ev := evs[0]
	big := ev.Models[1].Campaigns[0]
	if big.Complete || big.RunsPlanned != 3 || big.Gates[0].Status != evidence.StatusInconclusive || big.Gates[0].Reason != "incomplete: 1 of 3 runs (condition holds)" {
		t.Errorf("big: complete %v planned %d gate %+v", big.Complete, big.RunsPlanned, big.Gates[0])
	}
	c := ev.Completeness
	if c.Complete || c.RunsPlanned != 6 || c.RunsCompleted != 4 || c.RunsMissing != 2 || len(c.IncompleteLanes) != 1 || c.IncompleteLanes[0] != "bbbb2222" || c.Words() != "incomplete: 4 of 6 runs" {
		t.Errorf("completeness %+v (%s)", c, c.Words())
	}
	in.Gates, in.Plan.Screens[0].Gates = nil, nil
	evs, _ = BuildEvidence(in)
	if evs[0].GateSummary.ExitCode != evidence.ExitInconclusive {
		t.Errorf("an incomplete screen without gates exits %d, want %d", evs[0].GateSummary.ExitCode, evidence.ExitInconclusive)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, evs[0]); err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(md.String(), "\n\n", 3)
	if len(first) < 2 || !strings.Contains(first[1], "incomplete: 4 of 6 runs") {
		t.Errorf("the Markdown does not open with the incomplete banner:\n%s", md.String())
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, evs[0], nil); err != nil {
		t.Fatal(err)
	}
	body := html.String()
	if i, j := strings.Index(body, `class="incomplete"`), strings.Index(body, "<table"); i < 0 || (j >= 0 && i > j) {
		t.Errorf("the HTML has no incomplete banner before its first table")
	}
}

// TestFixedLoadScreenHasAPrice: a lane without a capacity search has its
// cost per million output tokens at the load it measured (the GPU price x
// GPUs / output tok/s x 1e6) in the evidence, the Markdown and the HTML;
// on the simulated engine, which bills nothing, it is marked notional.
// Before, only a capacity search had one.
func TestFixedLoadScreenHasAPrice(t *testing.T) {
	for _, executor := range []string{"sim", "modal"} {
		in := fixtureInput()
		in.Plan.Assumptions = []planner.Assumption{{GPU: "l40s", GPUType: "L40S", Count: 1, PricePerSecond: 0.000542}}
		for _, l := range in.Plan.Lanes {
			l.Inputs.ExecutorType, l.Inputs.Capabilities = executor, lang.BuiltinExecutors[executor]
		}
		c := campaignOf(t, in, "small")
		if c.Price == nil {
			t.Fatalf("%s: no price", executor)
		}
		want := 0.000542 / c.Aggregate.OutputTokenThroughput * 1e6
		if math.Abs(c.Price.USDPerMTok-want) > 1e-9 || c.Price.Notional != (executor == "sim") {
			t.Errorf("%s: price %+v, want %.4f, notional on the sim only", executor, c.Price, want)
		}
		evs, err := BuildEvidence(in)
		if err != nil {
			t.Fatal(err)
		}
		var md, page bytes.Buffer
		if err := WriteMarkdown(&md, evs[0]); err != nil {
			t.Fatal(err)
		}
		if err := WriteHTML(&page, evs[0], nil); err != nil {
			t.Fatal(err)
		}
		cell := fmt.Sprintf("$%.4f", want)
		if executor == "sim" {
			cell += "*"
		}
		for what, out := range map[string]string{"Markdown": md.String(), "HTML": page.String()} {
			if !strings.Contains(out, "$ per M output tok") || !strings.Contains(out, cell) {
				t.Errorf("%s on %s lacks the price %s", what, executor, cell)
			}
			if strings.Contains(out, "notional: the simulated engine bills nothing") != (executor == "sim") {
				t.Errorf("%s on %s: the notional note is wrong", what, executor)
			}
		}
	}
}
