package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/loadgen"
)

// serverView is a view of n requests whose server-side TTFT is ttftMs each.
func serverView(n int, ttftMs float64) *loadgen.ServerView {
	c := float64(n)
	le := []float64{0.01, 0.02, 0.04, 0.06}
	counts := make([]float64, len(le))
	for i, b := range le {
		if ttftMs/1e3 <= b {
			counts[i] = c
		}
	}
	return loadgen.NewServerView(map[string]*loadgen.Histogram{
		loadgen.ServerTTFT:    {Le: le, Counts: counts, Count: c, Sum: c * ttftMs / 1e3},
		loadgen.ServerLatency: {Le: []float64{0.3, 0.5}, Counts: []float64{c, c}, Count: c, Sum: c * 0.1},
	})
}

// TestEvidenceCarriesServerView: a run with the server's histograms has
// them in its evidence beside the client's figures, flagged when the
// client's TTFT exceeds the server's by more than the margin, and the
// Markdown report says so; a run without them has neither.
func TestEvidenceCarriesServerView(t *testing.T) {
	in := fixtureInput()
	small := in.Runs["aaaa1111"]
	small[0].ServerView = serverView(19, 15) // the client measured ~31-33 ms: 16+ ms over, beyond 10 ms + 10% of the 20 ms bucket bound
	small[1].ServerView = serverView(19, 29) // within the margin
	evs, err := BuildEvidence(in)
	if err != nil {
		t.Fatal(err)
	}
	ev := evs[0]
	var runs []RunEvidence
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
		t.Errorf("run 1 (server TTFT 15 ms, client ~32 ms) = %+v, want a ttft flag", r1)
	}
	if r2 == nil || !r2.Comparable || len(r2.Flagged) != 0 {
		t.Errorf("run 2 (server TTFT 29 ms) = %+v, want no flag", r2)
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
	if d, err := Digest(raw); err != nil || d == "" {
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
