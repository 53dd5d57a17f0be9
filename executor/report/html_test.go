package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner"
)

// chromium finds Debian's chromium (or another Chrome) on PATH. Without
// one the test fails when INFERCRANE_REQUIRE_CHROMIUM or CI is set (.ci/run
// sets it after installing chromium, so CI can never pass by skipping the
// layout checks), and skips loudly otherwise.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium binary on PATH for the headless HTML test. Install it with scripts/ci-deps-report.sh (apt-get install -y chromium)."
	if os.Getenv("INFERCRANE_REQUIRE_CHROMIUM") != "" || os.Getenv("CI") != "" {
		t.Fatal(msg + " INFERCRANE_REQUIRE_CHROMIUM or CI is set, so this is a failure, not a skip.")
	}
	t.Skip("SKIPPING THE HEADLESS HTML TEST: " + msg)
	return ""
}

// runChromium runs headless Chromium with a private profile and returns stdout.
func runChromium(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a stuck browser, not a slow one: at load average 14 the test took 55 s
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-background-networking", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// layoutScript is added to a copy of the report (the report itself has no
// scripts). In the laid-out page it checks, with screen geometry
// (getBoundingClientRect, so CSS transforms count):
//   - every plot's marks (lines, bars, ratio dots) lie inside its plot area,
//     and its legend overlaps neither the plot area nor any mark;
//   - every axis's tick labels are round: evenly spaced multiples of 1, 2 or
//     5 times a power of ten, labelled exactly;
//   - the per-lane grid has one row per lane with the same number of panels,
//     each column at the same x in every row;
//   - every ratio chart states its direction and holds only ratios of it;
//   - the summary says what was screened, what passed and what is incomplete.
//
// It writes the problems found (JSON) and what it checked on <body>.
const layoutScript = `<script>
(function () {
  const problems = [];
  const r = el => el.getBoundingClientRect();
  const overlap = (a, b) => Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left)) *
                            Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top));
  let legends = 0, marks = 0, axes = 0, ratioCharts = 0;
  const parseTick = s => { const m = /^(-?[0-9.]+)([kM]?)$/.exec(s.trim()); if (!m) return NaN;
    return parseFloat(m[1]) * (m[2] === 'k' ? 1e3 : m[2] === 'M' ? 1e6 : 1); };
  const roundStep = d => { const e = Math.pow(10, Math.floor(Math.log10(d) + 1e-9)), f = d / e;
    return [1, 2, 5, 10].some(x => Math.abs(f - x) < 1e-6); };
  for (const svg of document.querySelectorAll('svg.plot')) {
    const name = svg.getAttribute('aria-label');
    const area = svg.querySelector('rect.plot-area');
    const ms = [...svg.querySelectorAll('path.series, rect.bar, circle.ratio')];
    if (ms.length && !area) problems.push(name + ': marks but no plot area');
    const A = area && r(area);
    for (const m of ms) {
      marks++;
      const b = r(m);
      if (A && (b.left < A.left - 3 || b.right > A.right + 3 || b.top < A.top - 3 || b.bottom > A.bottom + 3))
        problems.push(name + ': a mark lies outside the plot area');
    }
    const lg = svg.querySelector('g.legend');
    if (lg) {
      legends++;
      const L = r(lg);
      if (A && overlap(L, A) > 0) problems.push(name + ': the legend overlaps the plot area');
      for (const m of ms) if (overlap(L, r(m)) > 0) { problems.push(name + ': the legend covers a plotted mark'); break; }
      const S = r(svg);
      if (L.bottom > S.bottom + 1 || L.right > S.right + 1) problems.push(name + ': the legend is cut off');
    }
    for (const cls of ['x', 'y']) {
      const vals = [...svg.querySelectorAll('text.tick.' + cls)].map(t => parseTick(t.textContent));
      if (vals.length === 0) continue;
      axes++;
      if (vals.some(isNaN)) { problems.push(name + ': unreadable ' + cls + ' tick ' + vals); continue; }
      const sorted = [...vals].sort((a, b) => a - b);
      if (sorted.length < 3) problems.push(name + ': only ' + sorted.length + ' ' + cls + ' ticks');
      const units = new Set([...svg.querySelectorAll('text.tick.' + cls)].map(t => t.textContent.trim()).filter(s => s !== '0').map(s => /[kM]$/.test(s) ? s.slice(-1) : 'plain'));
      if (units.size > 1) problems.push(name + ': ' + cls + ' ticks mix formats (' + [...svg.querySelectorAll('text.tick.' + cls)].map(t => t.textContent).join(' ') + ')');
      const d = sorted[1] - sorted[0];
      if (!(d > 0) || !roundStep(d)) problems.push(name + ': ' + cls + ' tick step ' + d + ' is not 1, 2 or 5 x 10^k: ' + sorted);
      for (let i = 0; i < sorted.length; i++) {
        const q = sorted[i] / d;
        if (Math.abs(q - Math.round(q)) > 1e-6) { problems.push(name + ': ' + cls + ' tick ' + sorted[i] + ' is not a multiple of ' + d); break; }
        if (i > 0 && Math.abs(sorted[i] - sorted[i - 1] - d) > d * 1e-6) { problems.push(name + ': uneven ' + cls + ' ticks ' + sorted); break; }
      }
    }
    const dir = svg.getAttribute('data-direction');
    if (dir || svg.querySelector('circle.ratio')) {
      ratioCharts++;
      const words = dir === 'higher-is-better' ? 'higher is better' : dir === 'lower-is-better' ? 'lower is better' : null;
      if (!words || !name.includes(words)) problems.push(name + ': a ratio chart without its direction in the title');
      for (const c of svg.querySelectorAll('circle.ratio'))
        if (c.getAttribute('data-direction') !== dir) { problems.push(name + ': mixes higher- and lower-is-better ratios'); break; }
    }
  }
  // The per-lane grid: panels between lane headings, each in the same
  // column and the same line (of those a lane's panels wrap into) in every
  // lane, none on another.
  const rows = []; let cur = null;
  for (const el of document.querySelectorAll('.lanes > *')) {
    if (el.classList.contains('lanehead')) { cur = []; rows.push(cur); }
    else if (el.classList.contains('panel') && cur) { const b = r(el); cur.push({x: Math.round(b.left), top: Math.round(b.top), b: b}); }
  }
  for (const row of rows) { const tops = [...new Set(row.map(p => p.top))].sort((a, b) => a - b); row.forEach(p => p.line = tops.indexOf(p.top)); }
  if (rows.length === 0) problems.push('no per-lane rows');
  for (const row of rows) {
    if (row.length !== rows[0].length) problems.push('a lane row has ' + row.length + ' panels, the first ' + rows[0].length);
    row.forEach((p, i) => { if (rows[0][i] && (Math.abs(p.x - rows[0][i].x) > 1 || p.line !== rows[0][i].line))
      problems.push('panel ' + i + ' of a lane is at x=' + p.x + ' on line ' + p.line + ', not x=' + rows[0][i].x + ' on line ' + rows[0][i].line); });
    for (let i = 0; i < row.length; i++) for (let j = i + 1; j < row.length; j++)
      if (overlap(row[i].b, row[j].b) > 1) problems.push('panels ' + i + ' and ' + j + ' of a lane overlap');
  }
  // Nothing lies outside the window: no element's box reaches past its
  // right edge and the page does not scroll sideways.
  const vw = document.documentElement.clientWidth;
  let boxes = 0;
  for (const el of document.body.querySelectorAll('*')) {
    if (el.closest('script')) continue;
    boxes++;
    const b = r(el);
    if (b.width > 0 && b.right > vw + 1) { problems.push('outside the ' + vw + ' px window: <' + el.tagName.toLowerCase() + (el.getAttribute('aria-label') ? ' ' + el.getAttribute('aria-label') : el.className && el.className.baseVal === undefined ? ' class=' + el.className : '') + '> reaches x=' + Math.round(b.right)); break; }
  }
  if (document.documentElement.scrollWidth > vw + 1) problems.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' px wide in a ' + vw + ' px window');
  // Every text is at least minText px as rendered (an SVG's text scaled by
  // the SVG's rendered width over its viewBox's).
  const minText = 10;
  let texts = 0, smallest = 1e9;
  for (const svg of document.querySelectorAll('svg.plot')) {
    const vb = svg.viewBox.baseVal, scale = vb && vb.width ? r(svg).width / vb.width : 1;
    for (const t of svg.querySelectorAll('text')) {
      texts++;
      const px = parseFloat(t.getAttribute('font-size') || getComputedStyle(t).fontSize) * scale;
      smallest = Math.min(smallest, px);
      if (px < minText - 0.05) { problems.push(svg.getAttribute('aria-label') + ': text "' + t.textContent + '" renders at ' + px.toFixed(1) + ' px, under ' + minText); break; }
    }
  }
  for (const el of document.body.querySelectorAll('p, li, td, th, h1, h2, h3, code, footer, .caption, .lanehead')) {
    texts++;
    const px = parseFloat(getComputedStyle(el).fontSize);
    smallest = Math.min(smallest, px);
    if (px < minText - 0.05) { problems.push('<' + el.tagName.toLowerCase() + '> text renders at ' + px + ' px, under ' + minText); break; }
  }
  // No label runs into a plot: every text of a plot (titles, ticks, axis
  // and row labels) stays off its plot area, but annotations drawn on the
  // data on purpose (class annotation).
  let labels = 0;
  for (const svg of document.querySelectorAll('svg.plot')) {
    const area = svg.querySelector('rect.plot-area');
    if (!area) continue;
    const A = r(area);
    for (const t of svg.querySelectorAll('text')) {
      if (t.closest('g.legend') || t.classList.contains('annotation')) continue;
      labels++;
      if (overlap(r(t), A) > 2) { problems.push(svg.getAttribute('aria-label') + ': the label "' + t.textContent + '" runs into the plot area'); break; }
    }
  }
  // Nor into another label: no two texts of a plot overlap.
  for (const svg of document.querySelectorAll('svg.plot')) {
    const ts = [...svg.querySelectorAll('text')].map(t => [t, r(t)]);
    outer: for (let i = 0; i < ts.length; i++) for (let j = i + 1; j < ts.length; j++)
      if (overlap(ts[i][1], ts[j][1]) > 2) { problems.push(svg.getAttribute('aria-label') + ': the labels "' + ts[i][0].textContent + '" and "' + ts[j][0].textContent + '" overlap'); break outer; }
  }
  const sum = document.getElementById('summary');
  for (const w of ['Screened:', 'Passed:', 'Incomplete:'])
    if (!sum || !sum.textContent.includes(w)) problems.push('the summary lacks ' + w);
  const b = document.body;
  b.setAttribute('data-problems', JSON.stringify(problems));
  b.setAttribute('data-checked', JSON.stringify({legends, marks, axes, ratioCharts, rows: rows.length, panels: rows.length ? rows[0].length : 0,
    boxes, texts, labels, smallestText: Math.floor(smallest * 10), viewport: vw}));
})();
</script></body>`

// multiLaneInput is the fixture screen with a second shape: four lanes
// (two models x two shapes), three runs each, with server gauges scraped
// over every run.
func multiLaneInput() Input {
	in := fixtureInputRuns(24, 16, 3)
	base := append([]*planner.Lane(nil), in.Plan.Lanes...)
	for _, l := range base {
		c := *l
		c.ID, c.Shape, c.Key = l.ID[:4]+"9999", "long", "s/"+l.Model+"/long/l40s"
		c.Inputs.InputTokens = 1024
		in.Plan.Lanes = append(in.Plan.Lanes, &c)
		for _, r := range in.Runs[l.ID] {
			r2 := r
			r2.Records = makeRecords(24, 16, 80+float64(r.Run), 7, 0.3, nil)
			r2.RecordsFile = "runs/" + c.ID + "/" + strconv.Itoa(r.Run) + ".jsonl"
			in.Runs[c.ID] = append(in.Runs[c.ID], r2)
		}
	}
	for id, runs := range in.Runs {
		for i := range runs {
			runs[i].ServerSeries = fakeGauges(runs[i].Run)
		}
		in.Runs[id] = runs
	}
	return in
}

// fakeGauges are server gauges over a 0.3 s run: requests running rising
// to 4, a short queue, KV-cache usage up to 60%. (The report only draws
// them; executor's tests scrape real ones from the simulated engine.)
func fakeGauges(run int) []loadgen.MetricSample {
	var out []loadgen.MetricSample
	for i := 0; i <= 12; i++ {
		t := float64(i) * 0.025
		out = append(out, loadgen.MetricSample{T: t, Values: map[string]float64{
			"vllm:num_requests_running": math.Min(4, float64(i)),
			"vllm:num_requests_waiting": float64((i + run) % 3),
			"vllm:kv_cache_usage_perc":  0.6 * math.Sin(math.Pi*float64(i)/12),
		}})
	}
	return out
}

// TestHTMLLayoutInHeadlessChromium renders a four-lane report in headless
// Chromium and asserts its layout (see layoutScript): legends never cover
// data, ticks are round, one row per lane with the same panels in the same
// columns, every comparison states its direction, and a summary on top. It
// checks that the checker catches a legend moved onto the data, and keeps
// a screenshot as a test artifact.
func TestHTMLLayoutInHeadlessChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	// Model block names as long as real ones, so the ratio charts' row
	// labels are longer than their label column.
	in := multiLaneInput()
	long := map[string]string{"small": "qwen3_0_6b_instruct_2507_fp8", "big": "qwen3_1_7b_instruct_2507_fp8"}
	for _, l := range in.Plan.Lanes {
		l.Model = long[l.Model]
	}
	in.Plan.Screens[0].Baseline = long[in.Plan.Screens[0].Baseline]
	writeStateFixtureOf(t, dir, in)
	oc, err := Generate(dir, Options{Formats: []string{FormatHTML}, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	page := oc.Files[0]
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src), "<script") || regexp.MustCompile(`(src|href)="https?:`).Match(src) {
		t.Fatal("the report must be self-contained: no scripts, nothing fetched")
	}
	check := func(html string, width int) (problems []string, checked map[string]int) {
		probe := filepath.Join(t.TempDir(), "probe.html")
		if err := os.WriteFile(probe, []byte(strings.Replace(html, "</body>", layoutScript, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		dom := runChromium(t, bin, fmt.Sprintf("--window-size=%d,4000", width), "--hide-scrollbars", "--dump-dom", "file://"+probe)
		body := regexp.MustCompile(`<body[^>]*>`).FindString(dom)
		get := func(name string) string {
			m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(body)
			if m == nil {
				t.Fatalf("the layout script did not run (no %s on <body>): %s", name, body)
			}
			return strings.ReplaceAll(m[1], "&quot;", `"`)
		}
		if err := json.Unmarshal([]byte(get("data-problems")), &problems); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(get("data-checked")), &checked); err != nil {
			t.Fatal(err)
		}
		return problems, checked
	}
	// A wide window and a laptop's 1,400 px one.
	for _, width := range []int{2600, 1400} {
		problems, checked := check(string(src), width)
		t.Logf("layout checks at %d px: %v", width, checked)
		for _, p := range problems {
			t.Errorf("layout at %d px: %s", width, p)
		}
		// The checks must have had something to check: 4 lanes x 5 panels,
		// the legends of the CDFs and the time series, axes, both ratio
		// charts, every element, every text and every plot's labels.
		if checked["rows"] != 4 || checked["panels"] != 5 || checked["legends"] < 3+4*5 || checked["axes"] < 30 || checked["ratioCharts"] != 2 || checked["marks"] < 50 ||
			checked["boxes"] < 500 || checked["texts"] < 300 || checked["labels"] < 200 || checked["viewport"] != width {
			t.Errorf("the layout checks at %d px covered too little: %v", width, checked)
		}
	}
	// A screen of capacity searches: its load, goodput and Pareto charts
	// and its search lanes' panels hold to the same rules.
	capIn := capacityInput()
	capEvs, err := BuildEvidence(capIn)
	if err != nil {
		t.Fatal(err)
	}
	var capPage bytes.Buffer
	if err := WriteHTML(&capPage, capEvs[0], screenRecords(&capIn, capEvs[0])); err != nil {
		t.Fatal(err)
	}
	capProblems, capChecked := check(capPage.String(), 1400)
	t.Logf("layout checks of the capacity screen at 1400 px: %v", capChecked)
	for _, p := range capProblems {
		t.Errorf("capacity screen at 1400 px: %s", p)
	}
	if capChecked["rows"] != 3 || capChecked["marks"] < 20 || capChecked["labels"] < 100 {
		t.Errorf("the capacity screen's checks covered too little: %v", capChecked)
	}
	capFile := filepath.Join(t.TempDir(), "capacity.html")
	if err := os.WriteFile(capFile, capPage.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	runChromium(t, bin, "--hide-scrollbars", "--window-size=1400,3000", "--screenshot="+artifactPath(t, "capacity-screenshot.png"), "file://"+capFile)
	// Negative controls: each check must catch what it is for.
	for _, c := range []struct{ css, want string }{
		{"g.legend{transform:translate(0px,-150px)}", "the legend covers a plotted mark"},
		{".lanes{grid-template-columns:repeat(5,minmax(300px,440px))}", "renders at"},   // the old grid: 6 px text
		{".lanes{grid-template-columns:repeat(5,560px)}", "outside the 1400 px window"}, // the old grid's fifth column
		{"svg.plot text.tick{transform:translate(0px,-30px)}", "runs into the plot area"},
	} {
		moved := strings.Replace(string(src), "</style>", c.css+"</style>", 1)
		if bad, _ := check(moved, 1400); !strings.Contains(strings.Join(bad, "\n"), c.want) {
			t.Errorf("with %s the checker missed %q: %v", c.css, c.want, bad)
		}
	}

	shot := artifactPath(t, "report-screenshot.png")
	runChromium(t, bin, "--hide-scrollbars", "--window-size=1400,4200", "--screenshot="+shot, "file://"+page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	coloured := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			// the first series colour, #1f77b4, give or take anti-aliasing
			if near(r>>8, 0x1f) && near(g>>8, 0x77) && near(b>>8, 0xb4) {
				coloured++
			}
		}
	}
	if coloured < 200 {
		t.Errorf("the screenshot shows only %d pixels of the plot colour; the plots did not paint", coloured)
	}
	t.Logf("screenshot of the HTML report kept at %s", shot)
}

// TestHTMLRendersEveryPlot: every plot of the two-lane fixture has data,
// and with Chromium every one lays out marks.
func TestHTMLRendersEveryPlot(t *testing.T) {
	_, oc := generateFixture(t, Options{Formats: []string{FormatHTML}})
	src, err := os.ReadFile(oc.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	svgs := regexp.MustCompile(`<svg [^>]*class="plot"[^>]*>`).FindAllString(string(src), -1)
	lanes := 2
	want := 4 + 2 + 5*lanes // 3 CDFs and throughput bars, 2 ratio charts, 5 panels per lane
	if len(svgs) != want {
		t.Fatalf("%d plots, want %d", len(svgs), want)
	}
	for _, tag := range svgs {
		label := regexp.MustCompile(`aria-label="([^"]*)"`).FindStringSubmatch(tag)[1]
		n, _ := strconv.Atoi(regexp.MustCompile(`data-points="(\d+)"`).FindStringSubmatch(tag)[1])
		scraped := strings.HasPrefix(label, "Server requests") || strings.HasPrefix(label, "KV-cache")
		switch {
		case scraped && n != 0:
			t.Errorf("plot %q has data the fixture never scraped", label)
		case !scraped && n <= 0:
			t.Errorf("plot %q has no data", label)
		}
	}
	if !strings.Contains(string(src), "not scraped: the server exposes no /metrics") {
		t.Error("server panels without samples do not say why they are empty")
	}
}

func near(v, want uint32) bool { return v+24 >= want && v <= want+24 }

// artifactPath is where a test keeps a file for people to look at:
// $INFERCRANE_ARTIFACTS when set, else $TMPDIR/infercrane-test-artifacts.
func artifactPath(t *testing.T, name string) string {
	dir := os.Getenv("INFERCRANE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "infercrane-test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, _ := filepath.Abs(filepath.Join(dir, name))
	fmt.Fprintf(os.Stderr, "report test artifact: %s\n", p)
	return p
}
