package report

import (
	"github.com/infercrane/infercrane/lang/shape"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/planner"
)

// TestAbsentMetricMatchesTheEvidence keeps the plan-time rules of
// absentMetric in step with what the report really gives a lane: for lanes
// that do not stream, have one output token, no SLO or one run, evidence
// is built from their records and every lane metric name (capacity ones
// aside: a search's lane is another kind) evaluates on the campaign
// exactly when absentMetric says the lane has it.
func TestAbsentMetricMatchesTheEvidence(t *testing.T) {
	for _, c := range []struct {
		name  string
		out   int
		runs  int
		setup func(in *Input)
	}{
		{"streaming", 16, 3, func(*Input) {}},
		{"not streaming", 16, 3, func(in *Input) {
			for _, l := range in.Plan.Lanes {
				l.Inputs.Streaming = false
			}
			for _, runs := range in.Runs {
				for i := range runs {
					for j := range runs[i].Records {
						r := &runs[i].Records[j]
						r.NonStreaming, r.ChunkNs = true, nil
					}
				}
			}
		}},
		{"one output token", 1, 3, func(*Input) {}},
		{"no slo", 16, 3, func(in *Input) {
			for _, l := range in.Plan.Lanes {
				l.Inputs.SLOTTFTMs = 0
			}
		}},
		{"one run", 16, 1, func(*Input) {}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := fixtureInputRuns(20, c.out, c.runs)
			c.setup(&in)
			evs, err := BuildEvidence(in)
			if err != nil {
				t.Fatal(err)
			}
			lanes := map[string]*planner.Lane{}
			for _, l := range in.Plan.Lanes {
				lanes[l.ID] = l
			}
			checked := 0
			for _, m := range evs[0].Models {
				for i := range m.Campaigns {
					camp := &m.Campaigns[i]
					l := lanes[camp.Lane]
					ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"lane": laneValue(camp)}}
					for _, name := range LaneMetricNames() {
						if isCapacityMetric(name) || strings.HasPrefix(name, "client_vs_server.") && camp.ClientVsServer == nil {
							continue // a capacity search's; the server's histograms, when it exports them
						}
						expr, diags := hclsyntax.ParseExpression([]byte("lane."+name), "t.hcl", hcl.InitialPos)
						if diags.HasErrors() {
							t.Fatal(diags)
						}
						_, diags = expr.Value(ctx)
						has, why := !diags.HasErrors(), absentMetric(l, name)
						if has != (why == "") {
							t.Errorf("lane.%s: in the evidence %v, absentMetric says %q", name, has, why)
						}
						checked++
					}
				}
			}
			if checked == 0 {
				t.Fatal("no campaign checked")
			}
		})
	}
}

func isCapacityMetric(name string) bool {
	for _, c := range evidence.CapacityMetrics {
		if strings.TrimPrefix(name, "cv.") == c {
			return true
		}
	}
	return false
}

// TestGateFindings: a gate on a metric the lane never has is an error
// naming gate, lane and metric; min_runs above the runs a warning; a gate
// the lane has everything for, nothing.
func TestGateFindings(t *testing.T) {
	l := &planner.Lane{ID: "aaaa1111", Key: "s/m/chat/g", Screen: "s", Shape: "chat", Runs: 2,
		Inputs: planner.LaneInputs{Settings: shape.Settings{Streaming: false, OutputTokens: 16, Requests: 4, Concurrency: 1}}}
	sc := &planner.Screen{Name: "s", GateSpecs: []planner.Gate{
		{Name: "clean", Condition: "lane.failed == 0", Metrics: []string{"failed"}},
		{Name: "fast", Condition: "lane.ttft_p95_ms < 500", Metrics: []string{"ttft_p95_ms"}},
		{Name: "many", Condition: "lane.failed == 0", Metrics: []string{"failed"}, MinRuns: 5},
	}}
	got := GateFindings(sc, l)
	if len(got) != 2 {
		t.Fatalf("findings %+v", got)
	}
	if f := got[0]; f.Severity != planner.SeverityError || f.Lane != l.ID || f.Screen != "s" ||
		!strings.Contains(f.Summary, `gate "fast" can never be judged on lane s/m/chat/g: lane.ttft_p95_ms is never measured`) ||
		!strings.Contains(f.Detail, "streaming = false") {
		t.Errorf("ttft gate: %+v", f)
	}
	if f := got[1]; f.Severity != planner.SeverityWarning || !strings.Contains(f.Summary, `gate "many" will be INCONCLUSIVE`) {
		t.Errorf("min_runs gate: %+v", f)
	}
}
