package modal_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner/workload"
	"github.com/infercrane/infercrane/planner/workload/synth"
	"github.com/infercrane/infercrane/plugins/modal"
	"github.com/infercrane/infercrane/plugins/modal/localcloud"
)

// BenchmarkRunOverhead measures what the executor adds to a run: the same
// load generator command against the same server, run directly (the
// baseline) and through Executor.Run (exec in the sandbox, progress
// streaming, records read back with cat, parsing and the consistency check).
// It reports both times per run and their ratio.
func BenchmarkRunOverhead(b *testing.B) {
	f := newFixture(b, nil, nil)
	f.cloud.SimArgs = []string{"--ttft", "1ms", "--itl", "1ms"}
	srv, err := f.exec.Deploy(b.Context(), f.deployment("dep1"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.exec.Teardown(b.Context(), srv)
	meta, err := f.cloud.Meta(srv.Handle)
	if err != nil {
		b.Fatal(err)
	}
	l := load(32)
	l.Concurrency = 4
	records := filepath.Join(b.TempDir(), "direct.jsonl")
	msg, err := modal.LoadMessage(srv.Model, l)
	if err != nil {
		b.Fatal(err)
	}
	config := filepath.Join(b.TempDir(), "load.json")
	if err := os.WriteFile(config, msg, 0o644); err != nil {
		b.Fatal(err)
	}
	direct := modal.BenchCommand(config, records)
	direct[0] = loadgenBin
	for i, a := range direct {
		direct[i] = strings.Replace(a, "127.0.0.1:8000", "127.0.0.1:"+strconv.Itoa(meta.Port), 1)
	}
	var baseline, through time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		out, err := exec.Command(direct[0], direct[1:]...).Output()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := loadgen.ReadResult(bytes.NewReader(out)); err != nil {
			b.Fatal(err)
		}
		rf, err := os.Open(records)
		if err != nil {
			b.Fatal(err)
		}
		recs, err := loadgen.ReadRecords(rf)
		rf.Close()
		if err != nil || len(recs) != 32 {
			b.Fatalf("%d records, %v", len(recs), err)
		}
		baseline += time.Since(t0)

		t1 := time.Now()
		res, err := f.exec.Run(b.Context(), srv, executor.RunSpec{Lane: "l", Run: i + 1, Load: l})
		if err != nil || len(res.Records) != 32 {
			b.Fatalf("%v", err)
		}
		through += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(baseline.Milliseconds())/n, "direct-ms/run")
	b.ReportMetric(float64(through.Milliseconds())/n, "executor-ms/run")
	b.ReportMetric(through.Seconds()/baseline.Seconds(), "executor/direct")
}

// BenchmarkProfileEstimate measures how close a sharded profile's estimate
// comes to what the run then costs, on the local stand-in for Modal (real
// processes: the binary copied into each sandbox runs `profile shard`; no
// Modal cloud is reachable here). Each round makes a fresh trace run twice
// in fresh shard directories: the first run measures the calibration, the
// second is estimated from it and run. It reports the second run's
// estimated and measured sandbox-seconds and the relative error
// (estimate_error: 0.25 is 25% off). INFERCRANE_BENCH_PROFILE_ROWS sets the
// trace's rows (default 2,000,000). Run it with
//
//	go test -run '^$' -bench BenchmarkProfileEstimate -benchtime 3x ./plugins/modal
func BenchmarkProfileEstimate(b *testing.B) {
	buildBinary(b)
	rows := 2_000_000
	if v, err := strconv.Atoi(os.Getenv("INFERCRANE_BENCH_PROFILE_ROWS")); err == nil && v > 0 {
		rows = v
	}
	dir := b.TempDir()
	trace := filepath.Join(dir, "trace.parquet")
	f, err := os.Create(trace)
	if err != nil {
		b.Fatal(err)
	}
	if err := synth.Write(f, synth.Options{Rows: int64(rows), RowsPerGroup: 100_000, Seed: 3}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	cloud := localcloud.New(filepath.Join(dir, "cloud"), bin)
	o := workload.Options{Source: trace, All: true}
	plan, err := workload.PlanShards(b.Context(), o, 2)
	if err != nil {
		b.Fatal(err)
	}
	var est, got, errs []float64
	round := 0
	for b.Loop() {
		run := func(cal *modal.ProfileCalibration) (modal.ProfileEstimate, *modal.ProfileReport) {
			round++
			job := modal.ProfileJob{Options: o, Shards: 2, Binary: bin, CPU: 1, Dir: filepath.Join(dir, fmt.Sprintf("shards-%d", round)), Calibration: cal}
			e := job.Estimate(plan)
			rep, err := modal.RunProfile(b.Context(), cloud, job, plan)
			if err != nil {
				b.Fatal(err)
			}
			return e, rep
		}
		_, first := run(nil)
		e, rep := run(first.Measured)
		est, got = append(est, e.SandboxSeconds), append(got, rep.SandboxSeconds)
		errs = append(errs, math.Abs(e.SandboxSeconds-rep.SandboxSeconds)/rep.SandboxSeconds)
	}
	med := func(x []float64) float64 { s := slices.Clone(x); slices.Sort(s); return s[len(s)/2] }
	b.ReportMetric(med(est), "est-sandbox-s")
	b.ReportMetric(med(got), "measured-sandbox-s")
	b.ReportMetric(med(errs), "estimate_error")
	b.ReportMetric(slices.Max(errs), "estimate_error_max")
}
