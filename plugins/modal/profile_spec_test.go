package modal_test

import (
	"bytes"
	"context"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/zclconf/go-cty/cty"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/workload"
	"github.com/infercrane/infercrane/planner/workload/synth"
	"github.com/infercrane/infercrane/plugins/modal"
	"github.com/infercrane/infercrane/plugins/modal/localcloud"
)

// An unpinned spec trace naming a modal executor is profiled by shards on
// (stand-in) Modal sandboxes reading the object from an S3 protocol server,
// gives the single-process profile's statistics, is cached like any
// unpinned trace (with every sample option: quantiles = true gives the
// quantiles), and a non-modal executor or a local file is refused.
func TestSpecTraceProfiledByModalExecutor(t *testing.T) {
	buildBinary(t)
	var data bytes.Buffer
	if err := synth.Write(&data, synth.Options{Rows: 30_000, RowsPerGroup: 3_000, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	backend := s3mem.New()
	backend.CreateBucket("traces")
	if _, err := backend.PutObject("traces", "t.parquet", map[string]string{}, bytes.NewReader(data.Bytes()), int64(data.Len()), nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	ro := workload.ReadOptions{Endpoint: srv.URL, PathStyle: true, Anonymous: true, Region: "us-east-1"}

	dir := t.TempDir()
	cloud := localcloud.New(filepath.Join(dir, "cloud"), bin)
	var creates int
	cloud.Hooks.BeforeCreate = func(modal.SandboxSpec) error { creates++; return nil }
	spec := `
executor "m" {
  type    = "modal"
  app     = "profiles"
  timeout = "10m"
  binary  = "BIN"
}
trace "t" {
  source   = "s3://traces/t.parquet"
  executor = executor.m
  sample {
    all       = true
    quantiles = true
    shards    = 3
  }
}
`
	spec = strings.Replace(spec, "BIN", bin, 1)
	// load is the CLI's loadResolved: the planner's trace step with the
	// modal fan-out as profiler between two decodes.
	load := func(src string) (*lang.Config, hcl.Diagnostics) {
		return workload.LoadSpec(func(o lang.Options) (*lang.Config, hcl.Diagnostics) {
			return lang.LoadSource(dir, "main.hcl", []byte(src), o)
		}, lang.Options{}, func(ctx context.Context, tr *lang.Trace, specDir string) (cty.Value, hcl.Diagnostics) {
			if tr.Executor == nil {
				return workload.Resolve(ctx, tr, specDir, ro)
			}
			return modal.ResolveTrace(ctx, tr, specDir, ro, modal.SpecTraceJob{
				Attrs: tr.Executor.Attrs, Cloud: func(string) (modal.Cloud, error) { return cloud, nil },
				Progress: func(line string) { t.Log(line) },
			})
		})
	}
	cfg, diags := load(spec)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	single, err := workload.Build(context.Background(), workload.Options{Source: "s3://traces/t.parquet", Read: ro, All: true, Quantiles: true})
	if err != nil {
		t.Fatal(err)
	}
	v := cfg.Traces["t"].Value
	if !v.IsWhollyKnown() || v.GetAttr("input_tokens").GetAttr("p50").AsBigFloat().String() != cty.NumberFloatVal(single.Document.Distributions.InputTokens.Percentiles.P50).AsBigFloat().String() {
		t.Fatalf("trace value %#v, want input p50 %v", v, single.Document.Distributions.InputTokens.Percentiles.P50)
	}
	if creates != 3 {
		t.Errorf("%d sandboxes for 3 shards", creates)
	}
	if left := cloud.Running(); len(left) > 0 {
		t.Errorf("left running: %v", left)
	}
	cached, _ := filepath.Glob(filepath.Join(dir, ".infercrane", "profiles", "*.json"))
	if len(cached) != 1 {
		t.Fatalf("cached profiles %v", cached)
	}
	doc, _, err := workload.Parse(mustRead(t, cached[0]))
	if len(doc.Distributions.InputTokens.Quantiles) == 0 {
		t.Errorf("quantiles = true, but the profile has no distributions.*.quantiles")
	}
	if err != nil || !reflect.DeepEqual(doc.Distributions, single.Document.Distributions) || doc.Traffic.Functions[0] != single.Document.Traffic.Functions[0] {
		t.Fatalf("cached profile %v: %+v", err, doc.Distributions)
	}
	// Loaded again: the cached profile, no sandbox.
	if _, diags := load(spec); diags.HasErrors() || creates != 3 {
		t.Fatalf("second load: %v, %d sandboxes", diags, creates)
	}

	for _, bad := range []struct{ from, to, says string }{
		{`type    = "modal"`, `type    = "sim"`, "only a modal executor profiles a trace"},
		{`all       = true`, `row_groups = 3`, "set all = true (a full scan) or sketch = true"},
		{`source   = "s3://traces/t.parquet"`, `source   = "t.parquet"`, "cannot see t.parquet on this machine"},
		{`executor = executor.m`, ``, "sample.shards splits the scan over an executor's sandboxes"},
	} {
		_, diags := load(strings.Replace(spec, bad.from, bad.to, 1))
		if !diags.HasErrors() || !strings.Contains(diags.Error(), bad.says) {
			t.Errorf("%s -> %s: %v, want %q", bad.from, bad.to, diags, bad.says)
		}
	}
}

// The estimate is the calibration's arithmetic: per shard, start-up plus
// its rows at the rate per core times the cores (or its bytes at the S3
// rate, when slower); CPU-seconds are the rows at the rate per core, and
// core-seconds the sandbox-seconds times the cores. Uncalibrated, it
// assumes the measured single-core rate (1.9M rows/s), not 4M.
func TestProfileEstimateFromCalibration(t *testing.T) {
	plan := &workload.ShardPlan{Parts: [][]int{{0}, {1}}, Rows: []int64{4_000_000, 2_000_000}, Bytes: []int64{1e6, 1e6}}
	job := modal.ProfileJob{Shards: 2, CPU: 2, MemoryMiB: 1024, Calibration: &modal.ProfileCalibration{RowsPerCoreSecond: 1e6, StartSeconds: 5, Shards: 4, MeasuredAt: "2026-12-02T03:00:00Z"}}
	e := job.Estimate(plan)
	if e.WallSeconds != 7 || e.SandboxSeconds != 7+6 || e.CoreSeconds != 26 || e.CPUSeconds != 6 {
		t.Errorf("estimate %+v", e)
	}
	if want := 13 * (2*modal.CPUCorePricePerSecond + modal.MemoryGiBPricePerSecond); math.Abs(e.CostUSD-want) > 1e-12 {
		t.Errorf("cost %v, want %v", e.CostUSD, want)
	}
	job.Calibration = nil
	if e := job.Estimate(plan); math.Abs(e.CPUSeconds-6e6/1.9e6) > 1e-9 || !strings.Contains(e.Summary(), "the defaults") {
		t.Errorf("uncalibrated estimate %+v: %s", e, e.Summary())
	}
	for _, bad := range []string{`{"rows_per_core_second": 0, "start_seconds": 1}`, `{"rows_per_core_second": 1e6, "start_seconds": -1}`, `not json`} {
		p := filepath.Join(t.TempDir(), "c.json")
		os.WriteFile(p, []byte(bad), 0o644)
		if _, err := modal.LoadProfileCalibration(p); err == nil {
			t.Errorf("calibration %s accepted", bad)
		}
	}
	if c, err := modal.LoadProfileCalibration(filepath.Join(t.TempDir(), "none.json")); c != nil || err != nil {
		t.Errorf("missing calibration: %v, %v", c, err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The calibration file keeps the last MaxCalibrationRuns runs and the
// estimate takes their median rate and start-up: one run slowed by a busy
// host (a third of the rate, twice the start-up) does not move it. Before,
// the file held the last run alone and the estimate followed it. A file of
// one measurement, as earlier versions wrote it, reads as one run.
func TestProfileCalibrationIsTheMedianOfRecentRuns(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cal", "profile-calibration.json")
	run := func(rate, start float64, at string) *modal.ProfileCalibration {
		return &modal.ProfileCalibration{RowsPerCoreSecond: rate, StartSeconds: start, Shards: 2, Rows: 1000, CPU: 1, MeasuredAt: at, Runs: 1}
	}
	for i, r := range []*modal.ProfileCalibration{
		run(9e6, 9, "2026-12-02T00:00:00Z"), // pushed out by the later five
		run(2.0e6, 0.3, "2026-12-02T01:00:00Z"), run(1.9e6, 0.2, "2026-12-02T02:00:00Z"),
		run(2.1e6, 0.25, "2026-12-02T03:00:00Z"), run(1.8e6, 0.3, "2026-12-02T04:00:00Z"),
		run(0.6e6, 0.6, "2026-12-02T05:00:00Z"), // the disturbed one, last
	} {
		if err := modal.AddProfileCalibration(p, r); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	c, err := modal.LoadProfileCalibration(p)
	if err != nil {
		t.Fatal(err)
	}
	want := modal.ProfileCalibration{RowsPerCoreSecond: 1.9e6, StartSeconds: 0.3, Shards: 2, Rows: 1000, CPU: 1, MeasuredAt: "2026-12-02T05:00:00Z", Runs: modal.MaxCalibrationRuns}
	if *c != want {
		t.Errorf("calibration %+v, want the median of the last %d runs %+v", *c, modal.MaxCalibrationRuns, want)
	}
	job := modal.ProfileJob{Shards: 1, CPU: 1, Calibration: c}
	if s := job.Estimate(&workload.ShardPlan{Parts: [][]int{{0}}, Rows: []int64{1}, Bytes: []int64{1}}).Summary(); !strings.Contains(s, "the median of 5 runs' measurements, the last of 2 shards at 2026-12-02T05:00:00Z") {
		t.Errorf("estimate does not say what it is from: %s", s)
	}

	// Two runs: the mean of the two.
	two := filepath.Join(t.TempDir(), "two.json")
	modal.AddProfileCalibration(two, run(2e6, 0.2, "a"))
	modal.AddProfileCalibration(two, run(1e6, 0.4, "b"))
	if c, err := modal.LoadProfileCalibration(two); err != nil || c.RowsPerCoreSecond != 1.5e6 || math.Abs(c.StartSeconds-0.3) > 1e-12 || c.Runs != 2 {
		t.Errorf("two runs: %+v, %v", c, err)
	}

	// The one-measurement file of earlier versions is one run, and the
	// next run is added to it.
	old := filepath.Join(t.TempDir(), "old.json")
	os.WriteFile(old, []byte(`{"rows_per_core_second": 1500000, "start_seconds": 0.5, "shards": 3, "rows": 10, "cpu": 2, "measured_at": "x"}`), 0o644)
	if c, err := modal.LoadProfileCalibration(old); err != nil || c.RowsPerCoreSecond != 1.5e6 || c.StartSeconds != 0.5 || c.Runs != 1 || c.Shards != 3 {
		t.Errorf("one-measurement file: %+v, %v", c, err)
	}
	if err := modal.AddProfileCalibration(old, run(2.5e6, 0.5, "y")); err != nil {
		t.Fatal(err)
	}
	if c, err := modal.LoadProfileCalibration(old); err != nil || c.RowsPerCoreSecond != 2e6 || c.Runs != 2 || c.MeasuredAt != "y" {
		t.Errorf("one-measurement file and a run: %+v, %v", c, err)
	}

	// A file it cannot read is left as it is.
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"runs": [{"rows_per_core_second": 0, "start_seconds": 1}]}`), 0o644)
	if err := modal.AddProfileCalibration(bad, run(2e6, 0.2, "z")); err == nil {
		t.Error("a run was added to an unreadable calibration file")
	}
	if b, _ := os.ReadFile(bad); !strings.Contains(string(b), `"rows_per_core_second": 0`) {
		t.Errorf("unreadable calibration file rewritten: %s", b)
	}
}
