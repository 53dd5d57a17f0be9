package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
)

// serverView is a view of run's requests as a server would record them:
// the client's own TTFT and latency, less offsetMs each.
func serverView(run RunData, offsetMs float64) *loadgen.ServerView {
	sum := loadgen.Compute(run.Records, loadgen.SLO{})
	c := float64(sum.Succeeded)
	hist := func(le []float64, ms float64) *loadgen.Histogram {
		h := &loadgen.Histogram{Le: le, Counts: make([]float64, len(le)), Count: c, Sum: c * ms / 1e3}
		for i, b := range le {
			if ms/1e3 <= b {
				h.Counts[i] = c
			}
		}
		return h
	}
	return loadgen.NewServerView(map[string]*loadgen.Histogram{
		loadgen.ServerTTFT:    hist([]float64{0.01, 0.02, 0.04, 0.06}, sum.TTFTMs.Mean-offsetMs),
		loadgen.ServerLatency: hist([]float64{0.3, 0.5}, sum.LatencyMs.Mean-offsetMs),
	})
}

// TestEvidenceCarriesServerView: a run with the server's histograms has
// them in its evidence beside the client's figures, flagged when the
// client's TTFT exceeds the server's by more than the margin, and the
// Markdown report says so; a run without them has neither.
func TestEvidenceCarriesServerView(t *testing.T) {
	in := fixtureInput()
	small := in.Runs["aaaa1111"]
	small[0].ServerView = serverView(small[0], 0.3) // the loopback's 0.3 ms
	small[0].Records = shifted(small[0].Records, 8) // and a planted 8 ms delay
	small[1].ServerView = serverView(small[1], 0.3) // within the margin
	evs, err := BuildEvidence(in)
	if err != nil {
		t.Fatal(err)
	}
	ev := evs[0]
	var runs []evidence.RunEvidence
	for _, m := range ev.Models {
		if m.Name == "small" {
			runs = m.Campaigns[0].Runs
		}
	}
	if len(runs) != 3 {
		t.Fatalf("small has %d runs", len(runs))
	}
	r1, r2, r3 := runs[0].ClientVsServer, runs[1].ClientVsServer, runs[2].ClientVsServer
	if r1 == nil || !r1.Comparable || len(r1.Flagged) == 0 || !strings.Contains(r1.Flagged[0], "ttft") {
		t.Errorf("run 1 (client 8 ms above the server) = %+v, want a ttft flag", r1)
	}
	if r2 == nil || !r2.Comparable || len(r2.Flagged) != 0 {
		t.Errorf("run 2 (client 0.5 ms above the server) = %+v, want no flag", r2)
	}
	if r3 != nil || runs[2].ServerView != nil {
		t.Errorf("run 3 has no server view but its evidence has %+v", r3)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"server_view"`)) || !bytes.Contains(raw, []byte(`"client_vs_server"`)) {
		t.Error("the evidence JSON lacks server_view or client_vs_server")
	}
	if d, err := evidence.Digest(raw); err != nil || d == "" {
		t.Errorf("digest over the evidence with server views: %q, %v", d, err)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, ev); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## Client vs server") || !strings.Contains(md.String(), "**flagged**") {
		t.Errorf("markdown lacks the client vs server section:\n%s", md.String())
	}
}

// TestGateReadsClientVersusServer: a gate can judge the reconciliation
// (lane.client_vs_server.flagged and the per-metric gaps), so a run whose
// client read more, or less, than the server's own histograms fails the
// gate and the exit status says so. Before, the flag reached the evidence
// and the Markdown only: the gate was INCONCLUSIVE (no such metric) and a
// client reading low was never flagged.
func TestGateReadsClientVersusServer(t *testing.T) {
	for _, tc := range []struct {
		name            string
		offsets         []float64
		status          string
		flaggedRun      int
		gapAbove, below bool
	}{
		{"client above", []float64{8, 0, 0}, evidence.StatusFail, 1, true, false},
		{"client below", []float64{0, -6, 0}, evidence.StatusFail, 2, false, true},
		{"within", []float64{0, 0.5, 0}, evidence.StatusPass, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The server records each run's requests 0.3 ms shorter than
			// the client reads them (the loopback); then the client's
			// reads of some runs are shifted by what tc.offsets plants.
			in := fixtureInput()
			for i := range in.Runs["aaaa1111"] {
				r := &in.Runs["aaaa1111"][i]
				r.ServerView = serverView(*r, 0.3)
				r.Records = shifted(r.Records, tc.offsets[i])
			}
			c := campaignOf(t, in, "small")
			if c.ClientVsServer == nil || c.ClientVsServer.Runs != 3 {
				t.Fatalf("client_vs_server = %+v", c.ClientVsServer)
			}
			g := mustGate("honest client", "lane.client_vs_server.flagged == 0 && abs(lane.client_vs_server.ttft_gap_ms) < 5", "the client disagrees with the server", 0, 0)
			res := evaluateGate(g, &c)
			if res.Status != tc.status {
				t.Fatalf("gate = %+v, want %s (lane %+v)", res, tc.status, c.ClientVsServer)
			}
			for i, r := range c.Runs {
				got := len(r.ClientVsServer.Flagged) > 0
				if got != (i+1 == tc.flaggedRun) {
					t.Errorf("run %d flagged %v: %v", i+1, got, r.ClientVsServer.Flagged)
				}
				if got && tc.below != strings.Contains(r.ClientVsServer.Flagged[0], "below") {
					t.Errorf("run %d: %v, want below=%v", i+1, r.ClientVsServer.Flagged, tc.below)
				}
			}
			if s := summarize([]evidence.ModelEvidence{{Campaigns: []evidence.Campaign{c}}}, evidence.Completeness{Complete: true}); tc.status == evidence.StatusFail && s.ExitCode != evidence.ExitFail {
				t.Errorf("exit code %d with the gate failed, want %d", s.ExitCode, evidence.ExitFail)
			}
		})
	}
}

// shifted returns records whose every answered token the client read ms
// later (earlier when negative).
func shifted(records []loadgen.Record, ms float64) []loadgen.Record {
	d := int64(ms * 1e6)
	out := make([]loadgen.Record, len(records))
	for i, r := range records {
		if r.FirstTokenNs != 0 {
			r.FirstTokenNs += d
			r.LastTokenNs += d
			r.DoneNs += d
			chunks := make([]int64, len(r.ChunkNs))
			for k, c := range r.ChunkNs {
				chunks[k] = c + d
			}
			r.ChunkNs = chunks
		}
		out[i] = r
	}
	return out
}
