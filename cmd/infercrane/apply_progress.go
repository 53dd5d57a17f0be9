package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/cupwriter"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/infercrane/infercrane/executor"
)

// progressView renders apply events: as JSON lines (-json), as a live
// display on a terminal, or as plain log lines.
type progressView interface {
	Event(e executor.Event)
	// Close stops the display; nothing may be written after it.
	Close()
}

// jsonView writes every event as one JSON object a line. With a tracker,
// run events carry the time left and the runs done so far, and
// apply_finished is followed by an apply_summary object.
type jsonView struct {
	enc *json.Encoder
	tr  *tracker
}

func newJSONView(w io.Writer, tr *tracker) *jsonView {
	return &jsonView{enc: json.NewEncoder(w), tr: tr}
}

// Event writes e, stamped with the time now when it has none.
func (v *jsonView) Event(e executor.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if v.tr == nil {
		_ = v.enc.Encode(e)
		return
	}
	v.tr.observe(e)
	switch e.Type {
	case executor.EventRunStarted, executor.EventRunProgress, executor.EventRunFinished, executor.EventRunFailed:
		if s, ok := v.tr.eta(); ok {
			s = math.Round(s*10) / 10
			e.ETASeconds = &s
		}
		e.RunsDone = v.tr.runsDone()
	}
	_ = v.enc.Encode(e)
	if e.Type == executor.EventApplyFinished {
		_ = v.enc.Encode(v.tr.summary())
	}
}
func (v *jsonView) Close() {}

// plainView writes one log line per event worth a line, and the summary
// at the end.
type plainView struct {
	w     io.Writer
	start time.Time
	tr    *tracker
}

func newPlainView(w io.Writer, tr *tracker) *plainView {
	if tr == nil {
		tr = newTracker(nil, 1)
	}
	return &plainView{w: w, start: time.Now(), tr: tr}
}

func (v *plainView) Event(e executor.Event) {
	skip := v.tr.observe(e)
	var lines []string
	switch e.Type {
	case executor.EventNodeSkipped:
		lines = []string{skip}
	case executor.EventApplyFinished:
		lines = v.tr.summary().lines()
	case executor.EventRunFinished:
		line := runLine(e, v.tr.runLabel(e))
		if e.TTFTP50Ms > 0 {
			line = strings.TrimSuffix(line, ".") + fmt.Sprintf(", TTFT p50 %s.", fmtMs(e.TTFTP50Ms))
		}
		lines = []string{line + fmt.Sprintf(" %d run(s) done, %s left.", v.tr.runsDone(), v.tr.etaText())}
	default:
		lines = []string{eventLine(e)}
	}
	el := time.Since(v.start).Round(time.Second)
	for _, line := range lines {
		if line != "" {
			fmt.Fprintf(v.w, "[%02d:%02d] %s\n", int(el.Minutes()), int(el.Seconds())%60, line)
		}
	}
}
func (v *plainView) Close() {}

// eventLine is the human sentence of an event ("" for events that only
// move a progress bar).
func eventLine(e executor.Event) string {
	lane := e.Lane
	if e.Key != "" {
		lane = fmt.Sprintf("%s (%s)", e.Lane, e.Key)
	}
	switch e.Type {
	case executor.EventApplyStarted:
		return fmt.Sprintf("Applying: %d lane(s), %d run(s), %s.", e.LanesToRun, e.RunsToDo, e.Message)
	case executor.EventDeploymentReaped:
		return "Reaped: " + e.Message + "."
	case executor.EventReapFailed:
		return "Reap failed: " + e.Error
	case executor.EventLaneDropped:
		return fmt.Sprintf("Dropped lane %s from the state.", lane)
	case executor.EventDeployStarted:
		return fmt.Sprintf("Deploying %s: %s...", e.Deployment, e.Message)
	case executor.EventDeployFinished:
		return fmt.Sprintf("Deployed %s at %s (%.1fs).", e.Deployment, e.Server, e.Elapsed)
	case executor.EventDeployFailed:
		if e.Interrupted {
			return fmt.Sprintf("Deploy of %s interrupted; a re-run deploys it again.", e.Deployment)
		}
		return fmt.Sprintf("Deploy of %s failed: %s", e.Deployment, e.Error)
	case executor.EventLaneStarted:
		return fmt.Sprintf("Lane %s: %s.", lane, e.Message)
	case executor.EventRunFinished:
		return runLine(e, fmt.Sprintf("Run %d/%d", e.Run, e.Runs))
	case executor.EventRunFailed:
		if e.Interrupted {
			return fmt.Sprintf("Run %d of lane %s interrupted; a re-run redoes it.", e.Run, lane)
		}
		return fmt.Sprintf("Run %d of lane %s failed: %s", e.Run, lane, e.Error)
	case executor.EventLaneFinished:
		if e.Error != "" {
			return fmt.Sprintf("Lane %s stopped.", lane)
		}
		return fmt.Sprintf("Lane %s finished.", lane)
	case executor.EventTeardownStarted:
		return fmt.Sprintf("Tearing down %s...", e.Deployment)
	case executor.EventTeardownFinished:
		return fmt.Sprintf("Tore down %s (%.1fs).", e.Deployment, e.Elapsed)
	case executor.EventTeardownFailed:
		return fmt.Sprintf("Teardown of %s failed: %s", e.Deployment, e.Error)
	case executor.EventNote, executor.EventSearchFinished:
		return e.Message
	}
	return ""
}

// runLine is the sentence of a finished run, which label names ("Run
// 2/3", tracker.runLabel).
func runLine(e executor.Event, label string) string {
	lane := e.Lane
	if e.Key != "" {
		lane = fmt.Sprintf("%s (%s)", e.Lane, e.Key)
	}
	return fmt.Sprintf("%s of lane %s: %d/%d requests, %d failed, %.2f req/s, %.0f output tok/s (%.1fs).",
		label, lane, e.Done, e.Total, e.Failed, e.RequestThroughput, e.OutputTokenThroughput, e.Elapsed)
}

// barsView is the live terminal display: a bar of all runs with the time
// left, and one bar per run in progress with its requests, errors and rate;
// log lines print above the bars. mpb draws to the terminal under the
// redacting writer (so it redraws in place rather than scrolling), and
// what it draws goes through that writer. The end of the apply (apply
// finished and the per-lane summary) is written after mpb has stopped, so
// it always comes last and is never lost with a frame mpb did not draw.
type barsView struct {
	p     *mpb.Progress
	cw    *cupwriter.Writer
	out   io.Writer
	plain *plainView
	total *mpb.Bar

	mu      sync.Mutex
	runs    map[string]*runBar
	stopped bool
}

type runBar struct {
	bar *mpb.Bar

	mu      sync.Mutex // never held while calling mpb
	failed  int
	rate    float64
	tokRate float64
	ttftP50 float64
}

func (rb *runBar) stats() string {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	s := fmt.Sprintf("  %d err  %.1f req/s  %.0f tok/s", rb.failed, rb.rate, rb.tokRate)
	if rb.ttftP50 > 0 {
		s += "  TTFT p50 " + fmtMs(rb.ttftP50)
	}
	return s
}

// newBarsView draws to w, which writes to a terminal, perhaps through
// redacting writers (terminalOf finds it).
func newBarsView(w io.Writer, runsToDo int, tr *tracker) *barsView {
	cw := cupwriter.New(w, false)
	if f, ok := terminalOf(w); ok {
		cw.SetTermFd(int(f.Fd()))
	}
	v := &barsView{cw: cw, out: w, runs: map[string]*runBar{}}
	v.p = mpb.New(mpb.WithOutput(w), mpb.WithConsoleWriter(cw), mpb.WithWidth(40),
		mpb.WithRefreshRate(150*time.Millisecond), mpb.WithAutoRefresh())
	v.plain = newPlainView(v.p, tr)
	tr = v.plain.tr
	v.total = v.p.AddBar(int64(max(runsToDo, 1)),
		mpb.PrependDecorators(decor.Name("runs ", decor.WC{W: 6}), decor.CountersNoUnit("%d/%d", decor.WC{W: 8})),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_MMSS), decor.Any(func(decor.Statistics) string { return "  left " + tr.etaText() })),
		mpb.BarPriority(1<<30))
	if runsToDo == 0 {
		v.total.SetTotal(0, true)
	}
	return v
}

func (v *barsView) Event(e executor.Event) {
	if e.Type == executor.EventApplyFinished {
		v.stop()
	}
	v.bars(e)
	v.plain.Event(e)
}

// bars moves the bars for an event.
func (v *barsView) bars(e executor.Event) {
	key := fmt.Sprintf("%s.%d", e.Lane, e.Run)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stopped {
		return
	}
	switch e.Type {
	case executor.EventRunStarted:
		rb := &runBar{}
		label := v.plain.tr.runLabel(e)
		name := e.Key + " " + strings.ToLower(label[:1]) + label[1:]
		rb.bar = v.p.AddBar(int64(max(e.Total, 1)),
			mpb.PrependDecorators(decor.Name(name, decor.WC{W: len(name) + 1, C: decor.DindentRight})),
			mpb.AppendDecorators(decor.CountersNoUnit("%d/%d req"), decor.Any(func(decor.Statistics) string { return rb.stats() })),
			mpb.BarRemoveOnComplete())
		v.runs[key] = rb
	case executor.EventRunProgress:
		if rb := v.runs[key]; rb != nil {
			rb.mu.Lock()
			rb.failed = e.Failed
			if e.Elapsed > 0 {
				rb.rate = float64(e.Done) / e.Elapsed
			}
			rb.tokRate, rb.ttftP50 = e.TokensPerSecond, e.TTFTP50Ms
			rb.mu.Unlock()
			rb.bar.SetCurrent(int64(e.Done))
		}
	case executor.EventRunFinished, executor.EventRunFailed:
		if rb := v.runs[key]; rb != nil {
			if e.Type == executor.EventRunFinished {
				rb.bar.SetTotal(-1, true)
			} else {
				rb.bar.Abort(true)
			}
			delete(v.runs, key)
		}
		if e.Type == executor.EventRunFinished {
			v.total.Increment()
		}
	}
}

func (v *barsView) Close() { v.stop() }

// stop removes the run bars, leaves the bar of all runs as it is, stops
// mpb and writes what mpb held and had not drawn; the plain lines after it
// go straight to the output.
func (v *barsView) stop() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stopped {
		return
	}
	v.stopped = true
	for k, rb := range v.runs {
		rb.bar.Abort(true)
		delete(v.runs, k)
	}
	v.total.Abort(false)
	v.p.Wait()
	// Lines written to mpb since its last frame are in its buffer still.
	_, _ = v.cw.WriteTo(v.out)
	v.plain.w = v.out
}
