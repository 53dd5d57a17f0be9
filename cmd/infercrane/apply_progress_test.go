package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/redact"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/perf"
)

// progressEvents is an apply of one lane with two runs, the second failed.
var progressEvents = []executor.Event{
	{Type: executor.EventApplyStarted, LanesToRun: 1, RunsToDo: 2, Message: "parallelism 1"},
	{Type: executor.EventDeployStarted, Deployment: "d1", Message: "m on L40S, executor sim"},
	{Type: executor.EventDeployFinished, Deployment: "d1", Server: "http://127.0.0.1:1"},
	{Type: executor.EventRunStarted, Lane: "l1", Key: "s/m/chat/l40s", Run: 1, Runs: 2, Total: 8},
	{Type: executor.EventRunProgress, Lane: "l1", Run: 1, Done: 4, Failed: 1, Total: 8, Elapsed: 2},
	{Type: executor.EventRunFinished, Lane: "l1", Key: "s/m/chat/l40s", Run: 1, Runs: 2, Done: 8, Total: 8, Failed: 1, RequestThroughput: 2.5, OutputTokenThroughput: 320},
	{Type: executor.EventRunStarted, Lane: "l1", Key: "s/m/chat/l40s", Run: 2, Runs: 2, Total: 8},
	{Type: executor.EventRunFailed, Lane: "l1", Key: "s/m/chat/l40s", Run: 2, Error: "boom"},
	{Type: executor.EventTeardownFinished, Deployment: "d1", Elapsed: 0.5},
	{Type: executor.EventApplyFinished, RunsCompleted: 1, RunsFailed: 1, Elapsed: 3},
}

func TestPlainViewLines(t *testing.T) {
	var b bytes.Buffer
	v := newPlainView(&b, nil)
	for _, e := range progressEvents {
		v.Event(e)
	}
	v.Close()
	out := b.String()
	for _, want := range []string{
		"[00:00] Applying: 1 lane(s), 2 run(s), parallelism 1.",
		"Deploying d1: m on L40S, executor sim...",
		"Run 1/2 of lane l1 (s/m/chat/l40s): 8/8 requests, 1 failed, 2.50 req/s, 320 output tok/s",
		"Run 2 of lane l1 (s/m/chat/l40s) failed: boom",
		"Tore down d1 (0.5s).",
		"Apply finished in 3.0s: 1 run(s) completed, 1 failed.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "4/8") {
		t.Error("plain output printed a progress tick")
	}
}

func TestBarsViewRendersRunsAndLog(t *testing.T) {
	var b bytes.Buffer
	v := newBarsView(&b, 2, nil)
	for _, e := range progressEvents {
		v.Event(e)
	}
	v.Close()
	out := b.String()
	for _, want := range []string{"runs", "Run 1/2 of lane l1", "Tore down d1", "Apply finished"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestJSONViewOneObjectALine(t *testing.T) {
	var b bytes.Buffer
	v := newJSONView(&b, nil)
	for _, e := range progressEvents {
		v.Event(e)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != len(progressEvents) {
		t.Fatalf("%d lines for %d events", len(lines), len(progressEvents))
	}
	for i, l := range lines {
		var e executor.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Type != progressEvents[i].Type {
			t.Fatalf("line %d: %s (%v)", i, l, err)
		}
	}
}

// trackPlan has two lanes of two runs on two sim deployments; the plan
// estimates 10 s per run.
func trackPlan() *planner.Plan {
	lane := func(id, key, dep, model string) *planner.Lane {
		return &planner.Lane{ID: id, Key: key, Deployment: dep, Action: planner.ActionRun, Runs: 2, RequestsPerRun: 8,
			Inputs:   planner.LaneInputs{ModelID: model, GPUType: "L40S", ExecutorType: "sim"},
			Estimate: planner.Estimate{Available: true, Estimate: perf.Estimate{RunSeconds: 10}}}
	}
	return &planner.Plan{Lanes: []*planner.Lane{lane("l1", "s/a/chat/l40s", "d1", "Qwen/A"), lane("l2", "s/b/chat/l40s", "d2", "Qwen/B")}}
}

// TestTrackerETAFromEstimates: the time left starts from the plan's
// per-run estimates (not 00:00 before the first run ends) and is rescaled
// by the measured run times.
func TestTrackerETAFromEstimates(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := newTracker(trackPlan(), 1)
	tr.now = func() time.Time { return now }
	if s, ok := tr.eta(); !ok || s != 40 {
		t.Fatalf("ETA before anything ran = %v (%v), want 40 s from 4 runs x 10 s", s, ok)
	}
	tr.observe(executor.Event{Type: executor.EventRunStarted, Time: now, Lane: "l1", Run: 1, Runs: 2, Total: 8})
	now = now.Add(2 * time.Second)
	tr.observe(executor.Event{Type: executor.EventRunProgress, Time: now, Lane: "l1", Run: 1, Done: 4, Total: 8})
	// The run in progress: 4 of 8 requests in 2 s, so 2 s more; 3 runs x 10 s.
	if s, _ := tr.eta(); s != 32 {
		t.Errorf("ETA mid-run = %v, want 32", s)
	}
	now = now.Add(2 * time.Second)
	tr.observe(executor.Event{Type: executor.EventRunFinished, Time: now, Lane: "l1", Run: 1, Runs: 2, Done: 8, Total: 8, Elapsed: 4, TTFTP50Ms: 12, OutputTokens: 400})
	// Measured 4 s against 10 s estimated: the 3 runs left take 12 s.
	if s, _ := tr.eta(); s != 12 {
		t.Errorf("ETA after a run measured at 0.4x the estimate = %v, want 12", s)
	}
	if got := tr.etaText(); got != "~00:12" {
		t.Errorf("etaText = %q", got)
	}
	// With two deployments at once the work left is shared.
	tr.par = 2
	if s, _ := tr.eta(); s != 6 {
		t.Errorf("ETA at parallelism 2 = %v, want 6", s)
	}
}

// TestFailedDeployIsExplained: a failed deploy names the deployment, its
// error and the lanes that did not run, never the DAG's node names or
// "0 run(s) completed, 0 failed".
func TestFailedDeployIsExplained(t *testing.T) {
	events := []executor.Event{
		{Type: executor.EventApplyStarted, LanesToRun: 2, RunsToDo: 4},
		{Type: executor.EventDeployStarted, Deployment: "d1", Message: "Qwen/A on L40S, executor sim"},
		{Type: executor.EventDeployFailed, Deployment: "d1", Error: "endpoint does not answer"},
		{Type: executor.EventNodeSkipped, Node: "run.l1.1", Lane: "l1", Deployment: "d1", Run: 1, Message: "preflight.l1 was skipped"},
		{Type: executor.EventNodeSkipped, Node: "run.l1.2", Lane: "l1", Deployment: "d1", Run: 2, Message: "run.l1.1 was skipped"},
		{Type: executor.EventDeployStarted, Deployment: "d2", Message: "Qwen/B on L40S, executor sim"},
		{Type: executor.EventDeployFailed, Deployment: "d2", Error: "out of memory"},
		{Type: executor.EventNodeSkipped, Node: "run.l2.1", Lane: "l2", Deployment: "d2", Run: 1, Message: "preflight.l2 was skipped"},
		{Type: executor.EventNodeSkipped, Node: "run.l2.2", Lane: "l2", Deployment: "d2", Run: 2, Message: "run.l2.1 was skipped"},
		{Type: executor.EventApplyFinished, Elapsed: 0.2},
	}
	var b bytes.Buffer
	v := newPlainView(&b, newTracker(trackPlan(), 1))
	for _, e := range events {
		v.Event(e)
	}
	out := b.String()
	for _, bad := range []string{"preflight.", "run.l1", "was skipped", "0 run(s) completed, 0 failed"} {
		if strings.Contains(out, bad) {
			t.Errorf("output has %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{
		"Lane s/a/chat/l40s (l1) does not run: its deployment d1 (Qwen/A on L40S, executor sim) failed.",
		"Apply finished in 0.2s: no run was made; 4 run(s) of 2 lane(s) did not run.",
		"s/b/chat/l40s (l2): 0/2 runs; 2 run(s) did not run: its deployment d2 (Qwen/B on L40S, executor sim) failed",
		"Deployment d1 (Qwen/A on L40S, executor sim) failed: endpoint does not answer",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "does not run"); n != 2 {
		t.Errorf("%d 'does not run' lines, want one per lane:\n%s", n, out)
	}
}

// TestJSONViewCarriesProgressFacts: run events carry the time left and the
// runs done, every event a real time, and an apply_summary follows
// apply_finished with the per-lane figures.
func TestJSONViewCarriesProgressFacts(t *testing.T) {
	var b bytes.Buffer
	v := newJSONView(&b, newTracker(trackPlan(), 1))
	for _, e := range []executor.Event{
		{Type: executor.EventRunStarted, Lane: "l1", Key: "s/a/chat/l40s", Run: 1, Runs: 2, Total: 8},
		{Type: executor.EventRunProgress, Lane: "l1", Run: 1, Done: 4, Failed: 1, Total: 8, Elapsed: 1, TokensPerSecond: 300, TTFTP50Ms: 20},
		// 2 s of wall time, 1.5 s of it measured (the rest warmup).
		{Type: executor.EventRunFinished, Lane: "l1", Run: 1, Runs: 2, Done: 8, Failed: 1, Total: 8, Elapsed: 2, WindowSeconds: 1.5, OutputTokens: 600, TTFTP50Ms: 21},
		{Type: executor.EventApplyFinished, RunsCompleted: 1, Elapsed: 3},
	} {
		v.Event(e)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want 4 events and a summary:\n%s", len(lines), b.String())
	}
	var prog map[string]any
	_ = json.Unmarshal([]byte(lines[1]), &prog)
	for _, k := range []string{"eta_s", "tokens_per_second", "ttft_p50_ms", "time"} {
		if _, ok := prog[k]; !ok {
			t.Errorf("run_progress lacks %s: %s", k, lines[1])
		}
	}
	var sum applySummary
	if err := json.Unmarshal([]byte(lines[4]), &sum); err != nil || sum.Type != "apply_summary" || sum.Time.IsZero() {
		t.Fatalf("last line is not an apply_summary: %s (%v)", lines[4], err)
	}
	l1 := sum.Lanes[0]
	// Output tok/s per measurement window, as the evidence pools it.
	if l1.RunsCompleted != 1 || l1.FailedRequests != 1 || l1.TTFTP50Ms != 21 || l1.OutputTokPerS != 400 || sum.RunsNotRun != 3 {
		t.Errorf("summary: %+v", sum)
	}
}

// TestTrackerLaneThatStopsEarly: a lane that finishes after fewer (or more)
// runs than the plan expected, as a capacity search does, is complete in
// the summary ("3/3 runs"), not "3/5" with runs that "did not run", nor
// "6/5"; and it adds nothing to the time left.
func TestTrackerLaneThatStopsEarly(t *testing.T) {
	p := trackPlan()
	p.Lanes[0].Runs = 5
	tr := newTracker(p, 1)
	for r := 1; r <= 3; r++ {
		tr.observe(executor.Event{Type: executor.EventRunStarted, Lane: "l1", Run: r, Runs: 5, Total: 8})
		tr.observe(executor.Event{Type: executor.EventRunFinished, Lane: "l1", Run: r, Runs: 5, Done: 8, Total: 8, Elapsed: 10})
	}
	tr.observe(executor.Event{Type: executor.EventLaneFinished, Lane: "l1"})
	if s, _ := tr.eta(); s != 20 { // lane 2's two runs only
		t.Errorf("ETA = %v, want 20", s)
	}
	l1 := tr.summary().Lanes[0]
	if l1.RunsCompleted != 3 || l1.RunsToDo != 3 || l1.RunsNotRun != 0 {
		t.Errorf("a lane that stopped early: %+v", l1)
	}
}

// TestInterruptionIsNotAFailure: runs and deploys that Ctrl-C cut short
// are interrupted, not failed: the summary counts them among the runs not
// made (which a re-run makes), says the apply was interrupted, and lists
// no failed deployment (it once said "1 failed", "a step before it
// failed" and "Deploy ... failed: context canceled").
func TestInterruptionIsNotAFailure(t *testing.T) {
	events := []executor.Event{
		{Type: executor.EventApplyStarted, LanesToRun: 2, RunsToDo: 4},
		{Type: executor.EventDeployStarted, Deployment: "d1", Message: "Qwen/A on L40S, executor sim"},
		{Type: executor.EventDeployFinished, Deployment: "d1", Server: "http://127.0.0.1:1"},
		{Type: executor.EventRunStarted, Lane: "l1", Key: "s/a/chat/l40s", Run: 1, Runs: 2, Total: 8},
		{Type: executor.EventRunFinished, Lane: "l1", Run: 1, Runs: 2, Done: 8, Total: 8, Elapsed: 1, WindowSeconds: 1, OutputTokens: 100},
		{Type: executor.EventRunStarted, Lane: "l1", Key: "s/a/chat/l40s", Run: 2, Runs: 2, Total: 8},
		{Type: executor.EventRunFailed, Lane: "l1", Run: 2, Interrupted: true, Error: "run 2 of lane l1 (s/a/chat/l40s) was interrupted and will be redone: context canceled"},
		{Type: executor.EventDeployStarted, Deployment: "d2", Message: "Qwen/B on L40S, executor sim"},
		{Type: executor.EventDeployFailed, Deployment: "d2", Interrupted: true, Error: "deployment d2 (Qwen/B) on executor sim: context canceled"},
		{Type: executor.EventNodeSkipped, Node: "run.l2.1", Lane: "l2", Deployment: "d2", Run: 1, Message: "the apply was interrupted"},
		{Type: executor.EventNodeSkipped, Node: "run.l2.2", Lane: "l2", Deployment: "d2", Run: 2, Message: "the apply was interrupted"},
		{Type: executor.EventApplyFinished, RunsCompleted: 1, Elapsed: 0.5, Message: "interrupted"},
	}
	var b bytes.Buffer
	v := newPlainView(&b, newTracker(trackPlan(), 1))
	for _, e := range events {
		v.Event(e)
	}
	out := b.String()
	for _, bad := range []string{"1 failed", "failed: context canceled", "a step before it failed", "an earlier run of the lane failed", "run(s) failed", "Deployment d2"} {
		if strings.Contains(out, bad) {
			t.Errorf("output has %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{
		"Run 2 of lane l1 interrupted; a re-run redoes it.",
		"Deploy of d2 interrupted; a re-run deploys it again.",
		"Apply interrupted after 0.5s: 1 run(s) completed, 0 failed. 3 run(s) did not run.",
		"Completed runs are journaled; a re-run resumes with the rest.",
		"s/a/chat/l40s (l1): 1/2 runs",
		"1 run(s) did not run: the apply was interrupted",
		"s/b/chat/l40s (l2): 0/2 runs; 2 run(s) did not run: the apply was interrupted",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// TestBarsViewRedacts: the live display draws to the terminal itself (so
// that it redraws), and still every secret in what it draws, bars and log
// lines alike, is redacted.
func TestBarsViewRedacts(t *testing.T) {
	var b bytes.Buffer
	secrets := redact.New("s3cr3t-token")
	v := newBarsView(secrets.Writer(&b), 1, nil)
	v.Event(executor.Event{Type: executor.EventRunStarted, Lane: "l1", Key: "s/s3cr3t-token/chat/l40s", Run: 1, Runs: 1, Total: 4})
	v.Event(executor.Event{Type: executor.EventRunProgress, Lane: "l1", Run: 1, Done: 2, Total: 4, Elapsed: 1})
	time.Sleep(400 * time.Millisecond) // a frame or two with the run bar
	v.Event(executor.Event{Type: executor.EventNote, Message: "the key is s3cr3t-token"})
	v.Event(executor.Event{Type: executor.EventApplyFinished, Elapsed: 1})
	v.Close()
	if strings.Contains(b.String(), "s3cr3t") {
		t.Errorf("the display shows a secret:\n%q", b.String())
	}
	if !strings.Contains(b.String(), "the key is "+redact.Marker) {
		t.Errorf("the note is missing or not redacted:\n%q", b.String())
	}
}

// TestTrackerETAIsTheSameEveryTime: the time left adds the deployments'
// start-ups in plan order, not in a map's (float addition is not
// associative: 0.1 + 0.2 + 0.7 and 0.7 + 0.2 + 0.1 differ in the last
// bit), so the same state gives the same ETA on every call.
func TestTrackerETAIsTheSameEveryTime(t *testing.T) {
	var lanes []*planner.Lane
	for i, startup := range []float64{0.1, 0.2, 0.7, 0.3, 1.1, 0.6} {
		id := fmt.Sprintf("l%d", i)
		lanes = append(lanes, &planner.Lane{ID: id, Key: "s/" + id, Deployment: "d" + id, Action: planner.ActionRun, Runs: 1, RequestsPerRun: 8,
			Inputs:   planner.LaneInputs{ModelID: "Qwen/" + id, GPUType: "L40S", ExecutorType: "local"},
			Estimate: planner.Estimate{Available: true, StartupSeconds: startup, Estimate: perf.Estimate{RunSeconds: 1.3}}})
	}
	tr := newTracker(&planner.Plan{Lanes: lanes}, 6)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr.now = func() time.Time { return now }
	first, ok := tr.eta()
	if !ok {
		t.Fatal("no ETA")
	}
	for range 200 {
		if s, _ := tr.eta(); s != first {
			t.Fatalf("ETA %v, then %v: the same state gives different figures", first, s)
		}
	}
}
