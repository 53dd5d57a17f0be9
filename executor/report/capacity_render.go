package report

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strings"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/planner/search"
)

// capacityRow is one searched lane in the capacity tables.
type capacityRow struct {
	model, shape, gpu string
	runtime           string // set when the screen compares runtimes
	c                 *evidence.Capacity
	frontier          bool
}

func capacityRows(ev *evidence.Evidence) []capacityRow {
	front := map[string]bool{}
	for _, p := range ev.Pareto {
		for _, l := range p.Lanes {
			front[l.Lane] = l.Frontier
		}
	}
	var rows []capacityRow
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			if c.Capacity != nil {
				rows = append(rows, capacityRow{model: m.Model, shape: c.Profile, gpu: c.GPUType, runtime: c.Runtime, c: c.Capacity, frontier: front[c.Lane]})
			}
		}
	}
	return rows
}

// capacityCells are the table cells of a row, shared by Markdown and HTML.
func (r capacityRow) cells() []string {
	c := r.c
	capacity := fmtLoad(c.Capacity) + " " + c.Unit
	switch search.Status(c.Status) {
	case search.StatusAboveRange:
		capacity = ">= " + capacity
	case search.StatusBelowRange:
		capacity = "< " + fmtLoad(c.Range[0]) + " " + c.Unit
	}
	bracket := "[" + fmtLoad(c.Capacity) + ", "
	if c.Upper != nil {
		bracket += fmtLoad(*c.Upper) + ")"
	} else {
		bracket += "?)"
	}
	predicted := "-"
	if c.PredictedKnee > 0 {
		predicted = fmtLoad(c.PredictedKnee)
	}
	usd := "-"
	if c.USDPerMTok != nil {
		usd = fmt.Sprintf("$%.4f", *c.USDPerMTok)
	}
	frontier := ""
	if r.frontier {
		frontier = "yes"
	}
	return []string{r.model, r.shape, r.gpu, c.Search, capacity, bracket, predicted, fmt.Sprintf("%d/%d", len(c.Points), c.MaxPoints),
		c.Status, breaksWords(c.Breaks), fmt.Sprintf("%.0f", c.OutputTokenThroughput), usd, frontier}
}

var capacityHeader = []string{"model", "shape", "gpu", "search", "capacity", "bracket", "predicted knee", "points", "status",
	"objectives break at", "output tok/s at capacity", "$ per M output tok", "Pareto frontier"}

// breaksWords lists where each objective broke, lowest load first.
func breaksWords(b map[string]float64) string {
	if len(b) == 0 {
		return "none broke"
	}
	names := sortedKeys(b)
	sort.SliceStable(names, func(i, j int) bool { return b[names[i]] < b[names[j]] })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s at %s", n, fmtLoad(b[n]))
	}
	return strings.Join(parts, ", ")
}

func fmtLoad(x float64) string { return fmtSig(x, 4) }

// writeCapacityMarkdown adds the capacity table and each search's points.
func writeCapacityMarkdown(b *strings.Builder, ev *evidence.Evidence) {
	rows := capacityRows(ev)
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n## Capacity at SLO\n\n")
	b.WriteString("| " + strings.Join(capacityHeader, " | ") + " |\n")
	b.WriteString("|---|---|---|---|---:|---|---:|---:|---|---|---:|---:|---|\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r.cells(), " | ") + " |\n")
	}
	b.WriteString("\nCapacity is the highest measured load meeting every objective below the lowest load that missed one; " +
		"$ per M output tokens is the GPU price x GPUs / output tokens/s at capacity x 1e6. Points, in the order the search ran them:\n\n")
	for _, r := range rows {
		var pts []string
		for _, p := range r.c.Points {
			v := "ok"
			if !p.Pass {
				v = "missed " + strings.Join(p.Broken, ", ")
			}
			pts = append(pts, fmt.Sprintf("%s (%s)", fmtLoad(p.Load), v))
		}
		fmt.Fprintf(b, "- %s · %s · %s: %s\n", r.model, r.shape, r.gpu, strings.Join(pts, "; "))
	}
}

// capacityTableHTML is the capacity table of the HTML report ("" when no
// lane searched).
func capacityTableHTML(ev *evidence.Evidence) string {
	rows := capacityRows(ev)
	if len(rows) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString(`<table class="capacity"><tr>`)
	for _, h := range capacityHeader {
		sb.WriteString("<th>" + html.EscapeString(h) + "</th>")
	}
	sb.WriteString("</tr>\n")
	for _, r := range rows {
		sb.WriteString("<tr>")
		for _, c := range r.cells() {
			sb.WriteString("<td>" + html.EscapeString(c) + "</td>")
		}
		sb.WriteString("</tr>\n")
	}
	sb.WriteString("</table>")
	return sb.String()
}

// capacityPlots are the HTML report's capacity plots: per searched lane
// the p95s over load as fractions of their objectives (SLO line at 1, the
// capacity and the predicted knee as vertical lines) and the goodput curve;
// per searched shape the cost-capacity Pareto chart.
func capacityPlots(ev *evidence.Evidence) []string {
	var out []string
	for _, r := range capacityRows(ev) {
		c := r.c
		label := laneLabel(r.model, r.shape, r.gpu, r.runtime)
		var ss []series
		for _, m := range []struct {
			name string
			slo  float64
			get  func(evidence.CapacityPoint) *float64
		}{
			{search.SLOTTFT, c.SLO.TTFTP95Ms, func(p evidence.CapacityPoint) *float64 { return p.TTFTP95Ms }},
			{search.SLOTPOT, c.SLO.TPOTP95Ms, func(p evidence.CapacityPoint) *float64 { return p.TPOTP95Ms }},
			{search.SLOLatency, c.SLO.LatencyP95Ms, func(p evidence.CapacityPoint) *float64 { return p.LatencyP95Ms }},
		} {
			if m.slo <= 0 {
				continue
			}
			s := series{name: fmt.Sprintf("%s / %g ms", m.name, m.slo)}
			for _, p := range sortedPoints(c.Points) {
				if v := m.get(p); v != nil {
					s.points = append(s.points, [2]float64{p.Load, *v / m.slo})
				}
			}
			ss = append(ss, s)
		}
		marks := []vmark{{x: c.Capacity, label: "capacity " + fmtLoad(c.Capacity)}}
		if c.PredictedKnee > 0 {
			marks = append(marks, vmark{x: c.PredictedKnee, label: "predicted " + fmtLoad(c.PredictedKnee), dashed: true})
		}
		out = append(out, loadChart("Latency vs load: "+label, "load ("+c.Unit+")", "p95 / objective (1 = SLO)", ss, 1, marks, 0))
		if c.Goodput > 0 {
			g := series{name: "good fraction"}
			for _, p := range sortedPoints(c.Points) {
				if p.GoodFraction != nil {
					g.points = append(g.points, [2]float64{p.Load, *p.GoodFraction})
				} else if p.Succeeded+p.Failed > 0 {
					g.points = append(g.points, [2]float64{p.Load, float64(p.Succeeded) / float64(p.Succeeded+p.Failed)})
				}
			}
			out = append(out, loadChart("Goodput vs load: "+label, "load ("+c.Unit+")", fmt.Sprintf("fraction within every SLO (goal %g)", c.Goodput), []series{g}, c.Goodput, marks, 1))
		}
	}
	for _, p := range ev.Pareto {
		out = append(out, paretoChart(p))
	}
	return out
}

func sortedPoints(pts []evidence.CapacityPoint) []evidence.CapacityPoint {
	out := append([]evidence.CapacityPoint(nil), pts...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Load < out[j].Load })
	return out
}

// vmark is a vertical line at x with a label.
type vmark struct {
	x      float64
	label  string
	dashed bool
}

// loadChart draws measured points joined by lines over load, a horizontal
// reference line at ref (the objective) and vertical marks (the knee).
func loadChart(title, xlabel, ylabel string, ss []series, ref float64, marks []vmark, ymax float64) string {
	var sb strings.Builder
	n := 0
	xlo, xhi, yhi := math.Inf(1), math.Inf(-1), ref*1.1
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.name
		for _, p := range s.points {
			n++
			xlo, xhi, yhi = math.Min(xlo, p[0]), math.Max(xhi, p[0]), math.Max(yhi, p[1])
		}
	}
	if n == 0 {
		openSVG(&sb, title, 0, plotH, "")
		return emptyPlot(&sb, title, "no point measured")
	}
	openSVG(&sb, title, n, plotH+legendHeight(names), "")
	for _, m := range marks {
		if m.x > 0 {
			xlo, xhi = math.Min(xlo, m.x), math.Max(xhi, m.x)
		}
	}
	pad := (xhi - xlo) * 0.05
	if pad == 0 {
		pad = math.Max(xlo*0.1, 1)
	}
	yhi = math.Min(yhi, ref*10) // an overloaded point would flatten the rest
	if ymax > 0 {
		yhi = math.Min(yhi, ymax) // a fraction never passes 1: its axis stops there
	}
	xs := newAxis(math.Max(xlo-pad, 0), xhi+pad, padLeft, padLeft+innerW)
	ys := newAxis(0, yhi, padTop+innerH, padTop)
	yhi = ys.hi
	frame(&sb, title, xlabel, ylabel, &xs, ys)
	y := ys.at(ref)
	fmt.Fprintf(&sb, `<line class="slo" x1="%d" y1="%.1f" x2="%d" y2="%.1f" %s/>`, padLeft, y, padLeft+innerW, y, refLineStyle)
	for i, m := range marks {
		if m.x <= 0 {
			continue
		}
		x := xs.at(m.x)
		dash := ""
		if m.dashed {
			dash = ` stroke-dasharray="2 3"`
		}
		fmt.Fprintf(&sb, `<line class="knee" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#2a2" stroke-width="1.2"%s/>`, x, padTop, x, padTop+innerH, dash)
		fmt.Fprintf(&sb, `<text class="annotation" x="%.1f" y="%d" text-anchor="end" %s>%s</text>`, x-3, padTop+innerH-6-(labelLine+2)*i, fontAttrs, html.EscapeString(m.label))
	}
	colours := make([]string, len(ss))
	for i, s := range ss {
		colours[i] = colorOf(ss, i)
		var d strings.Builder
		for j, p := range s.points {
			px, py := xs.at(p[0]), ys.at(math.Min(p[1], yhi))
			if j == 0 {
				fmt.Fprintf(&d, "M%.1f %.1f", px, py)
			} else {
				fmt.Fprintf(&d, "L%.1f %.1f", px, py)
			}
			fmt.Fprintf(&sb, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"/>`, px, py, markerRadius, colours[i])
		}
		fmt.Fprintf(&sb, `<path class="series" d="%s" fill="none" stroke="%s" stroke-width="%.1f" opacity="%s" data-n="%d"/>`,
			d.String(), colours[i], defaultStroke, seriesOpacity, len(s.points))
	}
	legend(&sb, names, colours)
	sb.WriteString(`</svg>`)
	return sb.String()
}

// paretoChart draws a shape's searched lanes by capacity and cost per
// token, the frontier joined by a line.
func paretoChart(p evidence.Pareto) string {
	title := "Cost vs capacity (Pareto): " + p.Profile
	var sb strings.Builder
	var pts []evidence.ParetoPoint
	for _, l := range p.Lanes {
		if l.USDPerMTok != nil && l.Capacity > 0 {
			pts = append(pts, l)
		}
	}
	openSVG(&sb, title, len(pts), plotH, "")
	if len(pts) == 0 {
		return emptyPlot(&sb, title, "no lane has a capacity and a price")
	}
	xlo, xhi, yhi := math.Inf(1), math.Inf(-1), 0.0
	for _, l := range pts {
		xlo, xhi, yhi = math.Min(xlo, l.Capacity), math.Max(xhi, l.Capacity), math.Max(yhi, *l.USDPerMTok)
	}
	pad := math.Max((xhi-xlo)*0.1, xhi*0.05)
	xs := newAxis(math.Max(xlo-pad, 0), xhi+pad, padLeft, padLeft+innerW)
	ys := newAxis(0, yhi*1.15, padTop+innerH, padTop)
	frame(&sb, title, "capacity at SLO ("+p.Unit+")", "$ per million output tokens", &xs, ys)
	var front []evidence.ParetoPoint
	for _, l := range pts {
		if l.Frontier {
			front = append(front, l)
		}
	}
	sort.Slice(front, func(i, j int) bool { return front[i].Capacity < front[j].Capacity })
	if len(front) > 1 {
		var d strings.Builder
		for i, l := range front {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f %.1f", cmd, xs.at(l.Capacity), ys.at(*l.USDPerMTok))
		}
		fmt.Fprintf(&sb, `<path class="frontier" d="%s" fill="none" stroke="#2a2" stroke-width="1.5"/>`, d.String())
	}
	for i, l := range pts {
		fill := "#999"
		if l.Frontier {
			fill = "#2a2"
		}
		x, y := xs.at(l.Capacity), ys.at(*l.USDPerMTok)
		fmt.Fprintf(&sb, `<circle class="lane" cx="%.1f" cy="%.1f" r="%.1f" fill="%s"/>`, x, y, markerRadius+1, fill)
		fmt.Fprintf(&sb, `<text class="annotation" x="%.1f" y="%.1f" %s>%s</text>`, x+6, y-6+float64(i%2)*14, fontAttrs, html.EscapeString(l.Model+" · "+l.GPUType))
	}
	sb.WriteString(`</svg>`)
	return sb.String()
}
