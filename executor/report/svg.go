package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"

	"github.com/infercrane/infercrane/executor/evidence"
)

// The plots are hand-made SVG: self-contained, no scripts, no network.
// Every plot is an <svg class="plot"> whose data-points attribute counts
// the values drawn, so tests (and people) can tell an empty plot. Axes
// carry round tick values (1, 2 or 5 times a power of ten, as <text
// class="tick x|y">), marks stay inside the plot area (<rect
// class="plot-area">) and the legend (<g class="legend">) sits below it,
// so it never covers data.

// Layout, in SVG user units.
const (
	plotW, plotH    = 560, 300 // without the legend
	padLeft         = 64
	padRight        = 16
	padTop          = 32
	padBottom       = 48
	innerW, innerH  = plotW - padLeft - padRight, plotH - padTop - padBottom
	plotTitleY      = 18
	xLabelY         = plotH - 10
	yLabelX         = 14
	tickLabelOffset = 4
	axisTicks       = 5 // ticks wanted per axis; niceTicks picks 4 to 8
	legendTop       = plotH + 4
	legendRow       = 16
	legendSwatch    = 10
	legendCharW     = 6.2 // average width of a legend character
	legendMax       = 12
	labelLine       = 13 // the line height of a wrapped label
	xTickDrop       = 18 // x tick labels' baseline below the plot area, clear of the lowest y tick's
	// maxSeriesPoints bounds the points of one CDF line.
	maxSeriesPoints = 240
	barGap          = 0.15 // fraction of a bar group's width left empty on each side
	markerRadius    = 3.5
	whiskerWidth    = 1.5
	defaultStroke   = 1.8
)

// Styles.
const (
	svgOpen       = `<svg class="plot" role="img" viewBox="0 0 %d %d" width="%d" height="%d" data-points="%d" aria-label="%s"%s>`
	noDataText    = `<text x="%d" y="%d" text-anchor="middle" class="nodata" %s>%s</text>`
	axisStyle     = `stroke="#444" stroke-width="1"`
	gridStyle     = `stroke="#ddd" stroke-width="1"`
	refLineStyle  = `stroke="#b00" stroke-dasharray="4 3" stroke-width="1"`
	fontAttrs     = `font-family="sans-serif" font-size="11"`
	titleAttrs    = `font-family="sans-serif" font-size="13" font-weight="bold"`
	seriesOpacity = "0.9"
)

// palette colours series in order (the Tableau 10 colours).
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// series is one named line of a line chart.
type series struct {
	name   string
	points [][2]float64
	step   bool
	// color overrides the palette colour of the series' position; dash
	// draws it dashed.
	color string
	dash  bool
}

// colorOf is the colour of series i.
func colorOf(ss []series, i int) string {
	if ss[i].color != "" {
		return ss[i].color
	}
	return palette[i%len(palette)]
}

// scale maps [lo, hi] onto [a, b].
type scale struct{ lo, hi, a, b float64 }

func (s scale) at(v float64) float64 {
	if s.hi == s.lo {
		return (s.a + s.b) / 2
	}
	return s.a + (v-s.lo)/(s.hi-s.lo)*(s.b-s.a)
}

// niceStep is the 1-2-5 step (1, 2 or 5 times a power of ten) that cuts
// span into about n intervals.
func niceStep(span float64, n int) float64 {
	if span <= 0 || math.IsInf(span, 0) || math.IsNaN(span) {
		return 1
	}
	raw := span / float64(max(n, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / mag; {
	case f <= 1:
		return mag
	case f <= 2:
		return 2 * mag
	case f <= 5:
		return 5 * mag
	default:
		return 10 * mag
	}
}

// niceTicks widens [lo, hi] to multiples of a 1-2-5 step and returns the
// ticks from the new lo to the new hi. An empty range gets a unit around
// its value.
func niceTicks(lo, hi float64, n int) (ticks []float64, nlo, nhi float64) {
	if hi < lo {
		lo, hi = hi, lo
	}
	if hi == lo {
		d := math.Max(math.Abs(lo)*0.1, 1)
		if lo >= 0 && lo-d < 0 {
			lo, hi = 0, lo+d
		} else {
			lo, hi = lo-d, hi+d
		}
	}
	step := niceStep(hi-lo, n)
	nlo = math.Floor(lo/step+1e-9) * step
	nhi = math.Ceil(hi/step-1e-9) * step
	for i := 0; ; i++ {
		v := nlo + float64(i)*step
		if v > nhi+step*1e-6 {
			break
		}
		// snap away binary noise (0.30000000000000004)
		v = math.Round(v/step) * step
		ticks = append(ticks, v)
	}
	// A bound that is a multiple of step in decimals may land a rounding
	// error beyond the data in binary (7 x 0.1 = 0.7000000000000001 > 0.7):
	// the axis then ends at the data, which is the same tick within noise.
	nlo, nhi = math.Min(nlo, lo), math.Max(nhi, hi)
	ticks[0], ticks[len(ticks)-1] = nlo, nhi
	return ticks, nlo, nhi
}

// fmtTick renders a tick value of a 1-2-5 axis exactly, in the one unit
// the axis's largest tick (top, by magnitude) calls for, so an axis never
// mixes "5000" and "10k": with top 10000, 2500 is "2.5k"; 0.05 is "0.05";
// with top 3e6, 1000000 is "1M".
func fmtTick(v, step, top float64) string {
	if v == 0 {
		return "0"
	}
	unit, div := "", 1.0
	switch a := math.Abs(top); {
	case a >= 1e6 && step >= 1e5:
		unit, div = "M", 1e6
	case a >= 1e4 && step >= 100:
		unit, div = "k", 1e3
	}
	s, d := v/div, step/div
	decimals := 0
	if d < 1 {
		decimals = int(math.Ceil(-math.Log10(d) - 1e-9))
	}
	out := strconv.FormatFloat(s, 'f', decimals, 64)
	if strings.Contains(out, ".") {
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	return out + unit
}

// axis is a linear axis with round ticks.
type axis struct {
	scale
	ticks []float64
	step  float64
}

// label renders tick v in the axis's one unit.
func (a axis) label(v float64) string {
	top := 0.0
	for _, t := range a.ticks {
		top = math.Max(top, math.Abs(t))
	}
	return fmtTick(v, a.step, top)
}

// newAxis spans [lo, hi] with round ticks, onto [a, b].
func newAxis(lo, hi, a, b float64) axis {
	ticks, nlo, nhi := niceTicks(lo, hi, axisTicks)
	step := 1.0
	if len(ticks) > 1 {
		step = ticks[1] - ticks[0]
	}
	return axis{scale: scale{nlo, nhi, a, b}, ticks: ticks, step: step}
}

// frame draws the title, the plot area, grid, ticks and axis labels. A
// nil xs draws no x ticks (bar charts label their groups).
func frame(sb *strings.Builder, title, xlabel, ylabel string, xs *axis, ys axis) {
	fmt.Fprintf(sb, `<text class="title" x="%d" y="%d" %s>%s</text>`, padLeft, plotTitleY, titleAttrs, html.EscapeString(title))
	fmt.Fprintf(sb, `<rect class="plot-area" x="%d" y="%d" width="%d" height="%d" fill="none" stroke="none"/>`, padLeft, padTop, innerW, innerH)
	for _, v := range ys.ticks {
		y := ys.at(v)
		fmt.Fprintf(sb, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" %s/>`, padLeft, y, padLeft+innerW, y, gridStyle)
		fmt.Fprintf(sb, `<text class="tick y" x="%d" y="%.1f" text-anchor="end" %s>%s</text>`, padLeft-tickLabelOffset, y+4, fontAttrs, ys.label(v))
	}
	if xs != nil {
		for _, v := range xs.ticks {
			x := xs.at(v)
			fmt.Fprintf(sb, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" %s/>`, x, padTop, x, padTop+innerH, gridStyle)
			fmt.Fprintf(sb, `<text class="tick x" x="%.1f" y="%d" text-anchor="middle" %s>%s</text>`, x, padTop+innerH+xTickDrop, fontAttrs, xs.label(v))
		}
	}
	fmt.Fprintf(sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" %s/>`, padLeft, padTop+innerH, padLeft+innerW, padTop+innerH, axisStyle)
	fmt.Fprintf(sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" %s/>`, padLeft, padTop, padLeft, padTop+innerH, axisStyle)
	if xlabel != "" {
		fmt.Fprintf(sb, `<text x="%d" y="%d" text-anchor="middle" %s>%s</text>`, padLeft+innerW/2, xLabelY, fontAttrs, html.EscapeString(xlabel))
	}
	fmt.Fprintf(sb, `<text x="%d" y="%d" text-anchor="middle" transform="rotate(-90 %d %d)" %s>%s</text>`,
		yLabelX, padTop+innerH/2, yLabelX, padTop+innerH/2, fontAttrs, html.EscapeString(ylabel))
}

// legendLayout places legend entries in rows below the plot, wrapping at
// the plot's width; it returns each entry's position and the rows used.
func legendLayout(names []string) (pos [][2]float64, rows int) {
	x, row := float64(padLeft), 0
	for i, n := range names {
		if i == legendMax {
			n = fmt.Sprintf("… %d more", len(names)-legendMax)
		}
		w := legendSwatch + 4 + legendCharW*float64(len([]rune(n))) + 14
		if x+w > plotW-padRight && x > padLeft {
			x, row = padLeft, row+1
		}
		pos = append(pos, [2]float64{x, float64(legendTop + row*legendRow)})
		x += w
		if i == legendMax {
			break
		}
	}
	if len(names) == 0 {
		return nil, 0
	}
	return pos, row + 1
}

// legendHeight is the height the legend of names adds below the plot.
func legendHeight(names []string) int {
	_, rows := legendLayout(names)
	return rows * legendRow
}

// legend lists series names with their colours, below the plot area.
func legend(sb *strings.Builder, names, colours []string) {
	if len(names) == 0 {
		return
	}
	pos, _ := legendLayout(names)
	sb.WriteString(`<g class="legend">`)
	for i, p := range pos {
		n := names[min(i, len(names)-1)]
		colour := colours[min(i, len(colours)-1)]
		if i == legendMax {
			n, colour = fmt.Sprintf("… %d more", len(names)-legendMax), "#999"
		}
		fmt.Fprintf(sb, `<rect x="%.1f" y="%.1f" width="%d" height="%d" fill="%s"/>`, p[0], p[1], legendSwatch, legendSwatch, colour)
		fmt.Fprintf(sb, `<text x="%.1f" y="%.1f" %s>%s</text>`, p[0]+legendSwatch+4, p[1]+9, fontAttrs, html.EscapeString(n))
	}
	sb.WriteString(`</g>`)
}

// openSVG starts a plot of height h; extra are attributes for the svg.
func openSVG(sb *strings.Builder, title string, points, h int, extra string) {
	fmt.Fprintf(sb, svgOpen, plotW, h, plotW, h, points, html.EscapeString(title), extra)
}

// emptyPlot finishes a plot that has nothing to draw, saying why.
func emptyPlot(sb *strings.Builder, title, why string) string {
	fmt.Fprintf(sb, `<text class="title" x="%d" y="%d" %s>%s</text>`, padLeft, plotTitleY, titleAttrs, html.EscapeString(title))
	fmt.Fprintf(sb, noDataText, plotW/2, plotH/2, fontAttrs, html.EscapeString(why))
	sb.WriteString(`</svg>`)
	return sb.String()
}

// lineChart draws series on shared linear axes with round ticks; yFrom0
// anchors y at zero. empty says why a chart without points is empty.
func lineChart(title, xlabel, ylabel string, ss []series, yFrom0 bool, empty string) string {
	var sb strings.Builder
	n := 0
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.name
		for _, p := range s.points {
			n++
			xlo, xhi = math.Min(xlo, p[0]), math.Max(xhi, p[0])
			ylo, yhi = math.Min(ylo, p[1]), math.Max(yhi, p[1])
		}
	}
	if n == 0 {
		openSVG(&sb, title, 0, plotH, "")
		return emptyPlot(&sb, title, empty)
	}
	openSVG(&sb, title, n, plotH+legendHeight(names), "")
	if yFrom0 {
		ylo = math.Min(0, ylo)
	}
	xs := newAxis(xlo, xhi, padLeft, padLeft+innerW)
	ys := newAxis(ylo, yhi, padTop+innerH, padTop)
	frame(&sb, title, xlabel, ylabel, &xs, ys)
	for i, s := range ss {
		var d strings.Builder
		for j, p := range s.points {
			x, y := xs.at(p[0]), ys.at(p[1])
			switch {
			case j == 0:
				fmt.Fprintf(&d, "M%.1f %.1f", x, y)
			case s.step:
				fmt.Fprintf(&d, "H%.1fV%.1f", x, y)
			default:
				fmt.Fprintf(&d, "L%.1f %.1f", x, y)
			}
		}
		dash := ""
		if s.dash {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(&sb, `<path class="series" d="%s" fill="none" stroke="%s" stroke-width="%.1f" opacity="%s" data-n="%d"%s/>`,
			d.String(), colorOf(ss, i), defaultStroke, seriesOpacity, len(s.points), dash)
	}
	colours := make([]string, len(ss))
	for i := range ss {
		colours[i] = colorOf(ss, i)
	}
	legend(&sb, names, colours)
	sb.WriteString(`</svg>`)
	return sb.String()
}

// barGroup is one group of bars (a lane's runs) with a note (its CV).
type barGroup struct {
	name   string
	values []float64
	note   string
}

// barChart draws grouped bars from zero.
func barChart(title, ylabel string, groups []barGroup) string {
	var sb strings.Builder
	n, yhi := 0, 0.0
	for _, g := range groups {
		for _, v := range g.values {
			n++
			yhi = math.Max(yhi, v)
		}
	}
	if n == 0 || yhi <= 0 {
		openSVG(&sb, title, 0, plotH, "")
		return emptyPlot(&sb, title, "no completed run")
	}
	// Group names wrap to their group's width; the chart grows to hold them.
	gw := float64(innerW) / float64(len(groups))
	names := make([][]string, len(groups))
	lines := 1
	for i, g := range groups {
		names[i] = wrapLabel(g.name, int(math.Floor((gw-6)/legendCharW)))
		lines = max(lines, len(names[i]))
	}
	h := plotH + lines*labelLine
	openSVG(&sb, title, n, h, "")
	ys := newAxis(0, yhi, padTop+innerH, padTop)
	frame(&sb, title, "", ylabel, nil, ys)
	fmt.Fprintf(&sb, `<text x="%d" y="%d" text-anchor="middle" %s>%s</text>`, padLeft+innerW/2, h-10, fontAttrs, "run (grouped by lane)")
	for i, g := range groups {
		x0 := padLeft + float64(i)*gw + gw*barGap
		bw := gw * (1 - 2*barGap) / float64(max(len(g.values), 1))
		for j, v := range g.values {
			y := ys.at(v)
			fmt.Fprintf(&sb, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s run %d: %.1f</title></rect>`,
				x0+float64(j)*bw, y, math.Max(bw-1, 1), float64(padTop+innerH)-y, palette[i%len(palette)], html.EscapeString(g.name), j+1, v)
		}
		cx := padLeft + float64(i)*gw + gw/2
		for k, line := range names[i] {
			fmt.Fprintf(&sb, `<text x="%.1f" y="%d" text-anchor="middle" %s>%s</text>`, cx, padTop+innerH+14+k*labelLine, fontAttrs, html.EscapeString(line))
		}
		fmt.Fprintf(&sb, `<text x="%.1f" y="%d" text-anchor="middle" %s>%s</text>`, cx, padTop+innerH+14+len(names[i])*labelLine, fontAttrs, html.EscapeString(g.note))
	}
	sb.WriteString(`</svg>`)
	return sb.String()
}

// intervalRow is one ratio with its interval.
type intervalRow struct {
	label  string
	value  float64
	ci     *evidence.Interval
	signif bool
}

// intervalChart draws ratios of one direction as dots with whiskers
// against a line at 1; higher says whether a ratio above 1 favours the
// candidate (throughputs) or below 1 does (latencies). Ratios of the two
// directions never share a chart.
func intervalChart(title string, higher bool, rows []intervalRow) string {
	var sb strings.Builder
	dir, better := "lower", "below 1"
	if higher {
		dir, better = "higher", "above 1"
	}
	extra := fmt.Sprintf(` data-direction="%s-is-better"`, dir)
	if len(rows) == 0 {
		openSVG(&sb, title, 0, plotH, extra)
		return emptyPlot(&sb, title, "no comparison")
	}
	const labelW = 210
	// Labels wrap to the label column (never into the plot); a row is as
	// tall as its label.
	wrapped := make([][]string, len(rows))
	rowTop := make([]float64, len(rows)+1)
	for i, r := range rows {
		wrapped[i] = wrapLabel(r.label, int(math.Floor((labelW-12)/legendCharW)))
		rowTop[i+1] = rowTop[i] + math.Max(22, float64(len(wrapped[i]))*labelLine+8)
	}
	h := padTop + int(rowTop[len(rows)]) + padBottom
	openSVG(&sb, title, len(rows), h, extra)
	lo, hi := 1.0, 1.0
	for _, r := range rows {
		lo, hi = math.Min(lo, r.value), math.Max(hi, r.value)
		if r.ci != nil {
			lo, hi = math.Min(lo, r.ci.Low), math.Max(hi, r.ci.High)
		}
	}
	xs := newAxis(lo, hi, padLeft+labelW, padLeft+innerW)
	areaH := int(rowTop[len(rows)])
	fmt.Fprintf(&sb, `<text class="title" x="%d" y="%d" %s>%s</text>`, 8, plotTitleY, titleAttrs, html.EscapeString(title))
	fmt.Fprintf(&sb, `<rect class="plot-area" x="%d" y="%d" width="%d" height="%d" fill="none" stroke="none"/>`, padLeft+labelW, padTop, innerW-labelW, areaH)
	for _, v := range xs.ticks {
		x := xs.at(v)
		fmt.Fprintf(&sb, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" %s/>`, x, padTop, x, padTop+areaH, gridStyle)
		fmt.Fprintf(&sb, `<text class="tick x" x="%.1f" y="%d" text-anchor="middle" %s>%s</text>`, x, padTop+areaH+16, fontAttrs, xs.label(v))
	}
	x1 := xs.at(1)
	fmt.Fprintf(&sb, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" %s/>`, x1, padTop, x1, padTop+areaH, refLineStyle)
	fmt.Fprintf(&sb, `<text x="%d" y="%d" text-anchor="middle" %s>candidate / baseline (%s is better)</text>`,
		padLeft+labelW+(innerW-labelW)/2, padTop+areaH+34, fontAttrs, better)
	for i, r := range rows {
		y := float64(padTop) + (rowTop[i]+rowTop[i+1])/2
		top := y - float64(len(wrapped[i])-1)*labelLine/2
		fmt.Fprintf(&sb, `<text class="row-label" x="%d" y="%.1f" %s>`, 8, top+4, fontAttrs)
		for j, line := range wrapped[i] {
			dy := labelLine
			if j == 0 {
				dy = 0
			}
			fmt.Fprintf(&sb, `<tspan x="%d" dy="%d">%s</tspan>`, 8, dy, html.EscapeString(line))
		}
		sb.WriteString(`</text>`)
		colour := "#777"
		if r.signif {
			colour = palette[0]
		}
		if r.ci != nil {
			fmt.Fprintf(&sb, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"/>`, xs.at(r.ci.Low), y, xs.at(r.ci.High), y, colour, whiskerWidth)
		}
		fmt.Fprintf(&sb, `<circle class="ratio" data-direction="%s-is-better" cx="%.1f" cy="%.1f" r="%.1f" fill="%s"><title>%s: %.3f</title></circle>`,
			dir, xs.at(r.value), y, markerRadius, colour, html.EscapeString(r.label), r.value)
	}
	sb.WriteString(`</svg>`)
	return sb.String()
}

// wrapLabel breaks s into lines of at most width characters, at spaces
// where it can, inside a word where it must.
func wrapLabel(s string, width int) []string {
	width = max(width, 8)
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		for len([]rune(word)) > width {
			if line != "" {
				lines, line = append(lines, line), ""
			}
			r := []rune(word)
			lines, word = append(lines, string(r[:width])), string(r[width:])
		}
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) <= width:
			line += " " + word
		default:
			lines, line = append(lines, line), word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
