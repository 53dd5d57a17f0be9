package executor

import (
	"context"
	"testing"

	"github.com/infercrane/infercrane/planner"
)

// TestRevealingOpen: a deployment reaped from the journal, whose settings
// were journaled redacted, is opened with the real values of the plan's
// lane with the same shown settings; other settings pass unchanged.
func TestRevealingOpen(t *testing.T) {
	l := &planner.Lane{ID: "l1", Inputs: planner.LaneInputs{ExecutorType: "endpoint",
		ExecutorConfig: map[string]any{"base_url": planner.Redacted, "model": "m"},
		Secrets: &planner.LaneSecrets{ExecutorConfig: map[string]any{"base_url": "http://user:pw@10.0.0.5:8000"},
			ExecutorSettings: map[string]any{"base_url": "http://user:pw@10.0.0.5:8000"}}},
		ExecutorSettings: map[string]any{"base_url": planner.Redacted, "model": "m"}}
	p := &planner.Plan{Lanes: []*planner.Lane{l}}
	var got map[string]any
	open := revealingOpen(func(_ context.Context, _ string, cfg map[string]any) (Executor, error) {
		got = cfg
		return nil, nil
	}, p)
	open(context.Background(), "endpoint", map[string]any{"base_url": planner.Redacted, "model": "m"})
	if got["base_url"] != "http://user:pw@10.0.0.5:8000" || got["model"] != "m" {
		t.Errorf("revealed %v", got)
	}
	open(context.Background(), "endpoint", map[string]any{"base_url": planner.Redacted, "model": "other"})
	if got["base_url"] != planner.Redacted {
		t.Errorf("settings of no lane were revealed: %v", got)
	}
}
