package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

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

// jsonView writes every event as one JSON object a line.
type jsonView struct {
	enc *json.Encoder
}

func newJSONView(w io.Writer) *jsonView { return &jsonView{enc: json.NewEncoder(w)} }

// Event writes e, stamped with the time now when it has none.
func (v *jsonView) Event(e executor.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	_ = v.enc.Encode(e)
}
func (v *jsonView) Close() {}

// plainView writes one log line per event worth a line.
type plainView struct {
	w     io.Writer
	start time.Time
}

func newPlainView(w io.Writer) *plainView { return &plainView{w: w, start: time.Now()} }

func (v *plainView) Event(e executor.Event) {
	if line := eventLine(e); line != "" {
		el := time.Since(v.start).Round(time.Second)
		fmt.Fprintf(v.w, "[%02d:%02d] %s\n", int(el.Minutes()), int(el.Seconds())%60, line)
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
	case executor.EventLaneDropped:
		return fmt.Sprintf("Dropped lane %s from the state.", lane)
	case executor.EventDeployStarted:
		return fmt.Sprintf("Deploying %s: %s...", e.Deployment, e.Message)
	case executor.EventDeployFinished:
		return fmt.Sprintf("Deployed %s at %s (%.1fs).", e.Deployment, e.Server, e.Elapsed)
	case executor.EventDeployFailed:
		return fmt.Sprintf("Deploy of %s failed: %s", e.Deployment, e.Error)
	case executor.EventLaneStarted:
		return fmt.Sprintf("Lane %s: %s.", lane, e.Message)
	case executor.EventRunFinished:
		return fmt.Sprintf("Run %d/%d of lane %s: %d/%d requests, %d failed, %.2f req/s, %.0f output tok/s (%.1fs).",
			e.Run, e.Runs, lane, e.Done, e.Total, e.Failed, e.RequestThroughput, e.OutputTokenThroughput, e.Elapsed)
	case executor.EventRunFailed:
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
	case executor.EventNodeSkipped:
		if e.Run > 0 {
			return fmt.Sprintf("Skipped run %d of lane %s: %s.", e.Run, e.Lane, e.Message)
		}
		return ""
	case executor.EventNote:
		return e.Message
	case executor.EventApplyFinished:
		s := fmt.Sprintf("Apply finished in %.1fs: %d run(s) completed, %d failed.", e.Elapsed, e.RunsCompleted, e.RunsFailed)
		if e.Message != "" {
			s += " " + e.Message + "."
		}
		return s
	}
	return ""
}

// barsView is the live terminal display: a bar of all runs with the time
// left, and one bar per run in progress with its requests, errors and rate.
type barsView struct {
	p     *mpb.Progress
	plain *plainView
	total *mpb.Bar

	mu   sync.Mutex
	runs map[string]*runBar
}

type runBar struct {
	bar *mpb.Bar

	mu     sync.Mutex // never held while calling mpb
	failed int
	rate   float64
}

func (rb *runBar) stats() string {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return fmt.Sprintf("  %d err  %.1f req/s", rb.failed, rb.rate)
}

func newBarsView(w io.Writer, runsToDo int) *barsView {
	v := &barsView{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithRefreshRate(150*time.Millisecond), mpb.WithAutoRefresh()), runs: map[string]*runBar{}}
	v.plain = newPlainView(v.p)
	v.total = v.p.AddBar(int64(max(runsToDo, 1)),
		mpb.PrependDecorators(decor.Name("runs ", decor.WC{W: 6}), decor.CountersNoUnit("%d/%d", decor.WC{W: 8})),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_MMSS), decor.Name(" left "), decor.AverageETA(decor.ET_STYLE_MMSS)),
		mpb.BarPriority(1<<30))
	if runsToDo == 0 {
		v.total.SetTotal(0, true)
	}
	return v
}

func (v *barsView) Event(e executor.Event) {
	v.bars(e)
	v.plain.Event(e)
}

// bars moves the bars for an event.
func (v *barsView) bars(e executor.Event) {
	key := fmt.Sprintf("%s.%d", e.Lane, e.Run)
	v.mu.Lock()
	defer v.mu.Unlock()
	switch e.Type {
	case executor.EventRunStarted:
		rb := &runBar{}
		name := fmt.Sprintf("%s run %d/%d", e.Key, e.Run, e.Runs)
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

func (v *barsView) Close() {
	v.mu.Lock()
	for k, rb := range v.runs {
		rb.bar.Abort(true)
		delete(v.runs, k)
	}
	v.mu.Unlock()
	v.total.Abort(false)
	v.p.Wait()
}
