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
// Modal cloud is reachable here). Every run profiles the same trace in a
// fresh shard directory and adds what it measured to a calibration file,
// as `profile trace --shards` does; calibrationWarmup runs before the
// rounds fill it. Each round is estimated from the file (the median of
// its last runs) and then run. It reports the rounds' median estimated and
// measured sandbox-seconds and the relative error (estimate_error: 0.25 is
// 25% off), its worst round (estimate_error_max) and how many rounds were
// more than 25% off (rounds_over_25pct); the same figures for the estimate
// the previous run's calibration alone gives (last_run_*, what the file
// held before it kept several runs); and the spread of the measured
// sandbox-seconds (measured_max_over_min), the run-to-run variation no
// estimate made before a run can follow. INFERCRANE_BENCH_PROFILE_ROWS
// sets the trace's rows (default 2,000,000). Run it with
//
//	go test -run '^$' -bench BenchmarkProfileEstimate -benchtime 5x ./plugins/modal
func BenchmarkProfileEstimate(b *testing.B) {
	const calibrationWarmup = 3
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
	calFile := filepath.Join(dir, "profile-calibration.json")
	runs := 0
	var last *modal.ProfileCalibration // the previous run's own measurement
	run := func() (median, lastOnly modal.ProfileEstimate, rep *modal.ProfileReport) {
		runs++
		cal, err := modal.LoadProfileCalibration(calFile)
		if err != nil {
			b.Fatal(err)
		}
		job := modal.ProfileJob{Options: o, Shards: 2, Binary: bin, CPU: 1, Dir: filepath.Join(dir, fmt.Sprintf("shards-%d", runs)), Calibration: cal}
		median = job.Estimate(plan)
		job.Calibration = last
		lastOnly = job.Estimate(plan)
		job.Calibration = cal
		if rep, err = modal.RunProfile(b.Context(), cloud, job, plan); err != nil {
			b.Fatal(err)
		}
		if err := modal.AddProfileCalibration(calFile, rep.Measured); err != nil {
			b.Fatal(err)
		}
		last = rep.Measured
		return median, lastOnly, rep
	}
	for range calibrationWarmup {
		run()
	}
	var est, got, errs, lastErrs []float64
	over, lastOver := 0, 0
	relErr := func(e, m float64) float64 { return math.Abs(e-m) / m }
	for b.Loop() {
		e, el, rep := run()
		est, got = append(est, e.SandboxSeconds), append(got, rep.SandboxSeconds)
		errs = append(errs, relErr(e.SandboxSeconds, rep.SandboxSeconds))
		lastErrs = append(lastErrs, relErr(el.SandboxSeconds, rep.SandboxSeconds))
		if errs[len(errs)-1] > 0.25 {
			over++
		}
		if lastErrs[len(lastErrs)-1] > 0.25 {
			lastOver++
		}
		b.Logf("round %d: estimated %.3f sandbox-s (%s), measured %.3f, error %.1f%%; from the previous run alone %.3f, error %.1f%%",
			len(errs), e.SandboxSeconds, e.Summary(), rep.SandboxSeconds, 100*errs[len(errs)-1], el.SandboxSeconds, 100*lastErrs[len(lastErrs)-1])
	}
	med := func(x []float64) float64 { s := slices.Clone(x); slices.Sort(s); return s[len(s)/2] }
	b.ReportMetric(med(est), "est-sandbox-s")
	b.ReportMetric(med(got), "measured-sandbox-s")
	b.ReportMetric(slices.Max(got)/slices.Min(got), "measured_max_over_min")
	b.ReportMetric(med(errs), "estimate_error")
	b.ReportMetric(slices.Max(errs), "estimate_error_max")
	b.ReportMetric(float64(over), "rounds_over_25pct")
	b.ReportMetric(med(lastErrs), "last_run_error")
	b.ReportMetric(slices.Max(lastErrs), "last_run_error_max")
	b.ReportMetric(float64(lastOver), "last_run_over_25pct")
}
