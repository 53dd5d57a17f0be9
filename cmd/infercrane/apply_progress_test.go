package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor"
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
	v := newPlainView(&b)
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
	v := newBarsView(&b, 2)
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
	v := newJSONView(&b)
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
