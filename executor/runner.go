package executor

import (
	"bytes"
	"github.com/infercrane/infercrane/executor/redact"

	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/state"
)

// Opener makes an executor instance of type typ configured with a lane's
// resolved executor settings (planner.Lane.RevealedSettings: every value
// the executor uses, defaults applied). The runner opens one instance per
// deployment and closes it (when it implements io.Closer) after teardown.
type Opener func(ctx context.Context, typ string, cfg map[string]any) (Executor, error)

// Runner applies plans: it walks a plan's DAG, deploys servers (up to
// Parallelism at once), runs each lane's runs in order on its deployment,
// journals every completed run in Store and always tears down what it
// deployed.
type Runner struct {
	Store *state.Store
	Open  Opener
	// ReapOpen opens the executor of a deployment a dead apply journaled,
	// from the journal's record (nil: Open).
	ReapOpen Opener
	// Parallelism is the number of deployments that may be up at once
	// (default 1).
	Parallelism int
	// Events receives what happens, one call at a time (may be nil).
	Events func(Event)
	// TeardownTimeout bounds each teardown (default 5 minutes); teardown
	// runs on its own context, so it also happens after cancellation.
	TeardownTimeout time.Duration
	// PlanJSON is written to the state as plan.json (default: the plan
	// marshalled as JSON).
	PlanJSON []byte
	// ApplyID tags what this apply starts (default: random).
	ApplyID string
	// Secrets are removed from everything the runner journals (run
	// records, server facts, failure messages) and from every recorded
	// request error; the plan's own secrets are added to them.
	Secrets *redact.Set

	evMu sync.Mutex
	busy sync.Map // node ID -> description, for Busy
}

// Outcome is what an apply did.
type Outcome struct {
	RunsCompleted int
	// RunsFailed leaves out the runs an interruption cut short: a re-run
	// redoes those, and they are not failures.
	RunsFailed  int
	RunsSkipped int
	// Errors are the failures, each naming its lane or deployment.
	Errors []error
	// Interrupted is true when the context was cancelled.
	Interrupted bool
	// TornDown lists the deployments torn down; TeardownFailed those whose
	// teardown failed (something may be left running).
	TornDown       []string
	TeardownFailed []string
}

// Err joins the outcome's errors.
func (o *Outcome) Err() error { return errors.Join(o.Errors...) }

// deployment is one server's life within an apply.
type deployment struct {
	id       string
	ord      int // position among the deploy nodes, for slots
	lanes    []*planner.Lane
	executor Executor
	server   *Server
	acquired bool
	runMu    sync.Mutex // runs on one deployment never overlap

	// journaled is set once the deployment is in the deployments
	// journal; started is the last server the executor reported.
	journaled bool
	startMu   sync.Mutex
	started   *Server
}

func (d *deployment) setStarted(s *Server) {
	d.startMu.Lock()
	defer d.startMu.Unlock()
	cp := *s
	d.started = &cp
}

// target is the server teardown stops: the healthy one, else the last one
// the executor reported starting, else only the deployment's ID.
func (d *deployment) target() *Server {
	if d.server != nil {
		return d.server
	}
	d.startMu.Lock()
	defer d.startMu.Unlock()
	if d.started != nil {
		return d.started
	}
	return &Server{DeploymentID: d.id}
}

// Busy describes the work in flight, e.g. "teardown of deployment d1 (sim)",
// so an interrupted apply can say what it is still cleaning up.
func (r *Runner) Busy() []string {
	var out []string
	r.busy.Range(func(_, v any) bool {
		out = append(out, v.(string))
		return true
	})
	sort.Strings(out)
	return out
}

func (r *Runner) emit(e Event) {
	if r.Events == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Message, e.Error, e.Server = r.Secrets.String(e.Message), r.Secrets.String(e.Error), r.Secrets.String(e.Server)
	r.evMu.Lock()
	defer r.evMu.Unlock()
	r.Events(e)
}

// Apply runs the plan's work. It returns an error only when it could not
// start (bad graph, unwritable state); failures of lanes are in the
// Outcome, and teardown has happened for every deployment by the time
// Apply returns.
func (r *Runner) Apply(ctx context.Context, p *planner.Plan) (*Outcome, error) {
	if r.Store == nil || r.Open == nil {
		return nil, errors.New("runner: Store and Open are required")
	}
	if err := planner.Applicable(p); err != nil {
		return nil, err
	}
	if r.ApplyID == "" {
		var b [6]byte
		rand.Read(b[:])
		r.ApplyID = hex.EncodeToString(b[:])
	}
	if r.Secrets == nil {
		r.Secrets = redact.New()
	}
	r.Secrets.Add(p.Secrets()...)
	for _, l := range p.Lanes {
		if l.Work() && l.Inputs.HasRedacted() && l.Inputs.Secrets == nil {
			return nil, fmt.Errorf("lane %s (%s) needs sensitive values that no plan file holds; apply re-reads them from the variables (-var, -var-file, *.auto.vars.hcl, %sNAME), so set the sensitive variables again and re-run", l.ID, l.Key, "INFERCRANE_VAR_")
		}
	}
	planJSON := r.PlanJSON
	if planJSON == nil {
		var err error
		if planJSON, err = json.Marshal(p); err != nil {
			return nil, fmt.Errorf("encode the plan: %w", err)
		}
	}
	if err := r.Store.SavePlan(planJSON); err != nil {
		return nil, err
	}
	g, err := newDAG(p.Graph)
	if err != nil {
		return nil, err
	}
	logDir, err := r.Store.LogDir()
	if err != nil {
		return nil, err
	}
	lanes := map[string]*planner.Lane{}
	deps := map[string]*deployment{}
	out := &Outcome{}
	var runsToDo, lanesToRun int
	for _, l := range p.Lanes {
		lanes[l.ID] = l
		if l.Action == planner.ActionDrop {
			if err := r.Store.Drop(l.ID, "the lane left the spec"); err != nil {
				return nil, err
			}
			r.emit(Event{Type: EventLaneDropped, Lane: l.ID, Key: l.Key})
			continue
		}
		if !l.Work() {
			continue
		}
		lanesToRun++
		runsToDo += l.RunsToDo()
		d := deps[l.Deployment]
		if d == nil {
			d = &deployment{id: l.Deployment}
			deps[l.Deployment] = d
		}
		d.lanes = append(d.lanes, l)
	}
	for _, n := range g.nodes {
		if n.Lane != "" && lanes[n.Lane] == nil {
			return nil, fmt.Errorf("the plan's graph names lane %s, which the plan does not have; re-run plan", n.Lane)
		}
		if n.Deployment != "" && deps[n.Deployment] == nil && (n.Kind == planner.NodeDeploy || n.Kind == planner.NodeTeardown) {
			return nil, fmt.Errorf("the plan's graph names deployment %s, which has no lane to run; re-run plan", n.Deployment)
		}
	}
	ord := 0
	for _, n := range g.nodes {
		if n.Kind == planner.NodeDeploy {
			deps[n.Deployment].ord = ord
			ord++
		}
	}
	// Deployments an earlier apply left running (it died without tearing
	// down) are reaped before anything new starts.
	reapOpen := r.ReapOpen
	if reapOpen == nil {
		reapOpen = r.Open
	}
	reaped, err := ReapDeployments(ctx, r.Store, revealingOpen(reapOpen, p), r.ApplyID, r.TeardownTimeout)
	if err != nil {
		return nil, err
	}
	for _, rp := range reaped {
		e := Event{Type: EventDeploymentReaped, Deployment: rp.Deployment, Executor: rp.Executor, Message: rp.Message()}
		if rp.Err != nil {
			e.Type, e.Error = EventReapFailed, rp.Message()
			out.Errors = append(out.Errors, errors.New(rp.Message()))
		}
		r.emit(e)
	}
	par := max(r.Parallelism, 1)
	a := &applyRun{r: r, ctx: ctx, lanes: lanes, deps: deps, slots: newSlots(par), logDir: logDir, snap: r.Store.Snapshot(), out: out}
	start := time.Now()
	r.emit(Event{Type: EventApplyStarted, LanesToRun: lanesToRun, RunsToDo: runsToDo, Message: fmt.Sprintf("parallelism %d", par)})
	g.walk(ctx, a.exec, a.skipped)
	out.Interrupted = ctx.Err() != nil
	fin := Event{Type: EventApplyFinished, RunsCompleted: out.RunsCompleted, RunsFailed: out.RunsFailed, Elapsed: time.Since(start).Seconds()}
	if err := out.Err(); err != nil {
		fin.Error = err.Error()
	}
	if out.Interrupted {
		fin.Message = "interrupted; completed runs are journaled and a re-run resumes"
	}
	r.emit(fin)
	return out, nil
}

// applyRun is the state of one Apply call.
type applyRun struct {
	r      *Runner
	ctx    context.Context
	lanes  map[string]*planner.Lane
	deps   map[string]*deployment
	slots  *slots
	logDir string
	snap   *state.Snapshot
	search searches

	mu  sync.Mutex
	out *Outcome
}

func (a *applyRun) fail(err error) error {
	a.mu.Lock()
	a.out.Errors = append(a.out.Errors, err)
	a.mu.Unlock()
	return err
}

// deployFailed reports deployment d's failure after elapsed (0: not
// timed), saying whether the apply's interruption caused it, and records
// err.
func (a *applyRun) deployFailed(d *deployment, typ string, err error, elapsed time.Duration) error {
	a.r.emit(Event{Type: EventDeployFailed, Deployment: d.id, Executor: typ, Error: err.Error(), Interrupted: a.ctx.Err() != nil, Elapsed: elapsed.Seconds()})
	return a.fail(err)
}

func (a *applyRun) skipped(n *dagNode, why string) {
	if n.Kind == planner.NodeDeploy {
		a.slots.pass(a.deps[n.Deployment].ord)
	}
	if n.Kind == planner.NodeRun {
		a.mu.Lock()
		a.out.RunsSkipped++
		a.mu.Unlock()
	}
	a.r.emit(Event{Type: EventNodeSkipped, Node: n.ID, Lane: n.Lane, Deployment: n.Deployment, Run: n.Run, Message: why})
}

func (a *applyRun) exec(n *dagNode) error {
	switch n.Kind {
	case planner.NodeProfile:
		return a.fail(fmt.Errorf("trace %s: %w", n.Trace, ErrNotProfiled))
	case planner.NodeDeploy:
		return a.deploy(a.deps[n.Deployment])
	case planner.NodePreflight:
		return a.startLane(a.lanes[n.Lane])
	case planner.NodeRun:
		return a.run(a.deps[n.Deployment], a.lanes[n.Lane], n.Run)
	case planner.NodeAggregate:
		l := a.lanes[n.Lane]
		a.r.emit(Event{Type: EventLaneFinished, Lane: l.ID, Key: l.Key, Runs: l.Runs})
		return nil
	case planner.NodeTeardown:
		return a.teardown(a.deps[n.Deployment])
	default:
		// gates, compare and report are made from the state after the
		// walk (see the report package).
		return nil
	}
}

func (a *applyRun) deploy(d *deployment) error {
	l := d.lanes[0]
	typ := l.Inputs.ExecutorType
	if err := a.slots.acquire(a.ctx, d.ord); err != nil {
		return err
	}
	d.acquired = true
	what := fmt.Sprintf("%s on %s, executor %s", l.Inputs.ModelID, l.Inputs.GPUType, typ)
	a.r.busy.Store("deploy."+d.id, fmt.Sprintf("deploy of %s (%s)", d.id, what))
	defer a.r.busy.Delete("deploy." + d.id)
	a.r.emit(Event{Type: EventDeployStarted, Deployment: d.id, Executor: typ, Message: what})
	start := time.Now()
	x, err := safeOpen(a.ctx, a.r.Open, typ, l.RevealedSettings())
	if err != nil {
		return a.deployFailed(d, typ, fmt.Errorf("deployment %s: open executor %s: %w", d.id, typ, err), 0)
	}
	d.executor = x
	// Journal the deployment before it starts, and what the executor
	// reports it started as soon as it does, so that a later apply can
	// reap it if this one dies.
	rec := state.DeploymentEntry{Type: state.DeployStarting, Apply: a.r.ApplyID, Deployment: d.id, Executor: typ, Config: l.ExecutorSettings}
	if err := a.r.Store.RecordDeployment(rec); err != nil {
		return a.deployFailed(d, typ, fmt.Errorf("deployment %s: %w", d.id, err), 0)
	}
	d.journaled = true
	ctx := WithStarted(a.ctx, func(s *Server) {
		d.setStarted(s)
		if raw, err := json.Marshal(s); err == nil {
			raw = a.r.Secrets.Bytes(raw) // a base URL may hold a sensitive value
			// A failed write is caught by the next one (the deploy's
			// final record) or by the store refusing further writes.
			_ = a.r.Store.RecordDeployment(state.DeploymentEntry{Type: state.DeployStarted, Apply: a.r.ApplyID, Deployment: d.id, Server: raw})
		}
	})
	dep := DeploymentFor(l, a.r.ApplyID, a.logDir)
	dep.Redact = a.r.Secrets.Values()
	s, err := safeDeploy(ctx, x, dep)
	if err == nil {
		d.setStarted(s)
		raw, jerr := json.Marshal(s)
		if jerr == nil {
			raw = a.r.Secrets.Bytes(raw)
			jerr = a.r.Store.RecordDeployment(state.DeploymentEntry{Type: state.DeployStarted, Apply: a.r.ApplyID, Deployment: d.id, Server: raw})
		}
		if jerr != nil {
			d.server = s // torn down by the teardown node
			err = jerr
		}
	}
	if err != nil {
		return a.deployFailed(d, typ, fmt.Errorf("deployment %s (%s) on executor %s: %w", d.id, l.Inputs.ModelID, typ, err), time.Since(start))
	}
	d.server = s
	a.r.emit(Event{Type: EventDeployFinished, Deployment: d.id, Executor: typ, Server: s.BaseURL, Elapsed: time.Since(start).Seconds()})
	return nil
}

// startLane journals the lane before its first run: it drops the lane it
// supersedes and, for a forced rerun, the lane's own earlier runs.
func (a *applyRun) startLane(l *planner.Lane) error {
	st := a.r.Store
	if l.Supersedes != "" && l.Supersedes != l.ID {
		if err := st.Drop(l.Supersedes, "superseded by lane "+l.ID); err != nil {
			return a.fail(err)
		}
	}
	if old := a.snap.Lanes[l.ID]; old != nil && l.Action == planner.ActionRerun && l.RunsDone == 0 && len(old.Completed) > 0 {
		if err := st.Drop(l.ID, "rerun forced"); err != nil {
			return a.fail(err)
		}
	}
	if err := st.StartLane(l.ID, l.Key, l.Runs, planner.InputsMap(l.Inputs)); err != nil {
		return a.fail(err)
	}
	a.r.emit(Event{Type: EventLaneStarted, Lane: l.ID, Key: l.Key, Deployment: l.Deployment, Runs: l.Runs, Message: fmt.Sprintf("%d of %d runs to do", l.RunsToDo(), l.Runs)})
	return nil
}

func (a *applyRun) run(d *deployment, l *planner.Lane, n int) error {
	// A search's points after a gap are measured again (the next point
	// depends on every one before it); its other runs are never repeated.
	if old := a.snap.Lanes[l.ID]; old != nil && old.Complete(n) && !(l.Action == planner.ActionRerun && l.RunsDone == 0) && l.Inputs.Search == nil {
		return nil // journaled by an earlier apply
	}
	d.runMu.Lock()
	defer d.runMu.Unlock()
	typ := l.Inputs.ExecutorType
	spec := RunSpecFor(l, n)
	var load float64
	if l.Inputs.Search != nil {
		next, done, err := a.nextPoint(l, n)
		if err != nil {
			return a.fail(err)
		}
		if done {
			return nil // the points measured decide the search
		}
		load, spec = next, PointSpecFor(l, n, next)
	}
	key := fmt.Sprintf("run.%s.%d", l.ID, n)
	a.r.busy.Store(key, fmt.Sprintf("run %d of lane %s (%s)", n, l.ID, l.Key))
	defer a.r.busy.Delete(key)
	// Executors that can stream the records to disk do (RunLoad): memory
	// stays flat in the number of requests.
	if p, err := filepath.Abs(a.r.Store.StreamPath(l.ID, n)); err == nil {
		spec.RecordsPath = p
		defer os.Remove(p)
	}
	spec.Load.Redact = a.r.Secrets.Values()
	a.r.emit(Event{Type: EventRunStarted, Lane: l.ID, Key: l.Key, Deployment: d.id, Run: n, Runs: l.Runs, Total: spec.Load.Requests})
	start := time.Now()
	var last time.Time
	ctx := WithProgress(a.ctx, func(p Progress) {
		if now := time.Now(); now.Sub(last) >= 200*time.Millisecond || p.Done == p.Total {
			last = now
			a.r.emit(Event{Type: EventRunProgress, Lane: l.ID, Key: l.Key, Run: n, Runs: l.Runs, Done: p.Done, Failed: p.Failed, Total: p.Total,
				OutputTokens: p.OutputTokens, TokensPerSecond: p.TokensPerSecond, TTFTP50Ms: p.TTFTP50Ms, Elapsed: now.Sub(start).Seconds()})
		}
	})
	res, err := safeRun(ctx, d.executor, d.server, spec)
	if err == nil {
		// A run that found the server gone is redone, not kept; one
		// whose every request failed is not a result either.
		ferr := InfrastructureFailure(res)
		if ferr == nil {
			ferr = allFailed(res.Summary)
		}
		if ferr != nil && a.ctx.Err() == nil {
			err = a.failRun(d, l, n, ferr, res.Summary)
		} else {
			err = a.commit(d, l, n, res, start, load)
		}
	} else if a.ctx.Err() == nil {
		err = a.failRun(d, l, n, err, loadgen.Summary{})
	}
	if err == nil && l.Inputs.Search != nil {
		err = a.measured(l, n, load, res.Summary)
	}
	if err != nil {
		interrupted := a.ctx.Err() != nil
		if interrupted {
			err = fmt.Errorf("run %d of lane %s (%s) was interrupted and will be redone: %w", n, l.ID, l.Key, a.ctx.Err())
		} else {
			err = fmt.Errorf("run %d of lane %s (%s) on executor %s: %w", n, l.ID, l.Key, typ, err)
		}
		if !interrupted {
			a.mu.Lock()
			a.out.RunsFailed++
			a.mu.Unlock()
		}
		a.r.emit(Event{Type: EventRunFailed, Lane: l.ID, Key: l.Key, Deployment: d.id, Run: n, Error: err.Error(), Interrupted: interrupted, Elapsed: time.Since(start).Seconds()})
		a.r.emit(Event{Type: EventLaneFinished, Lane: l.ID, Key: l.Key, Runs: l.Runs, Error: err.Error()})
		return a.fail(err)
	}
	a.mu.Lock()
	a.out.RunsCompleted++
	a.mu.Unlock()
	s := res.Summary
	a.r.emit(Event{Type: EventRunFinished, Lane: l.ID, Key: l.Key, Deployment: d.id, Run: n, Runs: l.Runs,
		Done: s.Succeeded + s.Failed, Failed: s.Failed, Total: s.Requests,
		RequestThroughput: s.RequestThroughput, OutputTokenThroughput: s.OutputTokenThroughput,
		OutputTokens: s.OutputTokens, TokensPerSecond: s.OutputTokenThroughput, TTFTP50Ms: s.TTFTMs.P50,
		Elapsed: time.Since(start).Seconds(), WindowSeconds: s.WindowSeconds})
	return nil
}

// allFailed returns why a run whose every request failed (the server was
// unreachable, say) is a failed run, nil when some request succeeded.
func allFailed(s loadgen.Summary) error {
	if s.Succeeded > 0 || s.Failed == 0 {
		return nil
	}
	return fmt.Errorf("every request failed (%d of %d: %s); the run is journaled as failed and the next apply redoes it", s.Failed, s.Requests, FailureText(s.Failures))
}

// FailureText renders failure counts by class, most frequent first, e.g.
// "connection 16, timeout 2".
func FailureText(failures map[string]int) string {
	type kv struct {
		k string
		v int
	}
	var list []kv
	for k, v := range failures {
		if v > 0 {
			list = append(list, kv{k, v})
		}
	}
	if len(list) == 0 {
		return "no failure class recorded"
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].v != list[j].v {
			return list[i].v > list[j].v
		}
		return list[i].k < list[j].k
	})
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = fmt.Sprintf("%s %d", e.k, e.v)
	}
	return strings.Join(parts, ", ")
}

// failRun journals run n of l as failed with why and its failure classes,
// and returns why (or the journal's error, joined).
func (a *applyRun) failRun(d *deployment, l *planner.Lane, n int, why error, s loadgen.Summary) error {
	f := state.RunFailure{Run: n, Deployment: d.id, Error: a.r.Secrets.String(why.Error()), Requests: s.Requests}
	if len(s.Failures) > 0 {
		f.Failures = map[string]int{}
		for k, v := range s.Failures {
			if v > 0 {
				f.Failures[k] = v
			}
		}
	}
	if err := a.r.Store.FailRun(l.ID, f); err != nil {
		return errors.Join(why, err)
	}
	return why
}

// commit writes a run's records and then its journal entry.
func (a *applyRun) commit(d *deployment, l *planner.Lane, n int, res *RunResult, start time.Time, load float64) error {
	if a.ctx.Err() != nil {
		// The run may have been cut short by the interruption: discard it.
		return a.ctx.Err()
	}
	sum, err := json.Marshal(res.Summary)
	if err != nil {
		return err
	}
	// Whatever text came back (an error body echoing a key, a server fact
	// holding a sensitive URL) loses every known secret before it is kept.
	for i := range res.Records {
		res.Records[i].Error = a.r.Secrets.String(res.Records[i].Error)
	}
	var info map[string]string
	if d.server.Info != nil {
		info = make(map[string]string, len(d.server.Info))
		for k, v := range d.server.Info {
			info[k] = a.r.Secrets.String(v)
		}
	}
	var view json.RawMessage
	if res.ServerView != nil {
		if view, err = json.Marshal(res.ServerView); err != nil {
			return err
		}
	}
	var series json.RawMessage
	if len(res.ServerSeries) > 0 {
		if series, err = json.Marshal(res.ServerSeries); err != nil {
			return err
		}
	}
	rec := state.RunRecord{
		Lane: l.ID, Run: n, Deployment: d.id, Summary: sum, ServerView: view,
		Server: info, ServerMetrics: res.ServerMetrics, ServerSeries: series, GPUSeconds: res.GPUSeconds, SearchLoad: load,
		StartedAt: start.UTC().Format(time.RFC3339Nano), FinishedAt: time.Now().UTC().Format(time.RFC3339Nano),
	}
	if res.RecordsFile != "" {
		if want, _ := filepath.Abs(a.r.Store.StreamPath(l.ID, n)); res.RecordsFile != want {
			return fmt.Errorf("the executor says it streamed the records to %s, not to %s as asked", res.RecordsFile, want)
		}
		return a.r.Store.CommitRun(rec, func(w io.Writer) error {
			f, err := os.Open(res.RecordsFile)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(w, f)
			return err
		})
	}
	return a.r.Store.CommitRun(rec, func(w io.Writer) error { return loadgen.WriteRecords(w, res.Records) })
}

func (a *applyRun) teardown(d *deployment) error {
	if d.acquired {
		defer a.slots.release()
	}
	if d.executor == nil {
		return nil
	}
	typ := d.lanes[0].Inputs.ExecutorType
	desc := fmt.Sprintf("teardown of deployment %s (executor %s)", d.id, typ)
	a.r.busy.Store("teardown."+d.id, desc)
	defer a.r.busy.Delete("teardown." + d.id)
	timeout := a.r.TeardownTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), timeout)
	defer cancel()
	a.r.emit(Event{Type: EventTeardownStarted, Deployment: d.id, Executor: typ})
	start := time.Now()
	err := safeTeardown(ctx, d.executor, d.target())
	if c, ok := d.executor.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	if err == nil && d.journaled {
		err = a.r.Store.RecordDeployment(state.DeploymentEntry{Type: state.DeployStopped, Apply: a.r.ApplyID, Deployment: d.id, How: "torn down"})
	}
	a.mu.Lock()
	if err != nil {
		a.out.TeardownFailed = append(a.out.TeardownFailed, d.id)
	} else {
		a.out.TornDown = append(a.out.TornDown, d.id)
	}
	a.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("teardown of deployment %s on executor %s: %w; check that nothing is left running", d.id, typ, err)
		a.r.emit(Event{Type: EventTeardownFailed, Deployment: d.id, Executor: typ, Error: err.Error(), Elapsed: time.Since(start).Seconds()})
		return a.fail(err)
	}
	a.r.emit(Event{Type: EventTeardownFinished, Deployment: d.id, Executor: typ, Elapsed: time.Since(start).Seconds()})
	return nil
}

// revealingOpen wraps open for reaping: the journal keeps an executor's
// settings as the plan shows them, sensitive values redacted, so an
// executor opened from them gets the real values of a lane of p with the
// same executor type and the same shown settings, when there is one.
func revealingOpen(open Opener, p *planner.Plan) Opener {
	return func(ctx context.Context, typ string, cfg map[string]any) (Executor, error) {
		shown, _ := json.Marshal(cfg)
		for _, l := range p.Lanes {
			if l.Inputs.Secrets == nil || l.Inputs.ExecutorType != typ {
				continue
			}
			if b, _ := json.Marshal(l.ExecutorSettings); bytes.Equal(b, shown) {
				cfg = l.RevealedSettings()
				break
			}
		}
		return open(ctx, typ, cfg)
	}
}
