package report

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"sort"

	"github.com/infercrane/infercrane/executor/loadgen"
)

// plotBins is the number of time bins of the time-series plots.
const plotBins = 60

// laneLabel names a campaign in plots.
func laneLabel(model, shape, gpu string) string { return model + " · " + shape + " · " + gpu }

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

type htmlRow struct {
	Model, Shape, GPU, Throughput, TTFT, TPOT, Latency, Errors, Runs string
}

type htmlGate struct{ Gate, Model, Shape, Status, Condition, Reason string }

type htmlPage struct {
	Ev          *Evidence
	Rows        []htmlRow
	Sentences   []string
	Gates       []htmlGate
	Plots       []template.HTML
	ActiveTasks string
}

var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>InferCrane screen {{.Ev.Screen}}</title>
<style>
body{font-family:sans-serif;margin:24px;color:#222;max-width:1360px}
table{border-collapse:collapse;margin:8px 0 16px}
td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}
th{background:#f4f4f4}
td.num{text-align:right}
.pass{color:#176c1b;font-weight:bold}.fail{color:#b00;font-weight:bold}.inconclusive{color:#a60;font-weight:bold}
.plots{display:flex;flex-wrap:wrap;gap:12px}
.plots svg{border:1px solid #eee;background:#fff}
code{font-size:12px}
footer{margin-top:24px;font-size:12px;color:#666}
.incomplete{background:#fff3cd;border:1px solid #a60;padding:8px 12px}
</style></head><body>
<h1>InferCrane screen <code>{{.Ev.Screen}}</code></h1>
{{if not .Ev.Completeness.Complete}}<p class="incomplete"><strong>This screen is {{.Ev.Completeness.Words}}</strong> ({{.Ev.Completeness.RunsMissing}} missing; incomplete lane(s): {{range $i, $l := .Ev.Completeness.IncompleteLanes}}{{if $i}}, {{end}}{{$l}}{{end}}). Its gates are inconclusive; run apply again to complete it.</p>
{{end}}<p>{{.Ev.EvidenceClass}} observed {{.Ev.ObservedAt}} · {{range .Ev.Environment.GPURequest}}{{.}} {{end}}· {{.Ev.Environment.Runtime.Engine}} {{.Ev.Environment.Runtime.Version}} · {{.Ev.Environment.ProfileRuns}} run(s) per lane · seed {{.Ev.Environment.RandomSeed}}</p>
<h2>Results</h2>
<table><tr><th>model</th><th>shape</th><th>gpu</th><th>runs</th><th>output tok/s (± CV)</th><th>p95 TTFT ms</th><th>p95 TPOT ms</th><th>p95 latency ms</th><th>errors</th></tr>
{{range .Rows}}<tr><td>{{.Model}}</td><td>{{.Shape}}</td><td>{{.GPU}}</td><td class="num">{{.Runs}}</td><td class="num">{{.Throughput}}</td><td class="num">{{.TTFT}}</td><td class="num">{{.TPOT}}</td><td class="num">{{.Latency}}</td><td class="num">{{.Errors}}</td></tr>
{{end}}</table>
{{if .Sentences}}<h2>Comparisons</h2><ul>{{range .Sentences}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>Gates</h2>
<p>{{.Ev.GateSummary.Pass}} pass, {{.Ev.GateSummary.Fail}} fail, {{.Ev.GateSummary.Inconclusive}} inconclusive (exit code {{.Ev.GateSummary.ExitCode}}).</p>
{{if .Gates}}<table><tr><th>gate</th><th>model</th><th>shape</th><th>status</th><th>condition</th><th>why</th></tr>
{{range .Gates}}<tr><td>{{.Gate}}</td><td>{{.Model}}</td><td>{{.Shape}}</td><td class="{{.Status}}">{{.Status}}</td><td><code>{{.Condition}}</code></td><td>{{.Reason}}</td></tr>
{{end}}</table>{{end}}
<h2>Plots</h2>
<div class="plots">{{range .Plots}}{{.}}
{{end}}</div>
<h2>Preflight</h2>
{{if or .Ev.Preflight.Findings .Ev.Preflight.Corrections}}<ul>{{range .Ev.Preflight.Findings}}<li>{{.Severity}}{{if .Lane}} (lane {{.Lane}}){{end}}: {{.Summary}}</li>{{end}}{{range .Ev.Preflight.Corrections}}<li>correction: {{.}}</li>{{end}}</ul>{{else}}<p>No findings.</p>{{end}}
<h2>Boundary</h2>
<p>{{.Ev.SelectionBoundary}}</p>
<footer>Cleanup: {{.Ev.Cleanup.State}}, {{.ActiveTasks}}. Evidence <code>{{.Ev.Digest}}</code> · spec <code>{{.Ev.SpecDigest}}</code> · plan <code>{{.Ev.PlanDigest}}</code> · {{.Ev.Environment.Benchmark.Name}} {{.Ev.Environment.Benchmark.Version}}</footer>
</body></html>
`))

// WriteHTML renders ev and the screen's records as one self-contained HTML
// page (inline CSS and SVG, no scripts, nothing fetched at view time) with
// the plots: latency, TTFT and TPOT CDFs per lane, throughput per run with
// its CV, the comparison ratios with their intervals, and per lane the
// requests in flight and output tokens/s over time.
func WriteHTML(w io.Writer, ev *Evidence, runs []LaneRecords) error {
	p := htmlPage{Ev: ev, ActiveTasks: activeWords(ev.Cleanup.ActiveGPUTasks)}
	var bars []barGroup
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			a := &c.Aggregate
			p.Rows = append(p.Rows, htmlRow{Model: m.Model, Shape: c.Profile, GPU: c.GPUType, Runs: runsWords(&c),
				Throughput: withCV(a.OutputTokenThroughput, c.CoefficientOfVariation["output_token_throughput"], len(c.Runs)),
				TTFT:       fmtPtr(a.TTFTP95Ms), TPOT: fmtPtr(a.TPOTP95Ms), Latency: fmtPtr(a.LatencyP95Ms), Errors: errorsWords(a)})
			for _, g := range c.Gates {
				p.Gates = append(p.Gates, htmlGate{g.Gate, m.Model, c.Profile, g.Status, g.Condition, g.Reason})
			}
			bg := barGroup{name: m.Name + " · " + c.Profile}
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
	var rows []intervalRow
	for _, c := range ev.Comparisons {
		for _, metric := range ratioMetrics {
			if r, ok := c.Ratios[c.Candidate+"_over_"+c.Baseline+"_"+metric]; ok {
				p.Sentences = append(p.Sentences, ratioSentence(&c, &r))
				rows = append(rows, intervalRow{label: c.Candidate + " / " + c.Baseline + " " + metric + " (" + c.Profile + ")", value: r.Value, ci: r.CI95, signif: r.Significant})
			}
		}
	}
	// Per-lane pooled distributions, in evidence order.
	type laneData struct {
		label            string
		ttft, tpot, lat  []float64
		inflight, tokens []series
	}
	var lanes []*laneData
	byLane := map[string]*laneData{}
	for _, lr := range runs {
		d := byLane[lr.Lane]
		if d == nil {
			d = &laneData{label: laneLabel(lr.Model, lr.Shape, lr.GPU)}
			byLane[lr.Lane] = d
			lanes = append(lanes, d)
		}
		t, o, l := requestTimes(lr.Records)
		d.ttft, d.tpot, d.lat = append(d.ttft, t...), append(d.tpot, o...), append(d.lat, l...)
		inf, tok := timeSeries(lr.Records)
		name := fmt.Sprintf("run %d", lr.Run)
		d.inflight = append(d.inflight, series{name: name, points: inf, step: true})
		d.tokens = append(d.tokens, series{name: name, points: tok})
	}
	var latS, ttftS, tpotS []series
	for _, d := range lanes {
		latS = append(latS, cdfSeries(d.label, d.lat))
		ttftS = append(ttftS, cdfSeries(d.label, d.ttft))
		tpotS = append(tpotS, cdfSeries(d.label, d.tpot))
	}
	plots := []string{
		lineChart("Latency CDF per lane (all runs)", "end-to-end latency (ms)", "fraction of requests", latS, true),
		lineChart("TTFT distribution (CDF)", "time to first token (ms)", "fraction of requests", ttftS, true),
		lineChart("TPOT distribution (CDF)", "time per output token (ms)", "fraction of requests", tpotS, true),
		barChart("Output throughput per run", "output tokens/s", bars),
	}
	if len(ev.Comparisons) > 0 {
		plots = append(plots, intervalChart("Ratios over the baseline with 95% intervals", rows))
	}
	for _, d := range lanes {
		plots = append(plots,
			lineChart("In flight: "+d.label, "seconds since the run's first send", "requests in flight", d.inflight, true),
			lineChart("Output tokens/s: "+d.label, "seconds since the run's first send", "output tokens/s", d.tokens, true))
	}
	for _, s := range plots {
		p.Plots = append(p.Plots, template.HTML(s)) // generated SVG; every label is escaped
	}
	return pageTemplate.Execute(w, p)
}
