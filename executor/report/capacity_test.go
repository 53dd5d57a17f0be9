package report

import (
	"bytes"
	"github.com/infercrane/infercrane/lang/shape"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/search"
)

// capacityInput is a screen of three searched lanes (request rate,
// ttft p95 <= 100 ms): small on L40S and H100, big on L40S, each with
// points whose TTFT jumps past the objective above its capacity.
func capacityInput() Input {
	spec := &search.Spec{Name: "cap", Vary: search.VaryRequestRate, Min: 1, Max: 64, SLO: search.SLO{TTFTP95Ms: 100},
		Goodput: 0.9, Tolerance: 0.05, MaxPoints: 8, Requests: 40}
	type point struct {
		load, ttft, tps float64
	}
	lanes := []struct {
		id, model, gpu, gpuType string
		pts                     []point
	}{
		{"aaaa1111", "small", "l40s", "L40S", []point{{10, 30, 900}, {10.5, 400, 950}, {10.25, 40, 920}}},
		{"bbbb2222", "small", "h100", "H100", []point{{20, 30, 1500}, {21, 300, 1550}}},
		{"cccc3333", "big", "l40s", "L40S", []point{{5, 40, 400}, {5.25, 400, 410}}},
	}
	plan := &planner.Plan{FormatVersion: planner.FormatVersion, SpecDigest: "sha256:spec", PlanDigest: "sha256:plan",
		Screens: []*planner.Screen{{Name: "s", Gates: []string{"carries"}, Runs: 1}},
		Assumptions: []planner.Assumption{
			{GPU: "l40s", GPUType: "L40S", Count: 1, PricePerSecond: 0.000542},
			{GPU: "h100", GPUType: "H100", Count: 1, PricePerSecond: 0.001097},
		}}
	in := Input{Plan: plan, Runs: map[string][]RunData{}, ObservedAt: fixtureTime, Gates: map[string]*GateSpec{
		"carries": mustGate("carries", "lane.capacity_rps >= 10 && lane.usd_per_mtok <= 0.75", "too little capacity or too dear", 0, 0),
	}}
	for _, l := range lanes {
		plan.Lanes = append(plan.Lanes, &planner.Lane{ID: l.id, Key: "s/" + l.model + "/chat/" + l.gpu, Screen: "s", Model: l.model,
			Shape: "chat", GPU: l.gpu, Executor: "sim", Deployment: "d-" + l.id, Action: planner.ActionRun, Runs: 8, RequestsPerRun: 40,
			Inputs: planner.LaneInputs{ModelID: "Org/" + l.model, Settings: shape.Settings{InputTokens: 128, OutputTokens: 16, Concurrency: 1, Requests: 40,
				Streaming: true, API: "chat"}, GPUType: l.gpuType, GPUCount: 1, ExecutorType: "sim", Capabilities: lang.BuiltinExecutors["sim"], SLOTTFTMs: 100, Search: spec},
			Search: &planner.LaneSearch{Unit: "req/s", PredictedKnee: l.pts[0].load, Start: l.pts[0].load}})
		for i, p := range l.pts {
			recs := makeRecords(40, 16, p.ttft, 2, 0, nil)
			s := loadgen.Compute(recs, loadgen.SLO{TTFTMs: 100})
			s.OutputTokenThroughput, s.RequestThroughput = p.tps, p.tps/16
			in.Runs[l.id] = append(in.Runs[l.id], RunData{Run: i + 1, Summary: &s, Records: recs, SearchLoad: p.load,
				RecordsFile: "runs/" + l.id + "/x.jsonl", StartedAt: "2026-11-29T12:00:00Z", FinishedAt: "2026-11-29T12:00:01Z"})
		}
	}
	return in
}

func TestCapacityEvidence(t *testing.T) {
	evs, err := BuildEvidence(capacityInput())
	if err != nil {
		t.Fatal(err)
	}
	ev := evs[0]
	byLane := map[string]*evidence.Campaign{}
	for _, m := range ev.Models {
		for i := range m.Campaigns {
			byLane[m.Campaigns[i].Lane] = &m.Campaigns[i]
		}
	}
	c := byLane["aaaa1111"]
	capy := c.Capacity
	if capy == nil || capy.Status != "converged" || capy.Capacity != 10.25 || capy.Upper == nil || *capy.Upper != 10.5 ||
		len(capy.Points) != 3 || capy.CapacityRun != 3 || capy.Breaks[search.SLOTTFT] != 10.5 {
		t.Fatalf("capacity %+v", capy)
	}
	// $ per million output tokens at capacity: price x GPUs / tok/s x 1e6.
	if want := 0.000542 / 920 * 1e6; capy.USDPerMTok == nil || math.Abs(*capy.USDPerMTok-want) > 1e-9 {
		t.Errorf("usd_per_mtok %v, want %g", capy.USDPerMTok, want)
	}
	// The aggregate is the point at capacity, and the lane is complete
	// although it ran 3 of at most 8 points.
	if c.Aggregate.Requests != 40 || !c.Complete || !ev.Completeness.Complete {
		t.Errorf("aggregate of %d requests, complete %v / %+v", c.Aggregate.Requests, c.Complete, ev.Completeness)
	}
	// small·H100 carries the most, small·L40S costs least per token (both
	// on the frontier); big·L40S carries less than small·L40S at a higher
	// price, so it is dominated.
	if len(ev.Pareto) != 1 {
		t.Fatalf("pareto %+v", ev.Pareto)
	}
	front := map[string]bool{}
	for _, l := range ev.Pareto[0].Lanes {
		front[l.Lane] = l.Frontier
	}
	if !front["aaaa1111"] || !front["bbbb2222"] || front["cccc3333"] {
		t.Errorf("frontier %v", front)
	}
	// Gates see capacity_rps and usd_per_mtok.
	status := map[string]string{}
	for id, c := range byLane {
		status[id] = c.Gates[0].Status
	}
	if status["aaaa1111"] != evidence.StatusPass || status["bbbb2222"] != evidence.StatusPass || status["cccc3333"] != evidence.StatusFail {
		t.Errorf("gate statuses %v (%+v)", status, byLane["cccc3333"].Gates)
	}
	var md, page bytes.Buffer
	if err := WriteMarkdown(&md, ev); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Capacity at SLO", "| Org/small | chat | L40S | cap | 10.25 req/s | [10.25, 10.5) | 10 | 3/8 | converged | goodput at 10.5, ttft_p95_ms at 10.5 | 920 | $0.5891 | yes |",
		"- Org/small · chat · L40S: 10 (ok); 10.5 (missed ttft_p95_ms, goodput); 10.25 (ok)"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	if err := WriteHTML(&page, ev, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Capacity at SLO", "Latency vs load: Org/small · chat · L40S", `class="slo"`, `class="knee"`,
		"Goodput vs load", "Cost vs capacity (Pareto): chat", `class="frontier"`} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

func TestCapacityMetricsAreLaneMetrics(t *testing.T) {
	names := LaneMetricNames()
	for _, vary := range search.Varies {
		c := &evidence.Capacity{Vary: vary, USDPerMTok: ptr(1.0)}
		for k := range c.Values() {
			if !slices.Contains(names, k) || !slices.Contains(evidence.CapacityMetrics, k) {
				t.Errorf("%s search: gate metric %q is not in LaneMetricNames/CapacityMetrics", vary, k)
			}
		}
	}
}

// TestCapacityHTMLNamesPointsByLoad: a searched lane's panels name each run
// by its load and verdict, not "run 1/2/3"; the CDFs show only the point at
// capacity (before, every point's requests, met and missed, were pooled
// into one CDF); the goodput axis stops at 1 (before, 1.5).
func TestCapacityHTMLNamesPointsByLoad(t *testing.T) {
	in := capacityInput()
	in.Plan.Lanes[0].Inputs.Search.Goodput = 0.95 // (shared by the lanes) 1.1 x 0.95 asked for an axis to 1.5
	evs, err := BuildEvidence(in)
	if err != nil {
		t.Fatal(err)
	}
	ev := evs[0]
	var page bytes.Buffer
	if err := WriteHTML(&page, ev, screenRecords(&in, ev)); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, want := range []string{">10 req/s, met<", ">10.5 req/s, missed ttft_p95_ms, goodput<", ">10.25 req/s, met<",
		">small · chat · l40s (10.25 req/s, met)<"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if strings.Contains(html, ">run 1<") {
		t.Error("a search's point is named \"run 1\"")
	}
	// The TTFT CDF holds the 40 requests of the point at capacity of each
	// of the 3 lanes, not the 40 of every point (280).
	cdf := regexp.MustCompile(`<svg [^>]*data-points="(\d+)" aria-label="TTFT CDF per lane`).FindStringSubmatch(html)
	if cdf == nil {
		t.Fatal("no TTFT CDF")
	}
	if n, _ := strconv.Atoi(cdf[1]); n != 3*40 {
		t.Errorf("the TTFT CDF draws %d points, want %d (the point at capacity of each lane)", n, 3*40)
	}
	for _, svg := range regexp.MustCompile(`(?s)<svg [^>]*aria-label="Goodput vs load[^"]*".*?</svg>`).FindAllString(html, -1) {
		ticks := regexp.MustCompile(`class="tick y"[^>]*>([^<]*)<`).FindAllStringSubmatch(svg, -1)
		if len(ticks) == 0 || ticks[len(ticks)-1][1] != "1" {
			t.Errorf("the goodput axis's top tick is %v, want 1", ticks)
		}
	}
}

// TestCapacityHTMLCountsPointsNotPlannedRuns: the page's summary counts a
// search's points as points, with what the plan expected and max_points
// as the bound; it said "7 of 7 planned run(s) completed" (issue 26 item
// 3), as if the points run were what was planned.
func TestCapacityHTMLCountsPointsNotPlannedRuns(t *testing.T) {
	in := capacityInput()
	for _, l := range in.Plan.Lanes {
		l.Search.Expected = []planner.PlannedPoint{{}, {}}
	}
	evs, err := BuildEvidence(in)
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, evs[0], screenRecords(&in, evs[0])); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if want := "3 lane(s), 3 capacity search(es): 7 point(s) run (expected 6, at most 24), "; !strings.Contains(html, want) {
		i := strings.Index(html, "lane(s)")
		t.Errorf("the summary does not say %q: %s", want, html[max(i-200, 0):min(i+200, len(html))])
	}
	if strings.Contains(html, "planned run(s)") {
		t.Error("a search's points are counted as planned runs")
	}
}
