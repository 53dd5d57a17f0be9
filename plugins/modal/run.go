package modal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
)

// Run executes one benchmark run with the load generator inside the server's
// sandbox and reads its summary and per-request records back.
func (e *Executor) Run(ctx context.Context, s *executor.Server, r executor.RunSpec) (*executor.RunResult, error) {
	if s == nil {
		return nil, errNoSandbox
	}
	dep := e.lookup(s.Handle)
	if dep == nil {
		return nil, fmt.Errorf("%w (sandbox %q); deploy it with this executor first", errNoSandbox, s.Handle)
	}
	records := recordsPath(r)
	argv := BenchCommand(s.Model, r.Load, records)
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
	var sum loadgen.Summary
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &sum); err != nil {
		return nil, fmt.Errorf("modal executor: run %d of lane %s: the load generator's JSON summary is unreadable (%v); its output starts %q", r.Run, r.Lane, err, clip(stdout.String(), 200))
	}
	recs, err := e.readRecords(ctx, dep, records)
	if err != nil {
		return nil, fmt.Errorf("modal executor: run %d of lane %s: %w", r.Run, r.Lane, err)
	}
	if err := checkResult(sum, recs); err != nil {
		return nil, fmt.Errorf("modal executor: run %d of lane %s: %w", r.Run, r.Lane, err)
	}
	dep.log.note("run %d of lane %s: %d of %d requests succeeded in %.1fs", r.Run, r.Lane, sum.Succeeded, sum.Requests, elapsed)
	return &executor.RunResult{Summary: sum, Records: recs, GPUSeconds: elapsed * float64(dep.gpus)}, nil
}

// runFailure explains a failed run, telling a killed sandbox apart from a
// failing load generator.
func (e *Executor) runFailure(ctx context.Context, dep *deployed, r executor.RunSpec, err error, stderr string) error {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if code, exited, perr := dep.sb.Poll(pctx); perr == nil && exited {
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

// readRecords reads a run's JSONL records back out of the sandbox.
func (e *Executor) readRecords(ctx context.Context, dep *deployed, path string) ([]loadgen.Record, error) {
	out, errOut, code, err := execOutput(ctx, dep.sb, []string{"cat", path}, 5*time.Minute)
	if err != nil || code != 0 {
		return nil, fmt.Errorf("reading the records %s back failed (code %d, %v): %s", path, code, err, clip(errOut, 200))
	}
	var recs []loadgen.Record
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1024*1024), 256*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec loadgen.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("record %d of %s is not valid JSON: %v", n, path, err)
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the records %s: %w", path, err)
	}
	return recs, nil
}

// checkResult catches a summary and records that do not belong together.
func checkResult(sum loadgen.Summary, recs []loadgen.Record) error {
	measured, ok := 0, 0
	for i := range recs {
		if recs[i].Warmup {
			continue
		}
		measured++
		if recs[i].OK() {
			ok++
		}
	}
	if measured != sum.Requests || ok != sum.Succeeded {
		return fmt.Errorf("the summary counts %d requests (%d succeeded) but the records hold %d (%d succeeded); the results are incomplete", sum.Requests, sum.Succeeded, measured, ok)
	}
	if sum.Succeeded+sum.Failed != sum.Requests {
		return errors.New("the summary's succeeded and failed counts do not add up to its requests")
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
