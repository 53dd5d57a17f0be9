package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// The plots are hand-made SVG: self-contained, no scripts, no network.
// Every plot is an <svg class="plot"> whose data-points attribute counts
// the values drawn, so tests (and people) can tell an empty plot.

// Layout, in SVG user units.
const (
	plotW, plotH    = 640, 320
	padLeft         = 64
	padRight        = 16
	padTop          = 32
	padBottom       = 48
	innerW, innerH  = plotW - padLeft - padRight, plotH - padTop - padBottom
	plotTitleY      = 18
	xLabelY         = plotH - 10
	yLabelX         = 14
	tickLabelOffset = 4
	axisTicks       = 5
	legendX         = padLeft + 8
	legendY         = padTop + 8
	legendRow       = 14
	legendSwatch    = 10
	legendMax       = 8
	// maxSeriesPoints bounds the points of one CDF line.
	maxSeriesPoints = 240
	barGap          = 0.15 // fraction of a bar group's width left empty on each side
	markerRadius    = 3.5
	whiskerWidth    = 1.5
	defaultStroke   = 1.8
)

// Styles.
const (
	svgOpen       = `<svg class="plot" role="img" viewBox="0 0 %d %d" width="%d" height="%d" data-points="%d" aria-label="%s">`
	noDataText    = `<text x="%d" y="%d" text-anchor="middle" class="nodata">no data</text>`
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
}

// scale maps [lo, hi] onto [a, b].
type scale struct{ lo, hi, a, b float64 }

func (s scale) at(v float64) float64 {
	if s.hi == s.lo {
		return (s.a + s.b) / 2
	}
	return s.a + (v-s.lo)/(s.hi-s.lo)*(s.b-s.a)
}

// fmtTick renders an axis value compactly.
func fmtTick(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 10000:
		return fmt.Sprintf("%.0fk", v/1000)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return fmt.Sprintf("%.3g", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}

// frame draws the title, axes, grid, ticks and axis labels.
func frame(sb *strings.Builder, title, xlabel, ylabel string, xs, ys scale, xTicks bool) {
	fmt.Fprintf(sb, `<text x="%d" y="%d" %s>%s</text>`, padLeft, plotTitleY, titleAttrs, html.EscapeString(title))
	for i := 0; i <= axisTicks; i++ {
		v := ys.lo + (ys.hi-ys.lo)*float64(i)/axisTicks
		y := ys.at(v)
		fmt.Fprintf(sb, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" %s/>`, padLeft, y, padLeft+innerW, y, gridStyle)
		fmt.Fprintf(sb, `<text x="%d" y="%.1f" text-anchor="end" %s>%s</text>`, padLeft-tickLabelOffset, y+4, fontAttrs, fmtTick(v))
		if xTicks {
			xv := xs.lo + (xs.hi-xs.lo)*float64(i)/axisTicks
			x := xs.at(xv)
			fmt.Fprintf(sb, `<text x="%.1f" y="%d" text-anchor="middle" %s>%s</text>`, x, padTop+innerH+16, fontAttrs, fmtTick(xv))
		}
	}
	fmt.Fprintf(sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" %s/>`, padLeft, padTop+innerH, padLeft+innerW, padTop+innerH, axisStyle)
	fmt.Fprintf(sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" %s/>`, padLeft, padTop, padLeft, padTop+innerH, axisStyle)
	fmt.Fprintf(sb, `<text x="%d" y="%d" text-anchor="middle" %s>%s</text>`, padLeft+innerW/2, xLabelY, fontAttrs, html.EscapeString(xlabel))
	fmt.Fprintf(sb, `<text x="%d" y="%d" text-anchor="middle" transform="rotate(-90 %d %d)" %s>%s</text>`,
		yLabelX, padTop+innerH/2, yLabelX, padTop+innerH/2, fontAttrs, html.EscapeString(ylabel))
}

// legend lists series names with their colours.
func legend(sb *strings.Builder, names []string) {
	for i, n := range names {
		if i == legendMax {
			fmt.Fprintf(sb, `<text x="%d" y="%d" %s>… %d more</text>`, legendX, legendY+i*legendRow+9, fontAttrs, len(names)-legendMax)
			return
		}
		y := legendY + i*legendRow
		fmt.Fprintf(sb, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`, legendX, y, legendSwatch, legendSwatch, palette[i%len(palette)])
		fmt.Fprintf(sb, `<text x="%d" y="%d" %s>%s</text>`, legendX+legendSwatch+4, y+9, fontAttrs, html.EscapeString(n))
	}
}

func openSVG(sb *strings.Builder, title string, points int) {
	fmt.Fprintf(sb, svgOpen, plotW, plotH, plotW, plotH, points, html.EscapeString(title))
}

func emptyPlot(sb *strings.Builder, title string) string {
	fmt.Fprintf(sb, `<text x="%d" y="%d" %s>%s</text>`, padLeft, plotTitleY, titleAttrs, html.EscapeString(title))
	fmt.Fprintf(sb, noDataText, plotW/2, plotH/2)
	sb.WriteString(`</svg>`)
	return sb.String()
}

// lineChart draws series on shared linear axes; yFrom0 anchors y at zero.
func lineChart(title, xlabel, ylabel string, ss []series, yFrom0 bool) string {
	var sb strings.Builder
	n := 0
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.points {
			n++
			xlo, xhi = math.Min(xlo, p[0]), math.Max(xhi, p[0])
			ylo, yhi = math.Min(ylo, p[1]), math.Max(yhi, p[1])
		}
	}
	openSVG(&sb, title, n)
	if n == 0 {
		return emptyPlot(&sb, title)
	}
	if yFrom0 {
		ylo = math.Min(0, ylo)
	}
	xs := scale{xlo, xhi, padLeft, padLeft + innerW}
	ys := scale{ylo, yhi, padTop + innerH, padTop}
	frame(&sb, title, xlabel, ylabel, xs, ys, true)
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.name
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
		fmt.Fprintf(&sb, `<path class="series" d="%s" fill="none" stroke="%s" stroke-width="%.1f" opacity="%s" data-n="%d"/>`,
			d.String(), palette[i%len(palette)], defaultStroke, seriesOpacity, len(s.points))
	}
	legend(&sb, names)
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
	openSVG(&sb, title, n)
	if n == 0 || yhi <= 0 {
		return emptyPlot(&sb, title)
	}
	ys := scale{0, yhi * 1.1, padTop + innerH, padTop}
	frame(&sb, title, "run (grouped by lane)", ylabel, scale{}, ys, false)
	gw := float64(innerW) / float64(len(groups))
	for i, g := range groups {
		x0 := padLeft + float64(i)*gw + gw*barGap
		bw := gw * (1 - 2*barGap) / float64(max(len(g.values), 1))
		for j, v := range g.values {
			y := ys.at(v)
			fmt.Fprintf(&sb, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s run %d: %.1f</title></rect>`,
				x0+float64(j)*bw, y, math.Max(bw-1, 1), float64(padTop+innerH)-y, palette[i%len(palette)], html.EscapeString(g.name), j+1, v)
		}
		cx := padLeft + float64(i)*gw + gw/2
		fmt.Fprintf(&sb, `<text x="%.1f" y="%d" text-anchor="middle" %s>%s</text>`, cx, padTop+innerH+14, fontAttrs, html.EscapeString(g.name))
		fmt.Fprintf(&sb, `<text x="%.1f" y="%d" text-anchor="middle" %s>%s</text>`, cx, padTop+innerH+28, fontAttrs, html.EscapeString(g.note))
	}
	sb.WriteString(`</svg>`)
	return sb.String()
}

// intervalRow is one ratio with its interval.
type intervalRow struct {
	label  string
	value  float64
	ci     *Interval
	signif bool
}

// intervalChart draws ratios as dots with whiskers against a line at 1.
func intervalChart(title string, rows []intervalRow) string {
	var sb strings.Builder
	openSVG(&sb, title, len(rows))
	if len(rows) == 0 {
		return emptyPlot(&sb, title)
	}
	lo, hi := 1.0, 1.0
	for _, r := range rows {
		lo, hi = math.Min(lo, r.value), math.Max(hi, r.value)
		if r.ci != nil {
			lo, hi = math.Min(lo, r.ci.Low), math.Max(hi, r.ci.High)
		}
	}
	pad := (hi - lo) * 0.1
	const labelW = 230
	xs := scale{lo - pad, hi + pad, padLeft + labelW, padLeft + innerW}
	rowH := float64(innerH) / float64(len(rows))
	fmt.Fprintf(&sb, `<text x="%d" y="%d" %s>%s</text>`, padLeft, plotTitleY, titleAttrs, html.EscapeString(title))
	x1 := xs.at(1)
	fmt.Fprintf(&sb, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" %s/>`, x1, padTop, x1, padTop+innerH, refLineStyle)
	for i := 0; i <= axisTicks; i++ {
		v := xs.lo + (xs.hi-xs.lo)*float64(i)/axisTicks
		fmt.Fprintf(&sb, `<text x="%.1f" y="%d" text-anchor="middle" %s>%s</text>`, xs.at(v), padTop+innerH+16, fontAttrs, fmtTick(v))
	}
	fmt.Fprintf(&sb, `<text x="%d" y="%d" text-anchor="middle" %s>ratio over the baseline (1 = equal)</text>`, padLeft+labelW+(innerW-labelW)/2, xLabelY, fontAttrs)
	for i, r := range rows {
		y := float64(padTop) + rowH*(float64(i)+0.5)
		fmt.Fprintf(&sb, `<text x="%d" y="%.1f" %s>%s</text>`, 8, y+4, fontAttrs, html.EscapeString(r.label))
		colour := "#777"
		if r.signif {
			colour = palette[0]
		}
		if r.ci != nil {
			fmt.Fprintf(&sb, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"/>`, xs.at(r.ci.Low), y, xs.at(r.ci.High), y, colour, whiskerWidth)
		}
		fmt.Fprintf(&sb, `<circle class="ratio" cx="%.1f" cy="%.1f" r="%.1f" fill="%s"><title>%s: %.3f</title></circle>`, xs.at(r.value), y, markerRadius, colour, html.EscapeString(r.label), r.value)
	}
	sb.WriteString(`</svg>`)
	return sb.String()
}
