package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
)

// plotBins is the number of time bins of the time-series plots.
const plotBins = 60

// laneLabel names a campaign in plots.
func laneLabel(model, shape, gpu, runtime string) string {
	if runtime != "" {
		return model + " · " + shape + " · " + gpu + " · " + runtime
	}
	return model + " · " + shape + " · " + gpu
}

// cdfSeries samples the empirical CDF of values (ms) at most maxSeriesPoints points.
func cdfSeries(name string, values []float64) series {
	s := series{name: name}
	n := len(values)
	if n == 0 {
		return s
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	step := max(1, n/maxSeriesPoints)
	for i := 0; i < n; i += step {
		s.points = append(s.points, [2]float64{sorted[i], float64(i+1) / float64(n)})
	}
	if last := s.points[len(s.points)-1]; last[1] != 1 {
		s.points = append(s.points, [2]float64{sorted[n-1], 1})
	}
	return s
}

// requestTimes extracts the per-request ttft, tpot and latency (ms) of the
// successful requests, by the design's definitions.
func requestTimes(recs []loadgen.Record) (ttft, tpot, lat []float64) {
	for i := range recs {
		r := &recs[i]
		if r.Warmup || !r.OK() {
			continue
		}
		lat = append(lat, float64(r.LastTokenNs-r.SentNs)/1e6)
		if r.NonStreaming {
			continue
		}
		ttft = append(ttft, float64(r.FirstTokenNs-r.SentNs)/1e6)
		if r.OutputTokens >= 2 {
			tpot = append(tpot, float64(r.LastTokenNs-r.FirstTokenNs)/1e6/float64(r.OutputTokens-1))
		}
	}
	return
}

// timeSeries samples a run at plotBins equal steps: the requests in flight
// at the first send and at each step's end (sent and not yet done), and the
// output tokens/s that arrived within each step.
func timeSeries(recs []loadgen.Record) (inflight, tokens [][2]float64) {
	var start, end int64 = -1, 0
	sent := make([]int64, 0, len(recs))
	done := make([]int64, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		if start < 0 || r.SentNs < start {
			start = r.SentNs
		}
		end = max(end, r.DoneNs)
		sent = append(sent, r.SentNs)
		done = append(done, r.DoneNs)
	}
	if start < 0 || end <= start {
		return nil, nil
	}
	slices.Sort(sent)
	slices.Sort(done)
	width := float64(end-start) / plotBins
	counts := make([]float64, plotBins)
	bin := func(ns int64) int { return min(plotBins-1, max(0, int(float64(ns-start)/width))) }
	for i := range recs {
		r := &recs[i]
		switch {
		case len(r.ChunkNs) > 0:
			for _, c := range r.ChunkNs {
				counts[bin(c)]++
			}
			if extra := r.OutputTokens - len(r.ChunkNs); extra > 0 && r.OK() {
				counts[bin(r.ChunkNs[len(r.ChunkNs)-1])] += float64(extra)
			}
		case r.OK():
			counts[bin(r.LastTokenNs)] += float64(r.OutputTokens)
		}
	}
	// upTo counts the sorted times <= t.
	upTo := func(sorted []int64, t int64) int {
		n, _ := slices.BinarySearch(sorted, t+1)
		return n
	}
	inflight = append(inflight, [2]float64{0, float64(upTo(sent, start) - upTo(done, start))})
	for b := 0; b < plotBins; b++ {
		tNs := start + int64(float64(b+1)*width)
		if b == plotBins-1 {
			tNs = end
		}
		t := float64(tNs-start) / 1e9
		inflight = append(inflight, [2]float64{t, float64(upTo(sent, tNs) - upTo(done, tNs))})
		tokens = append(tokens, [2]float64{t, counts[b] / (width / 1e9)})
	}
	return inflight, tokens
}

// latencySeries is a run's end-to-end latency over time: the median
// latency (ms) of the succeeded requests sent in each of plotBins equal
// steps of the run, at the step's middle (seconds since the first send).
func latencySeries(recs []loadgen.Record) [][2]float64 {
	var start, end int64 = -1, 0
	for i := range recs {
		r := &recs[i]
		if r.Warmup {
			continue
		}
		if start < 0 || r.SentNs < start {
			start = r.SentNs
		}
		end = max(end, r.SentNs)
	}
	if start < 0 {
		return nil
	}
	width := float64(max(end-start, 1)) / plotBins
	bins := make([][]float64, plotBins)
	for i := range recs {
		r := &recs[i]
		if r.Warmup || !r.OK() {
			continue
		}
		b := min(plotBins-1, int(float64(r.SentNs-start)/width))
		bins[b] = append(bins[b], float64(r.LastTokenNs-r.SentNs)/1e6)
	}
	var out [][2]float64
	for b, v := range bins {
		if len(v) == 0 {
			continue
		}
		sort.Float64s(v)
		out = append(out, [2]float64{(float64(b) + 0.5) * width / 1e9, loadgen.Percentile(v, 50)})
	}
	return out
}

// firstSend is the earliest send of a run's records (ns from the run's
// origin), the origin of the time-series plots.
func firstSend(recs []loadgen.Record) int64 {
	var start int64 = -1
	for i := range recs {
		if start < 0 || recs[i].SentNs < start {
			start = recs[i].SentNs
		}
	}
	return max(start, 0)
}

// serverSeries is one gauge of a run's scraped server metrics over time,
// scaled by factor, in seconds since the run's first send.
func serverSeries(samples []loadgen.MetricSample, origin int64, factor float64, names ...string) [][2]float64 {
	var out [][2]float64
	for _, s := range samples {
		for _, n := range names {
			if v, ok := s.Values[n]; ok {
				out = append(out, [2]float64{math.Max(s.T-float64(origin)/1e9, 0), v * factor})
				break
			}
		}
	}
	return out
}

type htmlRow struct {
	Model, Shape, GPU, Throughput, TTFT, TPOT, Latency, Errors, Runs, Price string
}

type htmlGate struct{ Gate, Model, Shape, Status, Condition, Reason string }

// htmlLane is one lane's row of time-series panels.
type htmlLane struct {
	Label  string
	Panels []htmlPanel
}

// htmlPanel is one panel of a lane's row: its column's caption and plot.
type htmlPanel struct {
	Caption string
	Plot    template.HTML
}

// htmlSummary is the summary at the top of the page.
type htmlSummary struct {
	Screened, Passed, Incomplete string
	Failed, Inconclusive         []string
}

type htmlPage struct {
	Ev            *evidence.Evidence
	Summary       htmlSummary
	Rows          []htmlRow
	NotionalNote  string
	Higher, Lower []string
	Gates         []htmlGate
	Overview      []template.HTML
	Ratios        []template.HTML
	Lanes         []htmlLane
	ActiveTasks   string
	// Capacity is the capacity-at-SLO table ("" when no lane searched)
	// and CapacityPlots its load, goodput and Pareto charts.
	Capacity      template.HTML
	CapacityPlots []template.HTML
	// Runtime names the screen's runtime (or runtimes); RuntimeTables are
	// its runtime comparisons.
	Runtime       string
	RuntimeIntro  string
	RuntimeTables []htmlRuntimeTable
	// Tables are the sections the Markdown report has too: the workload
	// as sent and the plan versus the measurement.
	Tables []reportTable
}

// htmlRuntimeTable is one runtime comparison as the HTML page shows it.
type htmlRuntimeTable struct {
	Title, Baseline, Candidate string
	Rows                       [][5]string
}

// laneColumns are the per-lane panels, in column order.
var laneColumns = []string{
	"Latency over time (lower is better)",
	"Requests in flight (client)",
	"Output tokens/s (higher is better)",
	"Server: running and waiting requests",
	"Server: KV-cache usage",
}

var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>InferCrane screen {{.Ev.Screen}}</title>
<style>
body{font-family:sans-serif;margin:24px;color:#222}
main{max-width:2400px}
main>p,main>ul,main>table,main>h2,main>h3{max-width:1480px}
table{border-collapse:collapse;margin:8px 0 16px}
td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}
th{background:#f4f4f4}
td.num{text-align:right}
.pass{color:#176c1b;font-weight:bold}.fail{color:#b00;font-weight:bold}.inconclusive{color:#a60;font-weight:bold}
.overview{display:grid;grid-template-columns:repeat(2,560px);gap:12px}
.ratios{display:grid;grid-template-columns:repeat(2,560px);gap:12px;align-items:start}
.lanes{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,560px));gap:8px 12px;align-items:start}
.lanes svg{width:100%;height:auto}
.lanes .caption{font-size:13px;font-weight:bold;border-bottom:1px solid #ccc;padding-bottom:4px;margin-bottom:4px}
.lanes .lanehead{grid-column:1/-1;font-size:14px;font-weight:bold;margin-top:10px}
svg.plot{border:1px solid #eee;background:#fff}
code{font-size:12px}
footer{margin-top:24px;font-size:12px;color:#666}
.incomplete{background:#fff3cd;border:1px solid #a60;padding:8px 12px}
.summary{background:#f6f8fa;border:1px solid #d0d7de;padding:8px 16px;max-width:1180px}
.summary li{margin:3px 0}
</style></head><body><main>
<h1>InferCrane screen <code>{{.Ev.Screen}}</code></h1>
{{if not .Ev.Completeness.Complete}}<p class="incomplete"><strong>This screen is {{.Ev.Completeness.Words}}</strong> ({{.Ev.Completeness.RunsMissing}} missing; incomplete lane(s): {{range $i, $l := .Ev.Completeness.IncompleteLanes}}{{if $i}}, {{end}}{{$l}}{{end}}). Its gates are inconclusive; run apply again to complete it.</p>
{{end}}<section class="summary" id="summary"><h2>Summary</h2><ul>
<li><strong>Screened:</strong> {{.Summary.Screened}}</li>
<li><strong>Passed:</strong> {{.Summary.Passed}}</li>
{{range .Summary.Failed}}<li class="fail">Failed: {{.}}</li>
{{end}}{{range .Summary.Inconclusive}}<li class="inconclusive">Inconclusive: {{.}}</li>
{{end}}<li><strong>Incomplete:</strong> {{.Summary.Incomplete}}</li>
</ul></section>
<p>{{.Ev.EvidenceClass}} observed {{.Ev.ObservedAt}} · {{range .Ev.Environment.GPURequest}}{{.}} {{end}}· {{.Runtime}} · {{.Ev.Environment.ProfileRuns}} run(s) per lane · seed {{.Ev.Environment.RandomSeed}}</p>
<h2>Results</h2>
<table><tr><th>model</th><th>shape</th><th>gpu</th><th>runs</th><th>output tok/s (± CV)<br>higher is better</th><th>p95 TTFT ms<br>lower is better</th><th>p95 TPOT ms<br>lower is better</th><th>p95 latency ms<br>lower is better</th><th>errors</th><th>$ per M output tok<br>lower is better</th></tr>
{{range .Rows}}<tr><td>{{.Model}}</td><td>{{.Shape}}</td><td>{{.GPU}}</td><td class="num">{{.Runs}}</td><td class="num">{{.Throughput}}</td><td class="num">{{.TTFT}}</td><td class="num">{{.TPOT}}</td><td class="num">{{.Latency}}</td><td class="num">{{.Errors}}</td><td class="num">{{.Price}}</td></tr>
{{end}}</table>{{if .NotionalNote}}<p>{{.NotionalNote}}</p>{{end}}
{{if .Capacity}}<h2>Capacity at SLO</h2>{{.Capacity}}
<div class="overview">{{range .CapacityPlots}}{{.}}
{{end}}</div>{{end}}
{{if or .Higher .Lower}}<h2>Comparisons</h2>
{{if .Higher}}<h3>Higher is better (throughput)</h3><ul>{{range .Higher}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Lower}}<h3>Lower is better (latency)</h3><ul>{{range .Lower}}<li>{{.}}</li>{{end}}</ul>{{end}}
<div class="ratios">{{range .Ratios}}{{.}}
{{end}}</div>{{end}}
{{if .RuntimeTables}}<h2>Runtime comparisons</h2>
<p>{{.RuntimeIntro}}</p>
{{range .RuntimeTables}}<h3>{{.Title}}</h3>
<table><tr><th>metric</th><th>{{.Baseline}} (reference)</th><th>{{.Candidate}}</th><th>delta</th><th>ratio</th></tr>
{{range .Rows}}<tr><td>{{index . 0}}</td><td class="num">{{index . 1}}</td><td class="num">{{index . 2}}</td><td class="num">{{index . 3}}</td><td>{{index . 4}}</td></tr>
{{end}}</table>
{{end}}{{end}}{{range .Tables}}{{if or .Rows .Notes}}<h2>{{.Title}}</h2>
{{if .Intro}}<p>{{.Intro}}</p>{{end}}{{if .Rows}}{{$num := .Numeric}}{{$strong := .Strong}}<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if index $num $i}} class="num"{{end}}>{{if and $strong (index $strong $i)}}<strong>{{$c}}</strong>{{else}}{{$c}}{{end}}</td>{{end}}</tr>
{{end}}</table>{{end}}{{range .Notes}}<p>{{.}}</p>{{end}}
{{end}}{{end}}<h2>Gates</h2>
<p>{{.Ev.GateSummary.Pass}} pass, {{.Ev.GateSummary.Fail}} fail, {{.Ev.GateSummary.Inconclusive}} inconclusive (exit code {{.Ev.GateSummary.ExitCode}}).</p>
{{if .Gates}}<table><tr><th>gate</th><th>model</th><th>shape</th><th>status</th><th>condition</th><th>why</th></tr>
{{range .Gates}}<tr><td>{{.Gate}}</td><td>{{.Model}}</td><td>{{.Shape}}</td><td class="{{.Status}}">{{.Status}}</td><td><code>{{.Condition}}</code></td><td>{{.Reason}}</td></tr>
{{end}}</table>{{end}}
<h2>Distributions across lanes</h2>
<div class="overview">{{range .Overview}}{{.}}
{{end}}</div>
<h2>Each lane over time</h2>
<p>One block per lane, the same panels in the same places in every block (as many side by side as the window holds); one line per run (colour by run number; a capacity search's runs are its points, named by their load), seconds since the run's first request.</p>
<div class="lanes">{{range .Lanes}}<div class="lanehead">{{.Label}}</div>{{range .Panels}}<div class="panel"><div class="caption">{{.Caption}}</div>{{.Plot}}</div>{{end}}
{{end}}</div>
<h2>Preflight</h2>
{{if or .Ev.Preflight.Findings .Ev.Preflight.Corrections}}<ul>{{range .Ev.Preflight.Findings}}<li>{{.Severity}}{{if .Lane}} (lane {{.Lane}}){{end}}: {{.Summary}}</li>{{end}}{{range .Ev.Preflight.Corrections}}<li>correction: {{.}}</li>{{end}}</ul>{{else}}<p>No findings.</p>{{end}}
<h2>Boundary</h2>
<p>{{.Ev.SelectionBoundary}}</p>
<footer>Cleanup: {{.Ev.Cleanup.State}}, {{.ActiveTasks}}. Evidence <code>{{.Ev.Digest}}</code> · spec <code>{{.Ev.SpecDigest}}</code> · plan <code>{{.Ev.PlanDigest}}</code> · {{.Ev.Environment.Benchmark.Name}} {{.Ev.Environment.Benchmark.Version}}</footer>
</main></body></html>
`))

// pageSummary says what the screen covered, what passed and what is
// incomplete, for the top of the page.
func pageSummary(ev *evidence.Evidence) htmlSummary {
	var models, shapes, gpus []string
	seen := map[string]bool{}
	add := func(list *[]string, v string) {
		if v != "" && !seen[v] {
			seen[v] = true
			*list = append(*list, v)
		}
	}
	lanes, gates, passed := 0, 0, 0
	// A capacity search's runs are its points: it plans up to max_points
	// and is done when they decide it, so its runs are counted apart from
	// fixed-load lanes' ("3 of 3 planned runs" said nothing of a search).
	fixed, fixedPlanned, fixedDone := 0, 0, 0
	searches, points, expected, atMost := 0, 0, 0, 0
	var s htmlSummary
	for _, m := range ev.Models {
		add(&models, m.Name+" ("+m.Model+")")
		for _, c := range m.Campaigns {
			lanes++
			if cp := c.Capacity; cp != nil {
				searches++
				points += len(cp.Points)
				expected += cp.ExpectedPoints
				atMost += cp.MaxPoints
			} else {
				fixed++
				fixedPlanned += c.RunsPlanned
				fixedDone += min(len(c.Runs), c.RunsPlanned)
			}
			add(&shapes, "shape "+c.ShapeWords())
			add(&gpus, c.GPUType)
			for _, g := range c.Gates {
				gates++
				where := fmt.Sprintf("gate %s on %s/%s: %s", g.Gate, m.Name, c.ShapeWords(), g.Reason)
				switch g.Status {
				case evidence.StatusPass:
					passed++
				case evidence.StatusFail:
					s.Failed = append(s.Failed, where)
				default:
					s.Inconclusive = append(s.Inconclusive, where)
				}
			}
		}
	}
	cp := ev.Completeness
	rt := ev.Environment.Runtime.Engine + " " + ev.Environment.Runtime.Version
	if len(ev.Environment.Runtimes) > 0 {
		rt = environmentRuntimeWords(ev.Environment)
	}
	var counts []string
	if fixed > 0 {
		counts = append(counts, fmt.Sprintf("%d of %d planned run(s) completed", fixedDone, fixedPlanned))
		if searches > 0 {
			counts[0] = fmt.Sprintf("%d fixed-load: %s", fixed, counts[0])
		}
	}
	if searches > 0 {
		bound := fmt.Sprintf("at most %d", atMost)
		if expected > 0 {
			bound = fmt.Sprintf("expected %d, %s", expected, bound)
		}
		counts = append(counts, fmt.Sprintf("%d capacity search(es): %d point(s) run (%s)", searches, points, bound))
	}
	s.Screened = fmt.Sprintf("%s × %s on %s: %d lane(s), %s, %s.",
		strings.Join(models, ", "), strings.Join(shapes, ", "), strings.Join(gpus, ", "), lanes,
		strings.Join(counts, "; "), rt)
	switch {
	case gates == 0:
		s.Passed = "no gate was set."
	case passed == gates:
		s.Passed = fmt.Sprintf("all %d gate check(s).", gates)
	default:
		s.Passed = fmt.Sprintf("%d of %d gate check(s); %d failed, %d inconclusive (exit code %d).", passed, gates, len(s.Failed), len(s.Inconclusive), ev.GateSummary.ExitCode)
	}
	if cp.Complete {
		s.Incomplete = "nothing: every planned run completed."
	} else {
		s.Incomplete = fmt.Sprintf("%d run(s) missing in lane(s) %s; run apply again to complete them.", cp.RunsMissing, strings.Join(cp.IncompleteLanes, ", "))
	}
	return s
}

// WriteHTML renders ev and the screen's records as one self-contained HTML
// page (inline CSS and SVG, no scripts, nothing fetched at view time): a
// summary, the results, the comparisons split by direction (higher is
// better, lower is better), the gates, the latency, TTFT and TPOT CDFs and
// the throughput per run across lanes, and one row per lane with the same
// panels in the same columns: latency over time, requests in flight,
// output tokens/s and the server's scraped running/waiting requests and
// KV-cache usage.
func WriteHTML(w io.Writer, ev *evidence.Evidence, runs []LaneRecords) error {
	p := htmlPage{Ev: ev, Summary: pageSummary(ev), ActiveTasks: activeWords(ev.Cleanup.ActiveGPUTasks),
		Runtime: ev.Environment.Runtime.Engine + " " + ev.Environment.Runtime.Version, RuntimeIntro: runtimeIntro}
	if len(ev.Environment.Runtimes) > 0 {
		p.Runtime = environmentRuntimeWords(ev.Environment)
	}
	for i := range ev.RuntimeComparisons {
		c := &ev.RuntimeComparisons[i]
		p.RuntimeTables = append(p.RuntimeTables, htmlRuntimeTable{Title: runtimeTitle(c), Baseline: c.Baseline, Candidate: c.Candidate, Rows: runtimeRows(c)})
	}
	p.Tables = []reportTable{requestMixTable(ev), predictionTable(ev)}
	p.NotionalNote = notionalNote(ev)
	bars := p.addResults(ev)
	p.addComparisons(ev)
	lanes := laneCharts(ev, runs)
	p.addOverview(lanes, bars)
	p.addLanePanels(lanes)
	p.Capacity = template.HTML(capacityTableHTML(ev)) // every cell is escaped
	for _, s := range capacityPlots(ev) {
		p.CapacityPlots = append(p.CapacityPlots, template.HTML(s)) // generated SVG; every label is escaped
	}
	return pageTemplate.Execute(w, p)
}

// addResults adds a row per campaign and its gates to the page and
// returns the throughput bars per run.
func (p *htmlPage) addResults(ev *evidence.Evidence) []barGroup {
	var bars []barGroup
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			a := &c.Aggregate
			p.Rows = append(p.Rows, htmlRow{Model: m.Model, Shape: c.ShapeWords(), GPU: c.GPUType, Runs: runsWords(&c),
				Throughput: withCV(a.OutputTokenThroughput, c.CoefficientOfVariation["output_token_throughput"], c.AggregatedRuns()),
				TTFT:       fmtPtr(a.TTFTP95Ms), TPOT: fmtPtr(a.TPOTP95Ms), Latency: fmtPtr(a.LatencyP95Ms), Errors: errorsWords(a), Price: priceWords(c.Price)})
			for _, g := range c.Gates {
				p.Gates = append(p.Gates, htmlGate{g.Gate, m.Model, c.ShapeWords(), g.Status, g.Condition, g.Reason})
			}
			bg := barGroup{name: m.Name + " · " + c.ShapeWords()}
			for _, r := range c.Runs {
				bg.values = append(bg.values, r.OutputTokenThroughput)
			}
			if cv, ok := c.CoefficientOfVariation["output_token_throughput"]; ok {
				bg.note = fmt.Sprintf("CV %.1f%%", 100*cv)
			} else {
				bg.note = "CV needs 2 runs"
			}
			bars = append(bars, bg)
		}
	}
	return bars
}

// addComparisons adds the ratio sentences, split by direction, and their
// interval charts.
func (p *htmlPage) addComparisons(ev *evidence.Evidence) {
	var higher, lower []intervalRow
	for _, c := range ev.Comparisons {
		for _, metric := range ratioMetrics {
			r, ok := c.Ratios[c.Candidate+"_over_"+c.Baseline+"_"+metric]
			if !ok {
				continue
			}
			row := intervalRow{label: c.Candidate + " / " + c.Baseline + " " + metric + " (" + c.ShapeWords() + ")", value: r.Value, ci: r.CI95, signif: r.Significant}
			if r.HigherIsBetter {
				p.Higher = append(p.Higher, ratioSentence(&c, &r))
				higher = append(higher, row)
			} else {
				p.Lower = append(p.Lower, ratioSentence(&c, &r))
				lower = append(lower, row)
			}
		}
	}
	if len(ev.Comparisons) > 0 {
		p.Ratios = []template.HTML{
			template.HTML(intervalChart("Throughput ratios over the baseline: higher is better", true, higher)),
			template.HTML(intervalChart("Latency ratios over the baseline: lower is better", false, lower)),
		}
	}
}

// laneData is one lane's pooled distributions (the CDFs) and per-run time
// series, for the HTML page.
type laneData struct {
	label, cdfNote          string
	ttft, tpot, lat         []float64
	latency, inflight, toks []series
	running, kv             []series
}

// laneCharts pools each lane's distributions and collects its runs' time
// series, in evidence order.
func laneCharts(ev *evidence.Evidence, runs []LaneRecords) []*laneData {
	var lanes []*laneData
	byLane := map[string]*laneData{}
	searched := searchedLanes(ev)
	for _, lr := range runs {
		d := byLane[lr.Lane]
		if d == nil {
			d = &laneData{label: laneLabel(lr.Model, lr.Shape, lr.GPU, lr.Runtime)}
			byLane[lr.Lane] = d
			lanes = append(lanes, d)
		}
		name := fmt.Sprintf("run %d", lr.Run)
		pooled := true
		if c := searched[lr.Lane]; c != nil {
			// A search's runs are its points, at different loads: each is
			// named by its load and verdict, and only the point the lane's
			// figures come from enters the CDFs (pooling points that met
			// the SLOs with points that missed them describes no load).
			name, pooled = pointName(c, lr.Run), lr.Run == cdfRun(c)
		}
		if pooled {
			t, o, l := requestTimes(lr.Records)
			d.ttft, d.tpot, d.lat = append(d.ttft, t...), append(d.tpot, o...), append(d.lat, l...)
			if c := searched[lr.Lane]; c != nil {
				d.cdfNote = " (" + name + ")"
			}
		}
		inf, tok := timeSeries(lr.Records)
		colour := palette[(lr.Run-1+len(palette))%len(palette)]
		d.latency = append(d.latency, series{name: name, points: latencySeries(lr.Records), color: colour})
		d.inflight = append(d.inflight, series{name: name, points: inf, step: true, color: colour})
		d.toks = append(d.toks, series{name: name, points: tok, color: colour})
		origin := firstSend(lr.Records)
		if pts := serverSeries(lr.ServerSeries, origin, 1, "vllm:num_requests_running"); len(pts) > 0 {
			d.running = append(d.running, series{name: name + " running", points: pts, step: true, color: colour})
		}
		if pts := serverSeries(lr.ServerSeries, origin, 1, "vllm:num_requests_waiting"); len(pts) > 0 {
			d.running = append(d.running, series{name: name + " waiting", points: pts, step: true, color: colour, dash: true})
		}
		if pts := serverSeries(lr.ServerSeries, origin, 100, "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"); len(pts) > 0 {
			d.kv = append(d.kv, series{name: name, points: pts, step: true, color: colour})
		}
	}
	return lanes
}

// addOverview adds the CDFs across lanes and the throughput bars.
func (p *htmlPage) addOverview(lanes []*laneData, bars []barGroup) {
	var latS, ttftS, tpotS []series
	for _, d := range lanes {
		latS = append(latS, cdfSeries(d.label+d.cdfNote, d.lat))
		ttftS = append(ttftS, cdfSeries(d.label+d.cdfNote, d.ttft))
		tpotS = append(tpotS, cdfSeries(d.label+d.cdfNote, d.tpot))
	}
	overview := []string{
		lineChart("Latency CDF per lane: lower is better (further left)", "end-to-end latency (ms)", "fraction of requests", latS, true, "no succeeded request"),
		lineChart("TTFT CDF per lane: lower is better (further left)", "time to first token (ms)", "fraction of requests", ttftS, true, "no streamed request"),
		lineChart("TPOT CDF per lane: lower is better (further left)", "time per output token (ms)", "fraction of requests", tpotS, true, "no request with 2 or more tokens"),
		barChart("Output throughput per run: higher is better", "output tokens/s", bars),
	}
	for _, s := range overview {
		p.Overview = append(p.Overview, template.HTML(s)) // generated SVG; every label is escaped
	}
}

// addLanePanels adds one row of panels per lane.
func (p *htmlPage) addLanePanels(lanes []*laneData) {
	const since = "seconds since the run's first request"
	const notScraped = "not scraped: the server exposes no /metrics"
	for _, d := range lanes {
		plots := []string{
			lineChart("Latency: "+d.label, since, "median latency (ms)", d.latency, true, "no succeeded request"),
			lineChart("In flight: "+d.label, since, "requests in flight", d.inflight, true, "no request"),
			lineChart("Output tokens/s: "+d.label, since, "output tokens/s", d.toks, true, "no token"),
			lineChart("Server requests: "+d.label, since, "running (solid), waiting (dashed)", d.running, true, notScraped),
			lineChart("KV-cache usage: "+d.label, since, "KV-cache usage (%)", d.kv, true, notScraped),
		}
		lane := htmlLane{Label: d.label}
		for i, plot := range plots {
			lane.Panels = append(lane.Panels, htmlPanel{Caption: laneColumns[i], Plot: template.HTML(plot)}) // generated SVG; every label is escaped
		}
		p.Lanes = append(p.Lanes, lane)
	}
}

// searchedLanes maps each lane with a capacity search to its capacity.
func searchedLanes(ev *evidence.Evidence) map[string]*evidence.Capacity {
	out := map[string]*evidence.Capacity{}
	for _, m := range ev.Models {
		for i := range m.Campaigns {
			if c := m.Campaigns[i].Capacity; c != nil {
				out[m.Campaigns[i].Lane] = c
			}
		}
	}
	return out
}

// pointName names a search's run by its load and verdict ("4 rps, met",
// "8 rps, missed ttft").
func pointName(c *evidence.Capacity, run int) string {
	for _, p := range c.Points {
		if p.Run != run {
			continue
		}
		verdict := "met"
		if !p.Pass {
			verdict = "missed " + strings.Join(p.Broken, ", ")
		}
		return fmt.Sprintf("%s %s, %s", fmtLoad(p.Load), c.Unit, verdict)
	}
	return fmt.Sprintf("run %d", run)
}

// cdfRun is the run of a search whose requests the CDFs show: the point at
// capacity, or the lowest load when no point met the objectives.
func cdfRun(c *evidence.Capacity) int {
	if c.CapacityRun > 0 {
		return c.CapacityRun
	}
	run, low := 0, math.Inf(1)
	for _, p := range c.Points {
		if p.Load < low {
			run, low = p.Run, p.Load
		}
	}
	return run
}
