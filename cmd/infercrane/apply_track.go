package main

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/planner"
)

// tracker follows an apply's events against its plan: what each lane has
// done and lost, which deployments failed, and how long the rest should
// take. The time left starts from the plan's per-run and start-up
// estimates and is rescaled by the ratio of measured to estimated times
// as runs and deploys finish.
type tracker struct {
	mu    sync.Mutex
	now   func() time.Time
	start time.Time
	par   int
	lanes map[string]*laneTrack
	order []string // lane IDs in plan order
	deps  map[string]*depTrack
	// Estimated and measured seconds of the finished runs and deploys.
	estRuns, measRuns      float64
	finishedRuns           int
	estDeploys, measDeploy float64
	finished               *executor.Event // apply_finished, once seen
	// interrupted is set by the first run or deploy the interruption cut
	// short.
	interrupted bool
}

// laneTrack is one lane's progress.
type laneTrack struct {
	id, key, deployment string
	runsToDo            int
	estRun              float64 // estimated seconds of one run; 0 unknown
	done, failedRuns    int
	notRun              int // runs skipped
	failedRequests      int
	requests            int
	outTokens           int64
	windowSeconds       float64   // the finished runs' measurement windows
	ttftP50s            []float64 // per finished run
	running             *runTrack
	lastErr             string
	notRunWhy           string
	// finished is set when the lane ended without error: a capacity
	// search may stop before (or after) the points the plan expected.
	finished bool
	// For a capacity search, runsToDo is the points the plan expects it
	// to run (not its max_points, which it may not need); atMost is the
	// most it runs, pointsDone the points the state had before and
	// expected the points the plan expects in all.
	search, decided              bool
	atMost, pointsDone, expected int
}

// runTrack is the run in progress on a lane.
type runTrack struct {
	run                 int
	started             time.Time
	done, total, failed int
	tokPerSec, ttftP50  float64
}

// depTrack is one deployment's state.
type depTrack struct {
	id, what   string
	estStartup float64
	state      string // "", "deploying", "up", "failed", "down"
	started    time.Time
	err        string
}

// newTracker prepares the tracking of plan p's work at parallelism par.
func newTracker(p *planner.Plan, par int) *tracker {
	t := &tracker{now: time.Now, start: time.Now(), par: max(par, 1), lanes: map[string]*laneTrack{}, deps: map[string]*depTrack{}}
	if p == nil {
		return t
	}
	for _, l := range p.Lanes {
		if !l.Work() {
			continue
		}
		lt := &laneTrack{id: l.ID, key: l.Key, deployment: l.Deployment, runsToDo: l.ExpectedRuns(),
			search: l.Search != nil, atMost: l.Runs}
		if l.Search != nil {
			lt.pointsDone = len(l.Search.Done)
			lt.expected = lt.pointsDone + lt.runsToDo
		}
		if l.Estimate.Available {
			lt.estRun = l.Estimate.RunSeconds
		}
		t.lanes[l.ID] = lt
		t.order = append(t.order, l.ID)
		d := t.deps[l.Deployment]
		if d == nil {
			d = &depTrack{id: l.Deployment, what: fmt.Sprintf("%s on %s, executor %s", l.Inputs.ModelID, l.Inputs.GPUType, l.Inputs.ExecutorType)}
			t.deps[l.Deployment] = d
		}
		if l.Inputs.ExecutorType != "sim" { // the embedded engine starts at once
			d.estStartup += l.Estimate.StartupSeconds
		}
	}
	return t
}

// lane returns the track of lane id, adding one for a lane the plan did
// not announce (so views work without a plan, as in tests).
func (t *tracker) lane(e executor.Event) *laneTrack {
	lt := t.lanes[e.Lane]
	if lt == nil {
		lt = &laneTrack{id: e.Lane, key: e.Key, deployment: e.Deployment, runsToDo: e.Runs}
		t.lanes[e.Lane] = lt
		t.order = append(t.order, e.Lane)
	}
	if lt.key == "" {
		lt.key = e.Key
	}
	return lt
}

func (t *tracker) dep(id string) *depTrack {
	d := t.deps[id]
	if d == nil {
		d = &depTrack{id: id}
		t.deps[id] = d
	}
	return d
}

// observe updates the tracker with e and returns the sentence a skipped
// node gets instead of its internal reason ("" when nothing is worth
// saying: a lane's later runs after the first skip).
func (t *tracker) observe(e executor.Event) (skipLine string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	when := e.Time
	if when.IsZero() {
		when = t.now()
	}
	switch e.Type {
	case executor.EventApplyStarted:
		t.start = when
	case executor.EventDeployStarted:
		d := t.dep(e.Deployment)
		d.state, d.started = "deploying", when
		if d.what == "" {
			d.what = e.Message
		}
	case executor.EventDeployFinished:
		d := t.dep(e.Deployment)
		d.state = "up"
		if d.estStartup > 0 && e.Elapsed > 0 {
			t.estDeploys += d.estStartup
			t.measDeploy += e.Elapsed
		}
	case executor.EventDeployFailed:
		d := t.dep(e.Deployment)
		if e.Interrupted {
			d.state = "interrupted"
			t.interrupted = true
			return ""
		}
		d.state, d.err = "failed", e.Error
		// The runner's error starts "deployment ID (model) on executor T: ";
		// the summary names the deployment itself.
		if rest, ok := strings.CutPrefix(e.Error, "deployment "+e.Deployment+" "); ok {
			if _, after, ok := strings.Cut(rest, ": "); ok {
				d.err = after
			}
		}
	case executor.EventTeardownFinished, executor.EventTeardownFailed:
		if d := t.dep(e.Deployment); d.state != "failed" {
			d.state = "down"
		}
	case executor.EventRunStarted:
		lt := t.lane(e)
		lt.running = &runTrack{run: e.Run, started: when, total: e.Total}
	case executor.EventRunProgress:
		lt := t.lane(e)
		if lt.running == nil {
			lt.running = &runTrack{run: e.Run, started: when.Add(-time.Duration(e.Elapsed * float64(time.Second))), total: e.Total}
		}
		r := lt.running
		r.done, r.total, r.failed = e.Done, e.Total, e.Failed
		if e.TokensPerSecond > 0 {
			r.tokPerSec = e.TokensPerSecond
		}
		if e.TTFTP50Ms > 0 {
			r.ttftP50 = e.TTFTP50Ms
		}
	case executor.EventRunFinished:
		lt := t.lane(e)
		lt.running = nil
		lt.done++
		lt.failedRequests += e.Failed
		lt.requests += e.Total
		lt.outTokens += e.OutputTokens
		// Throughput per measurement window, warmup excluded, as the
		// evidence pools it (the run's wall time once made the summary
		// read 1013 output tok/s where the run lines and evidence said 1241).
		lt.windowSeconds += e.WindowSeconds
		if e.TTFTP50Ms > 0 {
			lt.ttftP50s = append(lt.ttftP50s, e.TTFTP50Ms)
		}
		t.finishedRuns++
		t.measRuns += e.Elapsed
		if lt.estRun > 0 {
			t.estRuns += lt.estRun
		}
	case executor.EventRunFailed:
		lt := t.lane(e)
		lt.running = nil
		if e.Interrupted {
			// Cut short, not failed: it counts among the runs not made,
			// which a re-run makes.
			t.interrupted = true
			return ""
		}
		lt.failedRuns++
		lt.lastErr = e.Error
	case executor.EventNodeSkipped:
		if e.Run == 0 || e.Lane == "" {
			return ""
		}
		lt := t.lane(e)
		lt.notRun++
		if lt.notRunWhy != "" {
			return ""
		}
		lt.notRunWhy = t.whySkipped(lt, e)
		return fmt.Sprintf("Lane %s (%s) does not run: %s.", lt.key, lt.id, lt.notRunWhy)
	case executor.EventSearchFinished:
		// The search needs no more points: what it ran is all it does.
		// It comes before the run of the deciding point finishes.
		lt := t.lane(e)
		lt.runsToDo, lt.decided = lt.done+lt.failedRuns, true
		if lt.running != nil {
			lt.runsToDo++
		}
	case executor.EventLaneFinished:
		if e.Error == "" {
			t.lane(e).finished = true
		}
	case executor.EventApplyFinished:
		f := e
		t.finished = &f
	}
	return ""
}

// whySkipped says in words why a lane's run was not made.
func (t *tracker) whySkipped(lt *laneTrack, e executor.Event) string {
	dep := e.Deployment
	if dep == "" {
		dep = lt.deployment
	}
	if d := t.deps[dep]; d != nil && d.state == "failed" {
		return fmt.Sprintf("its deployment %s (%s) failed", d.id, d.what)
	}
	if t.interrupted || strings.Contains(e.Message, "interrupted") {
		return "the apply was interrupted"
	}
	if lt.failedRuns > 0 {
		return "an earlier run of the lane failed"
	}
	return "a step before it failed (see the errors above)"
}

// eta returns the estimated seconds left, or ok false while nothing
// tells (lanes without estimates before any run finished).
func (t *tracker) eta() (secs float64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	fRun := 1.0
	if t.estRuns > 0 && t.measRuns > 0 {
		fRun = t.measRuns / t.estRuns
	}
	fDeploy := 1.0
	if t.estDeploys > 0 {
		fDeploy = t.measDeploy / t.estDeploys
	}
	avg := 0.0
	if t.finishedRuns > 0 {
		avg = t.measRuns / float64(t.finishedRuns)
	}
	total := 0.0
	// The busy deployments in plan order: their start-ups are added in
	// that order, not a map's, so the same state gives the same figure
	// (float addition is not associative).
	busyDeps := map[string]bool{}
	var busyOrder []string
	for _, id := range t.order {
		lt := t.lanes[id]
		left := lt.runsToDo - lt.done - lt.failedRuns - lt.notRun
		if lt.search && left <= 0 && !lt.finished && !lt.decided && lt.pointsDone+lt.done+lt.failedRuns < lt.atMost {
			left = 1 // past the points expected: one more at least
		}
		if left <= 0 || lt.finished {
			continue
		}
		if d := t.deps[lt.deployment]; d != nil && d.state == "failed" {
			continue
		}
		per := lt.estRun * fRun
		if lt.estRun == 0 {
			if t.finishedRuns == 0 {
				return 0, false
			}
			per = avg
		}
		if !busyDeps[lt.deployment] {
			busyDeps[lt.deployment] = true
			busyOrder = append(busyOrder, lt.deployment)
		}
		if r := lt.running; r != nil {
			left--
			el := now.Sub(r.started).Seconds()
			if r.done > 0 && r.total > r.done {
				total += el * float64(r.total-r.done) / float64(r.done)
			} else if r.total > r.done {
				total += max(per-el, 0)
			}
		}
		total += float64(left) * per
	}
	for _, id := range busyOrder {
		d := t.deps[id]
		if d == nil {
			continue
		}
		switch d.state {
		case "":
			total += d.estStartup * fDeploy
		case "deploying":
			total += max(d.estStartup*fDeploy-now.Sub(d.started).Seconds(), 0)
		}
	}
	return total / float64(max(min(t.par, len(busyDeps)), 1)), true
}

// runLabel names run e.Run of its lane for a person: "Run 2/3", or for a
// capacity search, whose runs are its points, "Point 2 (expected 3, at
// most 8)".
func (t *tracker) runLabel(e executor.Event) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if lt := t.lanes[e.Lane]; lt != nil && lt.search {
		return fmt.Sprintf("Point %d (expected %d, at most %d)", e.Run, lt.expected, lt.atMost)
	}
	return fmt.Sprintf("Run %d/%d", e.Run, e.Runs)
}

// runsDone counts the runs completed so far.
func (t *tracker) runsDone() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.finishedRuns
}

// etaText renders the time left as "~01:23", or "?" when unknown.
func (t *tracker) etaText() string {
	s, ok := t.eta()
	if !ok {
		return "?"
	}
	return "~" + clock(s)
}

// clock renders seconds as MM:SS (or H:MM:SS).
func clock(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	if d >= time.Hour {
		return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
	}
	return fmt.Sprintf("%02d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// laneSummary is one lane's line of the end summary (and of the -json
// apply_summary event).
type laneSummary struct {
	Lane           string  `json:"lane"`
	Key            string  `json:"key"`
	RunsToDo       int     `json:"runs_to_do"`
	RunsCompleted  int     `json:"runs_completed"`
	RunsFailed     int     `json:"runs_failed"`
	RunsNotRun     int     `json:"runs_not_run"`
	Requests       int     `json:"requests"`
	FailedRequests int     `json:"failed_requests"`
	OutputTokPerS  float64 `json:"output_token_throughput,omitempty"`
	TTFTP50Ms      float64 `json:"ttft_p50_ms,omitempty"`
	Error          string  `json:"error,omitempty"`
	NotRunReason   string  `json:"not_run_reason,omitempty"`
}

// deployFailure is a deployment that did not come up.
type deployFailure struct {
	Deployment string `json:"deployment"`
	What       string `json:"what"`
	Error      string `json:"error"`
}

// applySummary is what the apply did, lane by lane.
type applySummary struct {
	Type          string          `json:"type"` // "apply_summary"
	Time          time.Time       `json:"time"`
	Elapsed       float64         `json:"elapsed_s"`
	RunsToDo      int             `json:"runs_to_do"`
	RunsCompleted int             `json:"runs_completed"`
	RunsFailed    int             `json:"runs_failed"`
	RunsNotRun    int             `json:"runs_not_run"`
	Interrupted   bool            `json:"interrupted,omitempty"`
	Lanes         []laneSummary   `json:"lanes"`
	DeployFailed  []deployFailure `json:"deployments_failed"`
}

// summary tallies the apply.
func (t *tracker) summary() applySummary {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := applySummary{Type: "apply_summary", Time: t.now(), Lanes: []laneSummary{}, DeployFailed: []deployFailure{}}
	if t.finished != nil {
		s.Elapsed = t.finished.Elapsed
		s.Interrupted = strings.Contains(t.finished.Message, "interrupted")
	} else {
		s.Elapsed = t.now().Sub(t.start).Seconds()
	}
	for _, id := range t.order {
		lt := t.lanes[id]
		ls := laneSummary{Lane: lt.id, Key: lt.key, RunsToDo: lt.runsToDo, RunsCompleted: lt.done, RunsFailed: lt.failedRuns,
			Requests: lt.requests, FailedRequests: lt.failedRequests, Error: lt.lastErr, NotRunReason: lt.notRunWhy}
		ls.RunsNotRun = max(lt.runsToDo-lt.done-lt.failedRuns, lt.notRun, 0)
		if lt.finished { // every run the lane needed was made
			ls.RunsNotRun = lt.notRun
			ls.RunsToDo = lt.done + lt.failedRuns + lt.notRun
		}
		if lt.windowSeconds > 0 {
			ls.OutputTokPerS = float64(lt.outTokens) / lt.windowSeconds
		}
		if len(lt.ttftP50s) > 0 {
			sum := 0.0
			for _, v := range lt.ttftP50s {
				sum += v
			}
			ls.TTFTP50Ms = sum / float64(len(lt.ttftP50s))
		}
		if ls.RunsNotRun > 0 && ls.NotRunReason == "" {
			if d := t.deps[lt.deployment]; d != nil && d.state == "failed" {
				ls.NotRunReason = fmt.Sprintf("its deployment %s (%s) failed", d.id, d.what)
			} else if s.Interrupted {
				ls.NotRunReason = "the apply was interrupted"
			}
		}
		s.RunsToDo += ls.RunsToDo
		s.RunsCompleted += ls.RunsCompleted
		s.RunsFailed += ls.RunsFailed
		s.RunsNotRun += ls.RunsNotRun
		s.Lanes = append(s.Lanes, ls)
	}
	ids := make([]string, 0, len(t.deps))
	for id := range t.deps {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if d := t.deps[id]; d.state == "failed" {
			s.DeployFailed = append(s.DeployFailed, deployFailure{Deployment: d.id, What: d.what, Error: d.err})
		}
	}
	return s
}

// summaryLines renders the summary for people: a headline, one line per
// lane, and the deployments that failed.
func (s applySummary) lines() []string {
	var out []string
	verb := "finished in"
	if s.Interrupted {
		verb = "interrupted after"
	}
	switch {
	case s.RunsCompleted+s.RunsFailed == 0 && s.RunsNotRun > 0:
		out = append(out, fmt.Sprintf("Apply %s %.1fs: no run was made; %d run(s) of %d lane(s) did not run.", verb, s.Elapsed, s.RunsNotRun, len(s.Lanes)))
	default:
		h := fmt.Sprintf("Apply %s %.1fs: %d run(s) completed, %d failed.", verb, s.Elapsed, s.RunsCompleted, s.RunsFailed)
		if s.RunsNotRun > 0 {
			h += fmt.Sprintf(" %d run(s) did not run.", s.RunsNotRun)
		}
		out = append(out, h)
	}
	if s.Interrupted {
		out = append(out, "Completed runs are journaled; a re-run resumes with the rest.")
	}
	for _, l := range s.Lanes {
		line := fmt.Sprintf("  %s (%s): %d/%d runs", l.Key, l.Lane, l.RunsCompleted, l.RunsToDo)
		if l.Requests > 0 {
			line += fmt.Sprintf(", %d/%d requests failed", l.FailedRequests, l.Requests)
		}
		if l.OutputTokPerS > 0 {
			line += fmt.Sprintf(", %.0f output tok/s", l.OutputTokPerS)
		}
		if l.TTFTP50Ms > 0 {
			line += fmt.Sprintf(", TTFT p50 %s", fmtMs(l.TTFTP50Ms))
		}
		if l.RunsFailed > 0 {
			line += fmt.Sprintf("; %d run(s) failed", l.RunsFailed)
		}
		if l.RunsNotRun > 0 {
			why := l.NotRunReason
			if why == "" {
				why = "not reached"
			}
			line += fmt.Sprintf("; %d run(s) did not run: %s", l.RunsNotRun, why)
		}
		out = append(out, line)
	}
	for _, d := range s.DeployFailed {
		out = append(out, fmt.Sprintf("Deployment %s (%s) failed: %s", d.Deployment, d.What, d.Error))
	}
	return out
}

// fmtMs renders milliseconds with sensible precision.
func fmtMs(ms float64) string {
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f ms", ms)
	default:
		return fmt.Sprintf("%.2f ms", ms)
	}
}
