package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/state"
)

// fixtureSpec is the spec snapshot of the fixture state: its gates.
const fixtureSpec = `gate "clean" {
  condition     = lane.failed == 0
  error_message = "Every request must succeed."
}

gate "fast" {
  condition     = lane.ttft_p95_ms <= 55
  error_message = "p95 TTFT must stay within 55 ms."
}

gate "stable" {
  condition     = lane.cv.output_token_throughput <= 0.5
  error_message = "Throughput must be stable."
  min_runs      = var.min_runs
}
`

// writeStateFixture writes the fixture screen as apply would: a journal
// with every run, the records files, and plan.json with the spec snapshot.
func writeStateFixture(t *testing.T, dir string) { writeStateFixtureOf(t, dir, fixtureInput()) }

func writeStateFixtureOf(t *testing.T, dir string, in Input) {
	t.Helper()
	st, err := state.Open(dir, "report test")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, l := range in.Plan.Lanes {
		if err := st.StartLane(l.ID, l.Key, l.Runs, l.Inputs); err != nil {
			t.Fatal(err)
		}
		for _, r := range in.Runs[l.ID] {
			s := loadgen.Compute(r.Records, laneSLO(&l.Inputs))
			raw, _ := json.Marshal(s)
			rr := state.RunRecord{Lane: l.ID, Run: r.Run, Deployment: l.Deployment, Summary: raw, Server: r.Server, ServerSeries: r.ServerSeries,
				StartedAt: fmt.Sprintf("2026-11-29T11:0%d:00Z", r.Run), FinishedAt: r.FinishedAt}
			recs := r.Records
			if err := st.CommitRun(rr, func(w io.Writer) error { return loadgen.WriteRecords(w, recs) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	sum := sha256.Sum256([]byte(fixtureSpec))
	saved := &planner.SavedPlan{
		Format: planner.SavedFormat, SpecPath: ".", Dir: ".", StateDir: dir,
		Spec:      map[string]string{"main.hcl": fixtureSpec},
		Variables: map[string]any{"min_runs": 2},
		Inputs:    planner.InputDigests{Spec: map[string]string{"main.hcl": "sha256:" + hex.EncodeToString(sum[:])}, Profiles: map[string]string{}},
		Plan:      in.Plan,
	}
	if err := saved.Save(filepath.Join(dir, state.PlanFile)); err != nil {
		t.Fatal(err)
	}
}
