package executor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/state"
)

// testSpec has two models (two deployments) with one shape and two runs.
const testSpec = `
model "a" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 4096
}
model "b" {
  id          = "Qwen/Qwen3-1.7B"
  revision    = "70d244cc86ccca08cf5af4e1e306ecf908b1ad5e"
  max_context = 4096
}
gpu "l40s" { type = "L40S" }
runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
}
shape "s" {
  input_tokens      = 32
  output_tokens     = 8
  template_headroom = 16
  concurrency       = 2
  requests          = 6
}
screen "t" {
  models  = [model.a, model.b]
  shapes  = [shape.s]
  gpus    = [gpu.l40s]
  runtime = runtime.vllm
  runs    = 2
  seed    = 3
}
`

// simExec is the built-in sim executor (real simulated engines on
// loopback ports, constant timing of 1 ms) counting its deployments and
// runs, with hooks that inject faults.
type simExec struct {
	*sim.Executor
	mu        sync.Mutex
	deploys   atomic.Int32
	teardowns atomic.Int32
	live      atomic.Int32
	maxLive   atomic.Int32
	runs      map[string]int  // "lane/run" -> times run
	handles   map[string]bool // deployments not yet torn down
	onRun     func(r executor.RunSpec)
}

func newSimExec() *simExec {
	x, err := sim.New(sim.Schema().Resolve(map[string]any{"timing": "constant", "ttft": "1ms", "itl": "1ms"}))
	if err != nil {
		panic(err)
	}
	return &simExec{Executor: x.(*sim.Executor), runs: map[string]int{}, handles: map[string]bool{}}
}

func (x *simExec) Deploy(ctx context.Context, d executor.Deployment) (*executor.Server, error) {
	s, err := x.Executor.Deploy(ctx, d)
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	x.handles[s.Handle] = true
	x.mu.Unlock()
	x.deploys.Add(1)
	n := x.live.Add(1)
	for m := x.maxLive.Load(); n > m && !x.maxLive.CompareAndSwap(m, n); m = x.maxLive.Load() {
	}
	return s, nil
}

func (x *simExec) Run(ctx context.Context, s *executor.Server, r executor.RunSpec) (*executor.RunResult, error) {
	x.mu.Lock()
	x.runs[fmt.Sprintf("%s/%d", r.Lane, r.Run)]++
	hook := x.onRun
	x.mu.Unlock()
	if hook != nil {
		hook(r)
	}
	return x.Executor.Run(ctx, s, r)
}

func (x *simExec) Teardown(ctx context.Context, s *executor.Server) error {
	x.mu.Lock()
	live := x.handles[s.Handle]
	delete(x.handles, s.Handle)
	x.mu.Unlock()
	if !live {
		return nil
	}
	x.teardowns.Add(1)
	x.live.Add(-1)
	return x.Executor.Teardown(ctx, s)
}

func plan(t *testing.T, snap *state.Snapshot, replace ...string) *planner.Plan {
	t.Helper()
	cfg, diags := lang.LoadSource(t.TempDir(), "main.hcl", []byte(testSpec), lang.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	p, diags := planner.Build(cfg, snap, planner.Options{Replace: replace, Version: "test"})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return p
}

func apply(t *testing.T, dir string, x executor.Executor, ctx context.Context, par int) (*executor.Outcome, []executor.Event) {
	t.Helper()
	st, err := state.Open(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := plan(t, st.Snapshot())
	var events []executor.Event
	r := &executor.Runner{Store: st, Parallelism: par, Events: func(e executor.Event) { events = append(events, e) },
		Open: func(context.Context, string, map[string]any) (executor.Executor, error) { return x, nil }}
	out, err := r.Apply(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return out, events
}

func actions(p *planner.Plan) string {
	var s []string
	for _, l := range p.Lanes {
		s = append(s, fmt.Sprintf("%s:%s:%d", l.Model, l.Action, l.RunsDone))
	}
	return strings.Join(s, " ")
}

func TestApplyRunsEverythingThenNothing(t *testing.T) {
	dir := t.TempDir()
	x := newSimExec()
	out, events := apply(t, dir, x, context.Background(), 2)
	if out.Err() != nil || out.RunsCompleted != 4 || out.Interrupted {
		t.Fatalf("outcome: %+v", out)
	}
	if x.deploys.Load() != 2 || x.teardowns.Load() != 2 || x.live.Load() != 0 {
		t.Fatalf("deploys %d teardowns %d live %d", x.deploys.Load(), x.teardowns.Load(), x.live.Load())
	}
	types := map[string]int{}
	for _, e := range events {
		types[e.Type]++
	}
	if types[executor.EventRunFinished] != 4 || types[executor.EventLaneStarted] != 2 || types[executor.EventLaneFinished] != 2 || types[executor.EventApplyFinished] != 1 {
		t.Fatalf("events: %v", types)
	}
	snap, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := plan(t, snap)
	if got := actions(p); got != "a:noop:2 b:noop:2" {
		t.Fatalf("plan after apply: %s", got)
	}
	for _, l := range snap.Lanes {
		for _, r := range l.Results {
			if !strings.Contains(string(r.Summary), `"succeeded":6`) {
				t.Errorf("lane %s run %d summary: %s", l.ID, r.Run, r.Summary)
			}
		}
	}
	if _, err := state.LoadPlan(dir); err != nil {
		t.Fatal(err)
	}
	// Applying the no-op plan deploys nothing.
	out, _ = apply(t, dir, x, context.Background(), 2)
	if out.RunsCompleted != 0 || x.deploys.Load() != 2 {
		t.Fatalf("second apply did work: %+v, deploys %d", out, x.deploys.Load())
	}
}

func TestInterruptedApplyResumesWithoutRepeating(t *testing.T) {
	dir := t.TempDir()
	x := newSimExec()
	ctx, cancel := context.WithCancel(context.Background())
	var seen atomic.Int32
	x.onRun = func(r executor.RunSpec) {
		// Interrupt during the third run: two are complete by then.
		if seen.Add(1) == 3 {
			cancel()
		}
	}
	out, _ := apply(t, dir, x, ctx, 1)
	if !out.Interrupted || out.RunsCompleted != 2 {
		t.Fatalf("outcome: %+v", out)
	}
	if x.live.Load() != 0 || x.deploys.Load() != x.teardowns.Load() {
		t.Fatalf("left running: deploys %d teardowns %d", x.deploys.Load(), x.teardowns.Load())
	}
	snap, _ := state.Load(dir)
	if got := actions(plan(t, snap)); got != "a:noop:2 b:run:0" {
		t.Fatalf("plan after interruption: %s", got)
	}
	x.onRun = nil
	out, _ = apply(t, dir, x, context.Background(), 1)
	if out.Err() != nil || out.RunsCompleted != 2 {
		t.Fatalf("resume: %+v", out)
	}
	for k, n := range x.runs {
		// The interrupted run is redone; nothing else is repeated.
		if n > 1 && !strings.HasSuffix(k, "/1") {
			t.Errorf("run %s ran %d times", k, n)
		}
	}
	snap, _ = state.Load(dir)
	if got := actions(plan(t, snap)); got != "a:noop:2 b:noop:2" {
		t.Fatalf("plan after resume: %s", got)
	}
}

type panicky struct{ *simExec }

func (p panicky) Run(ctx context.Context, s *executor.Server, r executor.RunSpec) (*executor.RunResult, error) {
	if r.Run == 2 {
		panic("boom")
	}
	return p.simExec.Run(ctx, s, r)
}

func TestExecutorPanicIsAnErrorAndTearsDown(t *testing.T) {
	dir := t.TempDir()
	x := newSimExec()
	out, _ := apply(t, dir, panicky{x}, context.Background(), 2)
	var pe *executor.PanicError
	if !errors.As(out.Err(), &pe) || !strings.Contains(out.Err().Error(), "run 2 of lane") {
		t.Fatalf("want a PanicError naming the run, got %v", out.Err())
	}
	if x.live.Load() != 0 || x.teardowns.Load() != 2 {
		t.Fatalf("not torn down: live %d", x.live.Load())
	}
	snap, _ := state.Load(dir)
	if got := actions(plan(t, snap)); got != "a:run:1 b:run:1" {
		t.Fatalf("plan after panic: %s", got)
	}
}

func TestParallelismBoundsDeployments(t *testing.T) {
	for _, par := range []int{1, 2} {
		x := newSimExec()
		out, _ := apply(t, t.TempDir(), x, context.Background(), par)
		if out.Err() != nil {
			t.Fatal(out.Err())
		}
		if got := x.maxLive.Load(); got > int32(par) {
			t.Errorf("parallelism %d: %d deployments were up at once", par, got)
		}
	}
}

func TestReplaceRerunsLane(t *testing.T) {
	dir := t.TempDir()
	x := newSimExec()
	apply(t, dir, x, context.Background(), 2)
	snap, _ := state.Load(dir)
	var id string
	for _, l := range plan(t, snap).Lanes {
		if l.Model == "a" {
			id = l.ID
		}
	}
	st, _ := state.Open(dir, "test")
	p := plan(t, st.Snapshot(), id)
	if got := actions(p); got != "a:rerun:0 b:noop:2" {
		st.Close()
		t.Fatalf("replace plan: %s", got)
	}
	r := &executor.Runner{Store: st, Open: func(context.Context, string, map[string]any) (executor.Executor, error) { return x, nil }}
	out, err := r.Apply(context.Background(), p)
	st.Close()
	if err != nil || out.RunsCompleted != 2 {
		t.Fatalf("%v %+v", err, out)
	}
	if x.runs[id+"/1"] != 2 || x.runs[id+"/2"] != 2 {
		t.Fatalf("lane %s runs: %v", id, x.runs)
	}
	snap, _ = state.Load(dir)
	if got := actions(plan(t, snap)); got != "a:noop:2 b:noop:2" {
		t.Fatalf("after replace: %s", got)
	}
}

// fingerprint is what must not depend on interruptions: per lane and run,
// every request's index, token counts and status.
func fingerprint(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for id, l := range snap.Lanes {
		for _, r := range l.Results {
			f, err := os.Open(r.RecordsPath)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := loadgen.ReadRecords(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, rec := range recs {
				fmt.Fprintf(&b, "%d:%d/%d/%d/%d/%d ", rec.Index, rec.InputTokens, rec.PromptTokens, rec.MaxTokens, rec.OutputTokens, rec.Status)
			}
			out[fmt.Sprintf("%s/%d", id, r.Run)] = b.String()
		}
	}
	return out
}

func TestResumedApplyRecordsWhatAnUninterruptedOneDoes(t *testing.T) {
	whole := t.TempDir()
	if out, _ := apply(t, whole, newSimExec(), context.Background(), 1); out.Err() != nil {
		t.Fatal(out.Err())
	}
	split := t.TempDir()
	x := newSimExec()
	ctx, cancel := context.WithCancel(context.Background())
	var seen atomic.Int32
	x.onRun = func(executor.RunSpec) {
		if seen.Add(1) == 2 {
			cancel()
		}
	}
	apply(t, split, x, ctx, 1)
	x.onRun = nil
	if out, _ := apply(t, split, x, context.Background(), 1); out.Err() != nil {
		t.Fatal(out.Err())
	}
	a, b := fingerprint(t, whole), fingerprint(t, split)
	if len(a) != 4 || len(a) != len(b) {
		t.Fatalf("runs: %d vs %d", len(a), len(b))
	}
	for k, v := range a {
		if b[k] != v {
			t.Errorf("run %s differs:\n whole %s\n split %s", k, v, b[k])
		}
	}
}

// A panic while opening one deployment's executor is an error like an
// executor's own panic: the other deployment is still torn down.
func TestOpenerPanicIsAnErrorAndTearsDown(t *testing.T) {
	dir := t.TempDir()
	x := newSimExec()
	st, err := state.Open(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var opens atomic.Int32
	r := &executor.Runner{Store: st, Parallelism: 2, Open: func(context.Context, string, map[string]any) (executor.Executor, error) {
		if opens.Add(1) == 2 {
			panic("factory bug")
		}
		return x, nil
	}}
	out, err := r.Apply(context.Background(), plan(t, st.Snapshot()))
	if err != nil {
		t.Fatal(err)
	}
	var pe *executor.PanicError
	if !errors.As(out.Err(), &pe) || pe.Op != "Open" {
		t.Fatalf("want a PanicError in Open, got %v", out.Err())
	}
	if x.live.Load() != 0 || x.teardowns.Load() != 1 || out.RunsCompleted != 2 {
		t.Fatalf("live %d teardowns %d outcome %+v", x.live.Load(), x.teardowns.Load(), out)
	}
}
