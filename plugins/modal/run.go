package modal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
)

// Run executes one benchmark run with the load generator inside the server's
// sandbox and reads its result (the summary and the server's view from its
// /metrics) and per-request records back.
func (e *Executor) Run(ctx context.Context, s *executor.Server, r executor.RunSpec) (*executor.RunResult, error) {
	if s == nil {
		return nil, errNoSandbox
	}
	dep := e.lookup(s.Handle)
	if dep == nil {
		return nil, fmt.Errorf("%w (sandbox %q); deploy it with this executor first", errNoSandbox, s.Handle)
	}
	records := recordsPath(r)
	load := r.Load
	if load.TraceFile != "" {
		load.TraceFile = tracePath(r)
		if err := dep.sb.CopyIn(ctx, r.Load.TraceFile, load.TraceFile); err != nil {
			return nil, e.runFailure(ctx, dep, r, fmt.Errorf("copying the trace %s in: %w", r.Load.TraceFile, err), "")
		}
	}
	if err := e.copyLoad(ctx, dep, s.Model, load, loadPath(r)); err != nil {
		return nil, e.runFailure(ctx, dep, r, err, "")
	}
	argv := BenchCommand(loadPath(r), records)
	dep.log.note("run %d of lane %s: starting the load generator", r.Run, r.Lane)
	start := e.now()
	p, err := dep.sb.Exec(ctx, argv, ExecOptions{Timeout: e.cfg.Timeout})
	if err != nil {
		return nil, e.runFailure(ctx, dep, r, fmt.Errorf("starting the load generator: %w", err), "")
	}
	var stdout bytes.Buffer
	stderr := &tail{n: 20}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); copyAll(&stdout, p.Stdout()) }()
	go func() {
		defer wg.Done()
		if p.Stderr() != nil {
			dep.log.copyLines("bench", p.Stderr(), func(line string) {
				stderr.add(line)
				if e.progress != nil {
					e.progress(dep.d.ID, fmt.Sprintf("lane %s run %d: %s", r.Lane, r.Run, line))
				}
			})
		}
	}()
	code, werr := p.Wait(ctx)
	wg.Wait()
	elapsed := e.now().Sub(start).Seconds()
	dep.addRunSeconds(elapsed)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("modal executor: run %d of lane %s cancelled: %w", r.Run, r.Lane, ctx.Err())
	}
	if werr != nil {
		return nil, e.runFailure(ctx, dep, r, fmt.Errorf("waiting for the load generator: %w", werr), stderr.String())
	}
	if code != 0 {
		return nil, e.runFailure(ctx, dep, r, fmt.Errorf("the load generator exited with code %d", code), stderr.String())
	}
	res, err := loadgen.ReadResult(bytes.NewReader(stdout.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("modal executor: run %d of lane %s: %v; its output starts %q", r.Run, r.Lane, err, clip(stdout.String(), 200))
	}
	sum := res.Summary
	recs, err := e.readRecords(ctx, dep, records)
	if err != nil {
		return nil, fmt.Errorf("modal executor: run %d of lane %s: %w", r.Run, r.Lane, err)
	}
	if err := checkResult(sum, recs, r.Load.SLO); err != nil {
		return nil, fmt.Errorf("modal executor: run %d of lane %s: %w", r.Run, r.Lane, err)
	}
	dep.log.note("run %d of lane %s: %d of %d requests succeeded in %.1fs", r.Run, r.Lane, sum.Succeeded, sum.Requests, elapsed)
	// The server's view and gauges travel as the local executor's do
	// (RunLoad): the runner keeps them with the run, the evidence
	// reconciles the client's figures with the view, the report draws the
	// gauges.
	return &executor.RunResult{Summary: sum, Records: recs, ServerView: res.ServerView,
		ServerMetrics: res.ServerMetrics, ServerSeries: res.ServerSeries, GPUSeconds: elapsed * float64(dep.gpus)}, nil
}

// copyLoad writes the run's load message to a local file and copies it
// into the sandbox at remote.
func (e *Executor) copyLoad(ctx context.Context, dep *deployed, model string, c loadgen.Config, remote string) error {
	msg, err := LoadMessage(model, c)
	if err != nil {
		return fmt.Errorf("encoding the load: %w", err)
	}
	f, err := os.CreateTemp("", "infercrane-load-*.json")
	if err != nil {
		return fmt.Errorf("writing the load message: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(msg)
	if cerr := f.Close(); werr != nil || cerr != nil {
		return fmt.Errorf("writing the load message: %v", errors.Join(werr, cerr))
	}
	if err := dep.sb.CopyIn(ctx, f.Name(), remote); err != nil {
		return fmt.Errorf("copying the load message in: %w", err)
	}
	return nil
}

// runFailure explains a failed run, telling a killed sandbox apart from a
// failing load generator.
func (e *Executor) runFailure(ctx context.Context, dep *deployed, r executor.RunSpec, err error, stderr string) error {
	if code, exited := e.stopped(ctx, dep); exited {
		err = fmt.Errorf("modal executor: sandbox %s stopped during run %d of lane %s (exit code %d): %w; Modal stops sandboxes at their timeout (%s), on preemption and when out of memory; the server's output is in %s", dep.sb.ID(), r.Run, r.Lane, code, err, e.cfg.Timeout, dep.log.where())
	} else {
		err = fmt.Errorf("modal executor: run %d of lane %s in sandbox %s failed: %w", r.Run, r.Lane, dep.sb.ID(), err)
		if stderr != "" {
			err = fmt.Errorf("%w; its last output:\n%s", err, stderr)
		}
	}
	dep.log.note("%v", err)
	return err
}

// stopped reports whether the sandbox has exited. A sandbox killed under a
// running command may report its exit a moment after the command's stream
// broke, so it asks a few times over about two seconds.
func (e *Executor) stopped(ctx context.Context, dep *deployed) (int, bool) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for i := 0; ; i++ {
		if code, exited, err := dep.sb.Poll(pctx); err == nil && exited {
			return code, true
		}
		if i == 4 {
			return 0, false
		}
		select {
		case <-pctx.Done():
			return 0, false
		case <-time.After(min(e.poll, 500*time.Millisecond)):
		}
	}
}

// readRecords reads a run's JSONL records back out of the sandbox.
func (e *Executor) readRecords(ctx context.Context, dep *deployed, path string) ([]loadgen.Record, error) {
	out, errOut, code, err := execOutput(ctx, dep.sb, []string{"cat", path}, 5*time.Minute)
	if err != nil || code != 0 {
		return nil, fmt.Errorf("reading the records %s back failed (code %d, %v): %s", path, code, err, clip(errOut, 200))
	}
	recs, err := loadgen.ReadRecords(strings.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("the records %s are unreadable: %w", path, err)
	}
	return recs, nil
}

// checkResult catches a summary and records that do not belong together, by
// recomputing the counts from the records.
func checkResult(sum loadgen.Summary, recs []loadgen.Record, slo loadgen.SLO) error {
	re := loadgen.Compute(recs, slo)
	if re.Requests != sum.Requests || re.Succeeded != sum.Succeeded || re.Failed != sum.Failed || re.Cancelled != sum.Cancelled {
		return fmt.Errorf("the summary counts %d requests (%d succeeded, %d failed) but the records hold %d (%d succeeded, %d failed); the results are incomplete", sum.Requests, sum.Succeeded, sum.Failed, re.Requests, re.Succeeded, re.Failed)
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
