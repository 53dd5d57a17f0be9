package report

import (
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium finds Debian's chromium (or another Chrome) on PATH.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("SKIPPING THE HEADLESS HTML TEST: no chromium binary on PATH. Install it with scripts/ci-deps-report.sh (apt-get install -y chromium).")
	return ""
}

// runChromium runs headless Chromium with a private profile and returns stdout.
func runChromium(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
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

// measureScript is added to a copy of the report (the report itself has no
// scripts): it stamps every plot with the size of what Chromium laid out
// for its marks, so the dumped DOM shows whether each plot really rendered.
const measureScript = `<script>
for (const svg of document.querySelectorAll('svg.plot')) {
  let marks = 0, area = 0;
  for (const el of svg.querySelectorAll('path.series, rect.bar, circle.ratio')) {
    const b = el.getBBox();
    if (b.width > 0 || b.height > 0) { marks++; area += Math.max(b.width, 1) * Math.max(b.height, 1); }
  }
  svg.setAttribute('data-rendered-marks', marks);
  svg.setAttribute('data-rendered-area', Math.round(area));
}
</script></body>`

// TestHTMLRendersInHeadlessChromium loads the HTML report in headless
// Chromium, checks that every plot has data and laid-out marks, and keeps
// a screenshot as a test artifact.
func TestHTMLRendersInHeadlessChromium(t *testing.T) {
	bin := chromium(t)
	_, oc := generateFixture(t, Options{Formats: []string{FormatHTML}})
	page := oc.Files[0]
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src), "<script") || regexp.MustCompile(`(src|href)="https?:`).Match(src) {
		t.Fatal("the report must be self-contained: no scripts, nothing fetched")
	}
	probe := filepath.Join(t.TempDir(), "probe.html")
	if err := os.WriteFile(probe, []byte(strings.Replace(string(src), "</body>", measureScript, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := runChromium(t, bin, "--dump-dom", "file://"+probe)

	svgs := regexp.MustCompile(`<svg [^>]*class="plot"[^>]*>`).FindAllString(dom, -1)
	lanes := 2
	want := 4 + 1 + 2*lanes // 3 CDFs, throughput bars, ratios, 2 time series per lane
	if len(svgs) != want {
		t.Fatalf("%d plots in the DOM, want %d", len(svgs), want)
	}
	attr := func(tag, name string) int {
		m := regexp.MustCompile(name + `="(\d+)"`).FindStringSubmatch(tag)
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	for _, tag := range svgs {
		label := regexp.MustCompile(`aria-label="([^"]*)"`).FindStringSubmatch(tag)[1]
		if attr(tag, "data-points") <= 0 {
			t.Errorf("plot %q has no data", label)
		}
		if attr(tag, "data-rendered-marks") <= 0 || attr(tag, "data-rendered-area") <= 0 {
			t.Errorf("plot %q rendered nothing (%s)", label, tag)
		}
	}

	shot := artifactPath(t, "report-screenshot.png")
	runChromium(t, bin, "--hide-scrollbars", "--window-size=1400,3200", "--screenshot="+shot, "file://"+page)
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
