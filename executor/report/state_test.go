package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
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
			var series json.RawMessage
			if len(r.ServerSeries) > 0 {
				series, _ = json.Marshal(r.ServerSeries)
			}
			rr := state.RunRecord{Lane: l.ID, Run: r.Run, Deployment: l.Deployment, Summary: raw, Server: r.Server, ServerSeries: series,
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

// The evidence names the profiles the plan's traces resolved to by their
// document digests, with each trace's source and pinned file; a saved
// plan's byte digests of the profile files (Inputs.Profiles) are used only
// for a plan made before plans recorded their traces, whose evidence was
// written from them.
func TestEvidenceNamesThePlansTraceProfiles(t *testing.T) {
	in := fixtureInput()
	in.Plan.Traces = []planner.TraceProfile{
		{Name: "chutes", Source: "s3://bucket/chutes.parquet", Profile: "profiles/chutes.json", Digest: "sha256:" + strings.Repeat("a", 64)},
		{Name: "local", Source: "trace.parquet", Digest: "sha256:" + strings.Repeat("b", 64)},
	}
	dir := t.TempDir()
	writeStateFixtureOf(t, dir, in)
	got, _, err := LoadInput(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "sha256:" + strings.Repeat("a", 64) + ",sha256:" + strings.Repeat("b", 64); got.WorkloadProfileDigest != want {
		t.Errorf("workload_profile_digest %q, want %q", got.WorkloadProfileDigest, want)
	}
	want := map[string]string{"trace.chutes": "s3://bucket/chutes.parquet", "trace.chutes.profile": "profiles/chutes.json", "trace.local": "trace.parquet"}
	if !reflect.DeepEqual(got.WorkloadSource, want) {
		t.Errorf("workload_source %v, want %v", got.WorkloadSource, want)
	}
}
