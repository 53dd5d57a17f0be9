package planner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/search"
	"github.com/infercrane/infercrane/planner/state"
)

// searchFixture is the design's screen with a request-rate search on
// every lane.
func searchFixture() *lang.Config {
	cfg := fixture()
	cfg.Searches = map[string]*lang.Search{"capacity": {
		Name: "capacity", Vary: "request_rate", Min: 0.5, Max: 64,
		SLO:     lang.SearchSLO{TTFTP95Ms: 2000, TPOTP95Ms: 50},
		Goodput: 0.95, Tolerance: 0.05, MaxPoints: 8, Requests: 200, Duration: 30 * time.Second,
	}}
	cfg.Screens["qwen_l40s"].Search = "capacity"
	return cfg
}

func TestSearchIsPlannedAndCosted(t *testing.T) {
	p := build(t, searchFixture())
	if len(findingsMatching(p, "not decision grade")) != 0 {
		t.Error("a screen of searches was warned about its runs, which a search does not use")
	}
	for _, l := range p.Lanes {
		s, ls := l.Inputs.Search, l.Search
		if s == nil || ls == nil {
			t.Fatalf("lane %s has no search", l.Key)
		}
		if l.Runs != 8 || l.RunsToDo() != 8 || l.Inputs.Concurrency != 1 || l.Inputs.RequestRate != 0 {
			t.Errorf("lane %s: runs %d, inputs %+v", l.Key, l.Runs, l.Inputs)
		}
		if ls.PredictedKnee <= s.Min || ls.PredictedKnee >= s.Max || ls.Start != ls.PredictedKnee {
			t.Errorf("lane %s: predicted knee %g, start %g", l.Key, ls.PredictedKnee, ls.Start)
		}
		if len(ls.Expected) < 2 || ls.Expected[0].Load != ls.Start || ls.ExpectedResult.Status != search.StatusConverged {
			t.Errorf("lane %s: expected points %+v, result %+v", l.Key, ls.Expected, ls.ExpectedResult)
		}
		var secs, cost float64
		for _, e := range ls.Expected {
			if e.Requests < s.Requests || e.Requests < int(e.Load*30) || e.RunSeconds <= 0 || e.CostUSD <= 0 {
				t.Errorf("lane %s: point %+v", l.Key, e)
			}
			secs += e.RunSeconds
			cost += e.CostUSD
		}
		if got := l.Estimate.WallSeconds - l.Estimate.StartupSeconds; got < secs*0.999 || got > secs*1.001 {
			t.Errorf("lane %s: wall seconds %g minus start-up %g, want the points' %g", l.Key, l.Estimate.WallSeconds, l.Estimate.StartupSeconds, secs)
		}
		if l.Estimate.CostUSD < cost || ls.MaxCostUSD < l.Estimate.CostUSD {
			t.Errorf("lane %s: cost %g, points %g, bound %g", l.Key, l.Estimate.CostUSD, cost, ls.MaxCostUSD)
		}
	}
	var text bytes.Buffer
	if err := WriteText(&text, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`search "capacity" over request_rate [0.5, 64] req/s, ttft p95 <= 2000 ms, tpot p95 <= 50 ms, goodput >= 0.95`, "predicted knee", "expects ", "at most "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("plan text lacks %q:\n%s", want, text.String())
		}
	}
	// The JSON form carries the search, and older plans (no search) keep
	// their bytes: the fields are omitempty.
	raw, err := json.Marshal(p)
	if err != nil || !bytes.Contains(raw, []byte(`"search":{"name":"capacity","vary":"request_rate"`)) || !bytes.Contains(raw, []byte(`"expected_points":[`)) {
		t.Errorf("plan JSON lacks the search: %v", err)
	}
	plain, _ := json.Marshal(build(t, fixture()))
	if bytes.Contains(plain, []byte(`"search"`)) {
		t.Error("a plan without searches mentions search")
	}
}

func TestSearchSLOChangeIsNamedAndCosted(t *testing.T) {
	old := build(t, searchFixture())
	cfg := searchFixture()
	cfg.Searches["capacity"].SLO.TTFTP95Ms = 500
	cfg.Searches["capacity"].Duration = 60 * time.Second
	cur := build(t, cfg)
	d := Diff(old, cur)
	if len(d.Changed) != 4 {
		t.Fatalf("changed %d lanes, want 4", len(d.Changed))
	}
	c := d.Changed[0]
	if strings.Join(c.ChangedInputs, ",") != "search.duration_seconds,search.slo.ttft_p95_ms,slo_ttft_ms" {
		t.Errorf("changed inputs %v", c.ChangedInputs)
	}
	if v := c.Values["search.slo.ttft_p95_ms"]; v[0] != 2000.0 || v[1] != 500.0 {
		t.Errorf("values %v", c.Values)
	}
	if d.CostDeltaUSD <= 0 {
		t.Errorf("twice the requests per point should cost more: %g", d.CostDeltaUSD)
	}
	var text bytes.Buffer
	if err := d.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "search.slo.ttft_p95_ms") {
		t.Errorf("the diff text does not name the objective:\n%s", text.String())
	}
}

// commitPoints journals searched runs as apply does, with their loads.
func commitPoints(t *testing.T, dir string, l *Lane, pts []search.Point) *state.Snapshot {
	t.Helper()
	st, err := state.Open(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.StartLane(l.ID, l.Key, l.Runs, l.Inputs); err != nil {
		t.Fatal(err)
	}
	for i, pt := range pts {
		sum := fmt.Sprintf(`{"requests":200,"succeeded":200,"good_fraction":1,"ttft_ms":{"count":200,"p95":%g},"tpot_ms":{"count":200,"p95":10},"latency_ms":{"count":200,"p95":100}}`,
			*pt.TTFTP95Ms)
		r := state.RunRecord{Lane: l.ID, Run: i + 1, Summary: []byte(sum), SearchLoad: pt.Load}
		if err := st.CommitRun(r, func(w io.Writer) error { _, err := fmt.Fprintln(w, `{}`); return err }); err != nil {
			t.Fatal(err)
		}
	}
	return closeAndLoad(t, st, dir)
}

func TestSearchResumesFromTheState(t *testing.T) {
	cfg := searchFixture()
	p := build(t, cfg)
	l := p.Lanes[0]
	s := l.Inputs.Search
	fast, slow := 100.0, 5000.0
	pass := search.Point{Load: l.Search.Start, Measure: search.Measure{TTFTP95Ms: &fast}}
	dir := t.TempDir()
	snap := commitPoints(t, dir, l, []search.Point{pass})
	p2, diags := Build(cfg, snap, Options{Version: "test"})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	l2 := p2.Lane(l.ID)
	if l2.Action != ActionRun || l2.RunsDone != 1 || len(l2.Search.Done) != 1 || !strings.Contains(l2.Reason, "1 point of at most 8 done") {
		t.Fatalf("after one point: %s (%s), %d done", l2.Action, l2.Reason, l2.RunsDone)
	}
	next := s.Evaluate(l.Search.Start, l2.Search.Done).Next
	if len(l2.Search.Expected) == 0 || l2.Search.Expected[0].Load != next || next <= pass.Load {
		t.Errorf("the plan expects %+v next, the search says %g", l2.Search.Expected, next)
	}
	var own []string // the lane's runs (the deployment's other lanes' interleave)
	for _, id := range runNodes(p2.Graph) {
		if strings.HasPrefix(id, "run."+l.ID+".") {
			own = append(own, id)
		}
	}
	if len(own) == 0 || !strings.HasSuffix(own[0], ".2") {
		t.Errorf("the lane's first run in the graph is %v, want point 2", own)
	}
	// A failing point within the tolerance decides the search.
	fail := search.Point{Load: next, Measure: search.Measure{TTFTP95Ms: &slow}}
	snap = commitPoints(t, t.TempDir(), l, []search.Point{pass, fail})
	p3, _ := Build(cfg, snap, Options{Version: "test"})
	l3 := p3.Lane(l.ID)
	if l3.Action != ActionNoop || !strings.Contains(l3.Reason, "search finished in the state (converged after 2 points)") {
		t.Errorf("after the bracket: %s (%s)", l3.Action, l3.Reason)
	}
	if l3.Search.Result == nil || l3.Search.Result.Capacity != pass.Load || l3.Search.Result.Upper != next {
		t.Errorf("result %+v", l3.Search.Result)
	}
}

func runNodes(g Graph) []string {
	var out []string
	for _, n := range g.Nodes {
		if n.Kind == NodeRun {
			out = append(out, n.ID)
		}
	}
	return out
}

func TestSearchPreflight(t *testing.T) {
	cfg := searchFixture()
	cfg.Searches["capacity"].Requests = 40
	cfg.Searches["capacity"].Max = 1 // every lane carries more than this
	cfg.Searches["capacity"].SLO = lang.SearchSLO{TTFTP95Ms: 10000, TPOTP95Ms: 1000}
	p := build(t, cfg)
	if got := findingsMatching(p, `search "capacity" measures 40 requests a point`); len(got) != 4 || got[0].Severity != SeverityWarning {
		t.Errorf("short points: %+v", got)
	}
	if got := findingsMatching(p, `predicted capacity is above search "capacity"'s range`); len(got) != 4 {
		t.Errorf("range below the knee: %+v", got)
	}
	cfg.Searches["capacity"].Max, cfg.Searches["capacity"].SLO = 64, lang.SearchSLO{TTFTP95Ms: 0.001}
	p = build(t, cfg)
	if got := findingsMatching(p, `predicted capacity is below search "capacity"'s range`); len(got) != 4 {
		t.Errorf("an objective nothing meets: %+v", got)
	}
}

// TestSearchVariesAgree keeps the spec language's list of varies and the
// search package's in step (lang cannot import the planner).
func TestSearchVariesAgree(t *testing.T) {
	if strings.Join(lang.SearchVaries, ",") != strings.Join(search.Varies, ",") ||
		lang.MinSearchRequests != search.MinRequests || lang.DefaultSearchRequests != search.DefaultRequests ||
		lang.DefaultSearchGoodput != search.DefaultGoodput || lang.DefaultSearchTolerance != search.DefaultTolerance ||
		lang.DefaultSearchMaxPoints != search.DefaultMaxPoints {
		t.Error("lang's search defaults differ from planner/search's")
	}
}
