package modal_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infercrane/infercrane/planner/workload"
	"github.com/infercrane/infercrane/planner/workload/synth"
	"github.com/infercrane/infercrane/plugins/modal"
	"github.com/infercrane/infercrane/plugins/modal/localcloud"
)

// A full scan sharded over local stand-in sandboxes (real processes: the
// infercrane binary is copied in and `profile shard` runs there) merges to
// the bytes of the single-process scan, also when one shard's sandbox is
// killed under it and the shard is retried in a new one; no sandbox is left
// running; a rerun reuses the saved shards; a shard that fails every
// attempt fails the job, and the next run resumes from the others.
func TestShardedProfileOnLocalCloud(t *testing.T) {
	buildBinary(t)
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.parquet")
	f, err := os.Create(trace)
	if err != nil {
		t.Fatal(err)
	}
	if err := synth.Write(f, synth.Options{Rows: 40_000, RowsPerGroup: 4_000, Seed: 21}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	now := func() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) }
	o := workload.Options{Source: trace, All: true, MaxContext: 8192, Now: now}
	single, err := workload.Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := workload.Encode(single.Document)

	cloud := localcloud.New(filepath.Join(dir, "cloud"), bin)
	var creates atomic.Int64
	var mu sync.Mutex
	killed := map[string]bool{}
	failShard := ""
	cloud.Hooks.BeforeCreate = func(modal.SandboxSpec) error { creates.Add(1); return nil }
	cloud.Hooks.AfterExec = func(id string, argv []string) {
		mu.Lock()
		defer mu.Unlock()
		if shardOf(argv) == "1/3" && !killed["1/3"] {
			killed["1/3"] = true
			cloud.Kill(id) // preempted while the shard runs
		}
	}
	cloud.Hooks.BeforeExec = func(id string, argv []string) error {
		mu.Lock()
		defer mu.Unlock()
		if failShard != "" && shardOf(argv) == failShard {
			return errors.New("injected: exec refused")
		}
		return nil
	}
	ctx := context.Background()
	plan, err := workload.PlanShards(ctx, o, 3)
	if err != nil {
		t.Fatal(err)
	}
	job := modal.ProfileJob{Options: o, Shards: 3, Binary: bin, Dir: filepath.Join(dir, "shards"), Now: now, CPU: 1,
		Progress: func(line string) { t.Log(line) }}
	if e := job.Estimate(plan); e.Rows != 40_000 || e.CostUSD <= 0 || e.CPUSeconds <= 0 {
		t.Errorf("estimate %+v", e)
	}
	rep, err := modal.RunProfile(ctx, cloud, job, plan)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := workload.Encode(rep.Result.Document)
	if !bytes.Equal(got, want) {
		t.Fatalf("sharded profile differs from the single-process scan:\n%s\n%s", got, want)
	}
	if !killed["1/3"] || !slices.Equal(rep.Attempts, []int{1, 2, 1}) || creates.Load() != 4 {
		t.Errorf("attempts %v, %d sandboxes created: want shard 1 killed and retried once", rep.Attempts, creates.Load())
	}
	if rep.SandboxSeconds <= 0 || rep.CostUSD <= 0 {
		t.Errorf("report %+v", rep)
	}
	// CPU-seconds are what the scans used (their processes' rusage), not
	// the sandboxes' lifetimes times their cores (reserved: CoreSeconds).
	var used float64
	for i := range 3 {
		s, err := workload.ParseShard(mustRead(t, modal.ShardFile(job.Dir, i, 3)))
		if err != nil {
			t.Fatal(err)
		}
		used += s.CPUSeconds
	}
	if rep.CoreSeconds != rep.SandboxSeconds*job.CPU || rep.CPUSeconds != used || used <= 0 || rep.CPUSeconds >= rep.CoreSeconds {
		t.Errorf("CPU-seconds used %v (shards say %v), core-seconds reserved %v of %v sandbox-seconds", rep.CPUSeconds, used, rep.CoreSeconds, rep.SandboxSeconds)
	}
	// The run measured its rate and start-up (measured on the local
	// stand-in here), and the next estimate uses them.
	m := rep.Measured
	if m == nil || m.RowsPerCoreSecond <= 0 || m.StartSeconds < 0 || m.Shards != 3 || m.Rows != 40_000 {
		t.Fatalf("measured calibration %+v", m)
	}
	calFile := filepath.Join(dir, "calibration.json")
	if err := modal.AddProfileCalibration(calFile, m); err != nil {
		t.Fatal(err)
	}
	loaded, err := modal.LoadProfileCalibration(calFile)
	if err != nil || m.Runs != 1 || *loaded != *m {
		t.Fatalf("calibration read back %+v, %v", loaded, err)
	}
	calibrated := job
	calibrated.Calibration = loaded
	if e := calibrated.Estimate(plan); e.Calibration != *m || !strings.Contains(e.Summary(), "measured by a run of 3 shards") {
		t.Errorf("calibrated estimate %+v: %s", e, e.Summary())
	}
	if left := cloud.Running(); len(left) > 0 {
		t.Fatalf("sandboxes left running: %v", left)
	}

	// A rerun reuses every saved shard and starts nothing.
	creates.Store(0)
	rep, err = modal.RunProfile(ctx, cloud, job, plan)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := workload.Encode(rep.Result.Document); !bytes.Equal(got, want) || rep.Reused != 3 || creates.Load() != 0 {
		t.Errorf("rerun: reused %d, created %d sandboxes, same bytes %v", rep.Reused, creates.Load(), bytes.Equal(got, want))
	}

	// A shard failing every attempt fails the job; the rest are kept and
	// the next run resumes from them.
	job.Dir = filepath.Join(dir, "shards-2")
	job.Attempts = 2
	mu.Lock()
	failShard = "2/3"
	mu.Unlock()
	_, err = modal.RunProfile(ctx, cloud, job, plan)
	if err == nil || !strings.Contains(err.Error(), "shard 2/3") || !strings.Contains(err.Error(), "a rerun resumes") {
		t.Fatalf("failing shard: %v", err)
	}
	for i, wantFile := range []bool{true, true, false} {
		if _, err := os.Stat(modal.ShardFile(job.Dir, i, 3)); (err == nil) != wantFile {
			t.Errorf("shard %d saved: %v, want %v", i, err == nil, wantFile)
		}
	}
	if left := cloud.Running(); len(left) > 0 {
		t.Fatalf("sandboxes left running after a failed job: %v", left)
	}
	mu.Lock()
	failShard = ""
	mu.Unlock()
	creates.Store(0)
	rep, err = modal.RunProfile(ctx, cloud, job, plan)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := workload.Encode(rep.Result.Document); !bytes.Equal(got, want) || rep.Reused != 2 || creates.Load() != 1 {
		t.Errorf("resume: reused %d, created %d, same bytes %v", rep.Reused, creates.Load(), bytes.Equal(got, want))
	}

	// Interrupted (Ctrl-C) while shards run: every sandbox is terminated
	// before RunProfile returns, and it says how to resume.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cloud.Hooks.AfterExec = func(id string, argv []string) {
		if shardOf(argv) != "" {
			cancel()
		}
	}
	job.Dir = filepath.Join(dir, "shards-3")
	_, err = modal.RunProfile(cctx, cloud, job, plan)
	if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "resumes") {
		t.Fatalf("interrupted job: %v", err)
	}
	if left := cloud.Running(); len(left) > 0 {
		t.Fatalf("sandboxes left running after an interrupted job: %v", left)
	}
}

func shardOf(argv []string) string {
	for i, a := range argv {
		if a == "--shard" && i+1 < len(argv) {
			return argv[i+1]
		}
	}
	return ""
}
