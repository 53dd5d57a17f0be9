package modal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/workload"
	"github.com/zclconf/go-cty/cty"
)

// Published Modal prices for CPU sandboxes (per physical core and per GiB
// of memory, per second; verify before relying on them), and the figures
// the estimate assumes until a run has measured its own (see
// ProfileCalibration).
const (
	CPUCorePricePerSecond   = 0.0000131
	MemoryGiBPricePerSecond = 0.00000222
	// DefaultScanRowsPerCoreSecond is the full-scan rate of one core:
	// `profile trace --all --workers 1` measured 1.8-2.0M rows/s on the
	// 20M-row bench trace (docs/benchmarks.md); a sandbox's core may be
	// slower or faster, which a run's calibration corrects.
	DefaultScanRowsPerCoreSecond = 1.9e6
	// S3BytesPerSecond is what one sandbox is assumed to fetch from S3 with
	// 8 ranged GETs in flight.
	S3BytesPerSecond = 100e6
	// DefaultShardStartSeconds is the assumed cost of starting a sandbox
	// and copying the binary in.
	DefaultShardStartSeconds = 15.0
)

// ProfileCalibration is what sharded profiles measured of their sandboxes:
// the scan rate per core (rows over the shards' scan time times their
// cores) and the start-up (a sandbox's lifetime less its scan). The next
// estimate uses it instead of the defaults, as the GPU estimates use a
// calibration from evidence. A run's own measurement has Runs 1; what
// LoadProfileCalibration returns is the median of the last
// MaxCalibrationRuns runs' rates and start-ups (Runs of them), so one run
// slowed by a busy host does not move the next estimate with it.
type ProfileCalibration struct {
	RowsPerCoreSecond float64 `json:"rows_per_core_second"`
	StartSeconds      float64 `json:"start_seconds"`
	// Shards and Rows are what the latest run measured them on; CPU the
	// cores per sandbox; MeasuredAt when (RFC 3339).
	Shards     int     `json:"shards"`
	Rows       int64   `json:"rows"`
	CPU        float64 `json:"cpu"`
	MeasuredAt string  `json:"measured_at"`
	// Runs is how many runs' measurements the rate and start-up are the
	// median of (0 in a file: one).
	Runs int `json:"-"`
}

// MaxCalibrationRuns is how many runs' measurements the calibration file
// keeps; the estimate takes their median.
const MaxCalibrationRuns = 5

// DefaultProfileCalibration is the estimate's assumption before any run.
func DefaultProfileCalibration() ProfileCalibration {
	return ProfileCalibration{RowsPerCoreSecond: DefaultScanRowsPerCoreSecond, StartSeconds: DefaultShardStartSeconds}
}

// calibrationFile is the calibration file: the last runs' measurements,
// oldest first. A file of one measurement (what earlier versions wrote)
// reads as one run.
type calibrationFile struct {
	Runs []ProfileCalibration `json:"runs"`
}

// readCalibrationRuns reads the runs a calibration file keeps; a missing
// file has none.
func readCalibrationRuns(path string) ([]ProfileCalibration, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f calibrationFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.Runs) == 0 {
		var one ProfileCalibration
		if err := json.Unmarshal(data, &one); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		f.Runs = []ProfileCalibration{one}
	}
	for _, c := range f.Runs {
		if !(c.RowsPerCoreSecond > 0) || !(c.StartSeconds >= 0) || math.IsInf(c.RowsPerCoreSecond+c.StartSeconds, 0) {
			return nil, fmt.Errorf("%s: rows_per_core_second %v and start_seconds %v are not a measured rate and start-up; delete the file to use the defaults", path, c.RowsPerCoreSecond, c.StartSeconds)
		}
	}
	return f.Runs, nil
}

// LoadProfileCalibration reads the runs AddProfileCalibration kept and
// returns their median rate and start-up, with the latest run's shards,
// rows, cores and time; a missing file is (nil, nil).
func LoadProfileCalibration(path string) (*ProfileCalibration, error) {
	runs, err := readCalibrationRuns(path)
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	c := runs[len(runs)-1]
	rates, starts := make([]float64, len(runs)), make([]float64, len(runs))
	for i, r := range runs {
		rates[i], starts[i] = r.RowsPerCoreSecond, r.StartSeconds
	}
	c.RowsPerCoreSecond, c.StartSeconds, c.Runs = median(rates), median(starts), len(runs)
	return &c, nil
}

// median is the middle value of xs (the mean of the two middle ones for
// an even count); xs is sorted in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// AddProfileCalibration adds a run's measurement c to the file at path
// (made with its directory when missing), keeping the last
// MaxCalibrationRuns runs. A file it cannot read is left as it is, with
// the error.
func AddProfileCalibration(path string, c *ProfileCalibration) error {
	runs, err := readCalibrationRuns(path)
	if err != nil {
		return err
	}
	one := *c
	one.Runs = 0
	runs = append(runs, one)
	if len(runs) > MaxCalibrationRuns {
		runs = runs[len(runs)-MaxCalibrationRuns:]
	}
	data, err := json.MarshalIndent(calibrationFile{Runs: runs}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeAtomic(path, append(data, '\n'))
}

// DefaultProfileImage is the image shard sandboxes run: small, with CA
// certificates for S3 (the infercrane binary is static).
const DefaultProfileImage = "alpine:3.20"

// ProfileJob is a sharded trace profile fanned out over Modal CPU sandboxes:
// each shard runs `infercrane profile shard` on its part of the row groups
// and returns its mergeable state on stdout.
type ProfileJob struct {
	// Options say what to profile; Source must be readable from inside a
	// sandbox (s3://, or any path under the local stand-in).
	Options workload.Options
	// Shards is how many sandboxes split the row groups.
	Shards int
	// Binary is the linux/amd64 infercrane binary copied into each sandbox.
	Binary string
	// Dir keeps each finished shard's result (shard-I-of-N.json). Results
	// already there for the same object and options are reused, so a
	// rerun resumes where a failed or interrupted one stopped.
	Dir string
	// App, Environment and Image of the sandboxes (defaults: DefaultApp,
	// the profile's, DefaultProfileImage).
	App, Environment, Image string
	// CPU is the physical cores per sandbox (default 2); MemoryMiB its
	// memory (default 2048).
	CPU       float64
	MemoryMiB int
	// Secrets are Modal Secret names injected into every sandbox (for
	// example AWS credentials of a private bucket).
	Secrets []string
	// Timeout bounds one shard's sandbox (default 1h).
	Timeout time.Duration
	// Attempts is how many sandboxes a shard may use before the job fails
	// (default 3).
	Attempts int
	// Parallel is the most sandboxes at once (default: Shards).
	Parallel int
	// Progress receives progress lines (nil: none).
	Progress func(line string)
	// Now stamps the merged profile (nil: time.Now).
	Now func() time.Time
	// Calibration is what the estimate assumes of the sandboxes (nil:
	// DefaultProfileCalibration).
	Calibration *ProfileCalibration
}

func (j *ProfileJob) defaults() {
	if j.App == "" {
		j.App = DefaultApp
	}
	if j.Image == "" {
		j.Image = DefaultProfileImage
	}
	if j.CPU <= 0 {
		j.CPU = 2
	}
	if j.MemoryMiB <= 0 {
		j.MemoryMiB = 2048
	}
	if j.Timeout <= 0 {
		j.Timeout = time.Hour
	}
	if j.Attempts <= 0 {
		j.Attempts = 3
	}
	if j.Parallel <= 0 {
		j.Parallel = j.Shards
	}
}

// ProfileEstimate is what a sharded profile is expected to cost.
type ProfileEstimate struct {
	Shards int
	Rows   int64
	// Bytes is the projected column data to fetch (an upper bound).
	Bytes int64
	// WallSeconds is the slowest shard's expected time; SandboxSeconds the
	// sum over shards (what Modal bills); CoreSeconds that times the cores
	// per sandbox (reserved, billed whether used or not); CPUSeconds the
	// CPU time the scans themselves are expected to use.
	WallSeconds, SandboxSeconds, CoreSeconds, CPUSeconds float64
	CostUSD                                              float64
	// Calibration is the rate and start-up the estimate assumed.
	Calibration ProfileCalibration
}

// sandboxPrice is the price of one sandbox-second.
func (j *ProfileJob) sandboxPrice() float64 {
	return j.CPU*CPUCorePricePerSecond + float64(j.MemoryMiB)/1024*MemoryGiBPricePerSecond
}

// Estimate predicts the job's time and cost from the trace's footer: each
// shard scans its rows at the calibration's rate per core or fetches its
// bytes at S3BytesPerSecond, whichever is slower, after the calibration's
// start-up.
func (j ProfileJob) Estimate(plan *workload.ShardPlan) ProfileEstimate {
	j.defaults()
	c := DefaultProfileCalibration()
	if j.Calibration != nil {
		c = *j.Calibration
	}
	e := ProfileEstimate{Shards: len(plan.Parts), Calibration: c}
	for i := range plan.Parts {
		rows, bytes := plan.Rows[i], plan.Bytes[i]
		e.Rows += rows
		e.Bytes += bytes
		s := c.StartSeconds + math.Max(float64(rows)/(c.RowsPerCoreSecond*j.CPU), float64(bytes)/S3BytesPerSecond)
		e.WallSeconds = math.Max(e.WallSeconds, s)
		e.SandboxSeconds += s
		e.CPUSeconds += float64(rows) / c.RowsPerCoreSecond
	}
	e.CoreSeconds = e.SandboxSeconds * j.CPU
	e.CostUSD = e.SandboxSeconds * j.sandboxPrice()
	return e
}

// Summary says, in one sentence, what the estimate expects and from what.
func (e ProfileEstimate) Summary() string {
	from := "the defaults; a run measures its own"
	if c := e.Calibration; c.MeasuredAt != "" {
		from = fmt.Sprintf("measured by a run of %d shards at %s", c.Shards, c.MeasuredAt)
		if c.Runs > 1 {
			from = fmt.Sprintf("the median of %d runs' measurements, the last of %d shards at %s", c.Runs, c.Shards, c.MeasuredAt)
		}
	}
	return fmt.Sprintf("%.0f s wall, %.0f sandbox-seconds (%.0f core-seconds reserved and billed), %.0f CPU-seconds of scanning, $%.4f (at %.0f rows/s per core and %.0f s start-up per sandbox, %s; %.0f MB/s of S3 per sandbox)",
		e.WallSeconds, e.SandboxSeconds, e.CoreSeconds, e.CPUSeconds, e.CostUSD, e.Calibration.RowsPerCoreSecond, e.Calibration.StartSeconds, from, S3BytesPerSecond/1e6)
}

// CalibrationFile is where a sharded profile run from dir keeps what it
// measured for the next estimate.
func CalibrationFile(dir string) string {
	return filepath.Join(dir, ".infercrane", "profile-calibration.json")
}

// ProfileReport is a finished sharded profile.
type ProfileReport struct {
	Result *workload.Result
	// Reused counts shards taken from Dir; Attempts is, per shard, the
	// sandboxes it used (0 when reused).
	Reused   int
	Attempts []int
	// WallSeconds is the job's time; SandboxSeconds the sandboxes' summed
	// lifetimes (what Modal bills), CoreSeconds that times their cores
	// (reserved); CPUSeconds the CPU time the shards' scans used, as their
	// processes measured it (shards run this time only).
	WallSeconds, SandboxSeconds, CoreSeconds, CPUSeconds float64
	CostUSD                                              float64
	// Measured is the calibration this run measured (nil when every shard
	// was reused).
	Measured *ProfileCalibration
}

// ShardFile is where shard index of shards is kept in a job's Dir.
func ShardFile(dir string, index, shards int) string {
	return filepath.Join(dir, fmt.Sprintf("shard-%d-of-%d.json", index, shards))
}

// RunProfile runs the job's missing shards on cloud, retrying a failed
// shard in a fresh sandbox, saves each result in Dir as it arrives, and
// merges them. Every sandbox it creates is terminated before it returns,
// whatever happens (failure, cancellation); `infercrane cleanup` finds
// any a killed process left (tags infercrane=1, profile=JOB).
func RunProfile(ctx context.Context, cloud Cloud, job ProfileJob, plan *workload.ShardPlan) (*ProfileReport, error) {
	job.defaults()
	if job.Shards != len(plan.Parts) {
		return nil, fmt.Errorf("modal profile: the plan has %d shards, the job %d", len(plan.Parts), job.Shards)
	}
	if err := os.MkdirAll(job.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("modal profile: %w", err)
	}
	start := time.Now()
	rep := &ProfileReport{Attempts: make([]int, job.Shards)}
	shards := make([]*workload.Shard, job.Shards)
	var todo []int
	for i := range job.Shards {
		if s := reuseShard(job, plan, i); s != nil {
			shards[i] = s
			rep.Reused++
			job.note("shard %d/%d: reusing %s", i, job.Shards, ShardFile(job.Dir, i, job.Shards))
			continue
		}
		todo = append(todo, i)
	}
	id := randomID()
	var (
		meas     measurement
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
		// Per-shard sums, added up in shard order after the wait so
		// that the totals do not depend on which shard finished first
		// (float addition is not associative).
		sandboxSecs = make([]float64, job.Shards)
		lifetimes   = make([]float64, job.Shards)
	)
	sem := make(chan struct{}, job.Parallel)
	for _, i := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			s, attempts, secs, last, err := runShard(ctx, cloud, job, id, i)
			mu.Lock()
			defer mu.Unlock()
			rep.Attempts[i] = attempts
			sandboxSecs[i] = secs
			if err != nil {
				failures = append(failures, err.Error())
				return
			}
			shards[i] = s
			lifetimes[i] = last
		}()
	}
	wg.Wait()
	for _, i := range todo { // ascending: the shards this run started
		rep.SandboxSeconds += sandboxSecs[i]
		if shards[i] != nil {
			rep.CPUSeconds += shards[i].CPUSeconds
			meas.add(plan.Rows[i], shards[i].WallSeconds, lifetimes[i])
		}
	}
	rep.WallSeconds = time.Since(start).Seconds()
	rep.CoreSeconds = rep.SandboxSeconds * job.CPU
	rep.CostUSD = rep.SandboxSeconds * job.sandboxPrice()
	rep.Measured = meas.calibration(job.CPU, time.Now())
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("modal profile: interrupted (%w); the finished shards are saved in %s and a rerun of the same command resumes from them", err, job.Dir)
	}
	if len(failures) > 0 {
		slices.Sort(failures)
		return rep, fmt.Errorf("modal profile: %d of %d shards failed after %d attempts each; the finished shards are saved in %s and a rerun resumes from them:\n  %s",
			len(failures), job.Shards, job.Attempts, job.Dir, strings.Join(failures, "\n  "))
	}
	res, err := workload.Merge(shards, job.Now)
	if err != nil {
		return rep, fmt.Errorf("modal profile: merging the shards: %w", err)
	}
	rep.Result = res
	return rep, nil
}

// Summary says what the run cost: billed sandbox time, reserved cores and
// the CPU time the scans used, and what it measured.
func (r *ProfileReport) Summary() string {
	out := fmt.Sprintf("%.1f sandbox-seconds (%.1f core-seconds reserved and billed), %.1f CPU-seconds used by the scans, $%.4f",
		r.SandboxSeconds, r.CoreSeconds, r.CPUSeconds, r.CostUSD)
	if m := r.Measured; m != nil {
		out += fmt.Sprintf("; measured %.0f rows/s per core and %.1f s start-up per sandbox", m.RowsPerCoreSecond, m.StartSeconds)
	}
	return out
}

// saveCalibration keeps what a run measured for the next estimate.
func (j *ProfileJob) saveCalibration(path string, rep *ProfileReport) {
	if rep == nil || rep.Measured == nil {
		return
	}
	if err := AddProfileCalibration(path, rep.Measured); err != nil {
		j.note("saving the measured calibration: %v", err)
	}
}

func (j *ProfileJob) note(format string, args ...any) {
	if j.Progress != nil {
		j.Progress(fmt.Sprintf(format, args...))
	}
}

// reuseShard returns shard i from the job's Dir when it was made from the
// same object, with the same options, as the job asks.
func reuseShard(job ProfileJob, plan *workload.ShardPlan, i int) *workload.Shard {
	data, err := os.ReadFile(ShardFile(job.Dir, i, job.Shards))
	if err != nil {
		return nil
	}
	s, err := workload.ParseShard(data)
	if err != nil || s.Index != i || s.Shards != job.Shards || !s.Matches(job.Options, plan.Identity) || !slices.Equal(s.RowGroups, plan.Parts[i]) {
		return nil
	}
	return s
}

// runShard runs shard i, in a new sandbox per attempt, and saves it. It
// returns the attempts, the sandbox-seconds of all of them and the
// lifetime of the one that succeeded.
func runShard(ctx context.Context, cloud Cloud, job ProfileJob, id string, i int) (*workload.Shard, int, float64, float64, error) {
	var last error
	var secs float64
	for attempt := 1; attempt <= job.Attempts; attempt++ {
		if ctx.Err() != nil {
			return nil, attempt - 1, secs, 0, ctx.Err()
		}
		s, took, err := shardAttempt(ctx, cloud, job, id, i, attempt)
		secs += took
		if err == nil {
			data, err := workload.EncodeShard(s)
			if err == nil {
				err = writeAtomic(ShardFile(job.Dir, i, job.Shards), data)
			}
			if err != nil {
				return nil, attempt, secs, 0, fmt.Errorf("shard %d/%d: saving its result: %w", i, job.Shards, err)
			}
			job.note("shard %d/%d: done in %.1fs (attempt %d)", i, job.Shards, took, attempt)
			return s, attempt, secs, took, nil
		}
		last = err
		job.note("shard %d/%d: attempt %d of %d failed: %v", i, job.Shards, attempt, job.Attempts, err)
	}
	return nil, job.Attempts, secs, 0, fmt.Errorf("shard %d/%d: %w", i, job.Shards, last)
}

// measurement sums what the shards of a run measured, for its calibration.
type measurement struct {
	shards             int
	rows               int64
	scanSecs, lifeSecs float64
}

// add records a shard of rows that scanned for scan seconds in a sandbox
// that lived life seconds.
func (m *measurement) add(rows int64, scan, life float64) {
	m.shards++
	m.rows += rows
	m.scanSecs += scan
	m.lifeSecs += life
}

// calibration is the rate and start-up measured (nil: nothing measured).
func (m *measurement) calibration(cpu float64, now time.Time) *ProfileCalibration {
	if m.shards == 0 || !(m.scanSecs > 0) || m.rows == 0 {
		return nil
	}
	return &ProfileCalibration{
		RowsPerCoreSecond: float64(m.rows) / (m.scanSecs * cpu), StartSeconds: max(0, (m.lifeSecs-m.scanSecs)/float64(m.shards)),
		Shards: m.shards, Rows: m.rows, CPU: cpu, MeasuredAt: now.UTC().Format(time.RFC3339), Runs: 1,
	}
}

// shardAttempt runs shard i once in a fresh sandbox and always terminates
// it; it returns the sandbox's lifetime in seconds.
func shardAttempt(ctx context.Context, cloud Cloud, job ProfileJob, id string, i, attempt int) (*workload.Shard, float64, error) {
	spec := SandboxSpec{
		App: job.App, Environment: job.Environment, Image: job.Image,
		CPU: job.CPU, MemoryMiB: job.MemoryMiB,
		Command: []string{"sleep", strconv.Itoa(int(job.Timeout.Seconds()) + 60)},
		Secrets: append([]string(nil), job.Secrets...),
		Timeout: job.Timeout, IdleTimeout: job.Timeout,
		Tags: map[string]string{
			TagInfercrane: "1", TagProfile: id, TagShard: fmt.Sprintf("%d/%d", i, job.Shards),
			TagCreatedAt: time.Now().UTC().Format(time.RFC3339),
		},
	}
	var sb Sandbox
	err := retry(ctx, DefaultCapacityBackoff, isCapacity, func(n int, w time.Duration, err error) {
		job.note("shard %d/%d: no capacity yet (%v); retrying in %s", i, job.Shards, err, w)
	}, func() error {
		var err error
		sb, err = cloud.Create(ctx, spec)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("creating a sandbox: %w", err)
	}
	born := time.Now()
	defer func() {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := retry(tctx, DefaultTerminateBackoff, always, nil, func() error { return sb.Terminate(tctx) }); err != nil {
			job.note("shard %d/%d: terminating sandbox %s failed: %v; run `infercrane cleanup`", i, job.Shards, sb.ID(), err)
		}
	}()
	lifetime := func() float64 { return time.Since(born).Seconds() }
	if err := sb.CopyIn(ctx, job.Binary, RemoteCLI); err != nil {
		return nil, lifetime(), fmt.Errorf("sandbox %s: copying the infercrane binary in: %w", sb.ID(), err)
	}
	if _, errOut, code, err := execOutput(ctx, sb, []string{"chmod", "755", RemoteCLI}, time.Minute); err != nil || code != 0 {
		return nil, lifetime(), fmt.Errorf("sandbox %s: chmod of the binary failed (code %d, %v): %s", sb.ID(), code, err, clip(errOut, 200))
	}
	argv := append([]string{RemoteCLI}, ShardArgs(job.Options, i, job.Shards, max(1, int(math.Ceil(job.CPU))))...)
	p, err := sb.Exec(ctx, argv, ExecOptions{Timeout: job.Timeout})
	if err != nil {
		return nil, lifetime(), fmt.Errorf("sandbox %s: starting the shard: %w", sb.ID(), err)
	}
	var stdout bytes.Buffer
	stderr := &tail{n: 10}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); copyAll(&stdout, p.Stdout()) }()
	go func() {
		defer wg.Done()
		if p.Stderr() == nil {
			return
		}
		(&runLog{}).copyLines("", p.Stderr(), func(line string) {
			stderr.add(line)
			job.note("shard %d/%d (sandbox %s, attempt %d): %s", i, job.Shards, sb.ID(), attempt, line)
		})
	}()
	code, werr := p.Wait(ctx)
	wg.Wait()
	switch {
	case ctx.Err() != nil:
		return nil, lifetime(), ctx.Err()
	case werr != nil:
		return nil, lifetime(), fmt.Errorf("sandbox %s: %w; last output: %s", sb.ID(), werr, stderr.String())
	case code == 137:
		return nil, lifetime(), fmt.Errorf("sandbox %s: the shard was killed (exit code 137: preemption, out of memory or the sandbox's timeout); last output: %s", sb.ID(), stderr.String())
	case code != 0:
		out := stderr.String()
		if out == "" {
			out = clip(stdout.String(), 400)
		}
		return nil, lifetime(), fmt.Errorf("sandbox %s: the shard exited with code %d; last output: %s", sb.ID(), code, out)
	}
	s, err := workload.ParseShard(bytes.TrimSpace(stdout.Bytes()))
	if err != nil {
		return nil, lifetime(), fmt.Errorf("sandbox %s: the shard's output is unreadable (%v); it starts %q", sb.ID(), err, clip(stdout.String(), 200))
	}
	if s.Index != i || s.Shards != job.Shards {
		return nil, lifetime(), fmt.Errorf("sandbox %s: asked for shard %d/%d, got %d/%d", sb.ID(), i, job.Shards, s.Index, s.Shards)
	}
	return s, lifetime(), nil
}

// ShardArgs is the `infercrane profile shard` command line (after the
// binary) for shard index of shards of o, reading with workers workers:
// every option that changes the profile (workload.ShardOptions.Args), then
// how to read the source.
func ShardArgs(o workload.Options, index, shards, workers int) []string {
	a := []string{"profile", "shard", "--shard", fmt.Sprintf("%d/%d", index, shards), "--workers", strconv.Itoa(workers)}
	a = append(a, o.ShardOptions().Args()...)
	for _, f := range []struct{ flag, v string }{{"--region", o.Read.Region}, {"--endpoint", o.Read.Endpoint}} {
		if f.v != "" {
			a = append(a, f.flag, f.v)
		}
	}
	if o.Read.Anonymous {
		a = append(a, "--anonymous")
	}
	if o.Read.PathStyle {
		a = append(a, "--path-style")
	}
	return append(a, o.Source)
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func randomID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// SpecTraceJob says how a spec's trace block with a modal executor is
// profiled: the executor block's attributes, the cloud and the binary.
type SpecTraceJob struct {
	// Attrs are the modal executor block's attributes (app, environment,
	// secrets, timeout, binary are used).
	Attrs map[string]cty.Value
	// Cloud connects to Modal for an environment.
	Cloud func(environment string) (Cloud, error)
	// Progress receives progress lines (nil: none).
	Progress func(line string)
}

// ResolveTrace profiles a spec trace that names a modal executor: the scan
// is split into the sample's shards, run on Modal CPU sandboxes as
// RunProfile does (saved shards under SPECDIR/.infercrane/profile-shards/
// resume a failed run), and the merged profile is cached like any
// unpinned trace's.
func ResolveTrace(ctx context.Context, t *lang.Trace, specDir string, ro workload.ReadOptions, j SpecTraceJob) (cty.Value, hcl.Diagnostics) {
	fail := func(attr string, err error) (cty.Value, hcl.Diagnostics) {
		rng := t.DeclRange
		if r, ok := t.AttrRanges[attr]; ok {
			rng = r
		}
		return cty.DynamicVal, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot profile trace " + t.Name + " on Modal",
			Detail: err.Error() + "\nOr pin a profile: run `infercrane profile trace` and set profile and digest in the trace block.", Subject: rng.Ptr()}}
	}
	settings := t.Executor.Settings
	if settings == nil {
		m, err := ctyAttrs(t.Executor.Attrs)
		if err != nil {
			return fail("executor", err)
		}
		settings = m
	}
	// The spec language resolved the block with this schema when it had
	// it; resolving again is the same settings.
	cfg, err := ParseConfig(Schema().Resolve(settings))
	if err != nil {
		return fail("executor", err)
	}
	cloud, err := j.Cloud(cfg.Environment)
	if err != nil {
		return fail("executor", err)
	}
	doc, err := workload.ProfileCachedBy(ctx, t, specDir, ro, func(ctx context.Context, o workload.Options) (*workload.Result, error) {
		plan, err := workload.PlanShards(ctx, o, t.Sample.Shards)
		if err != nil {
			return nil, err
		}
		job := ProfileJob{Options: o, Shards: t.Sample.Shards, App: cfg.App, Environment: cfg.Environment, Secrets: cfg.Secrets,
			Timeout: cfg.Timeout, Progress: j.Progress,
			Dir: filepath.Join(specDir, ".infercrane", "profile-shards", workload.ShardKey(plan.Identity, o, t.Sample.Shards))}
		if job.Binary, err = ResolveBinary(cfg.Binary); err != nil {
			return nil, err
		}
		calFile := CalibrationFile(specDir)
		if job.Calibration, err = LoadProfileCalibration(calFile); err != nil {
			return nil, err
		}
		est := job.Estimate(plan)
		job.note("profiling trace %s on %d Modal CPU sandboxes: %d rows, estimated %s", t.Name, job.Shards, est.Rows, est.Summary())
		rep, err := RunProfile(ctx, cloud, job, plan)
		job.saveCalibration(calFile, rep)
		if err != nil {
			return nil, err
		}
		job.note("profiled trace %s: %s", t.Name, rep.Summary())
		return rep.Result, nil
	})
	if err != nil {
		return fail("source", err)
	}
	return workload.Resolved(t, doc), nil
}

// ctyAttrs converts an executor block's attributes to plain values.
func ctyAttrs(attrs map[string]cty.Value) (map[string]any, error) {
	out := map[string]any{}
	for name, v := range attrs {
		if !v.IsWhollyKnown() {
			return nil, fmt.Errorf("executor attribute %s is not known yet", name)
		}
		x, err := lang.JSONValue(v)
		if err != nil {
			return nil, err
		}
		if x != nil {
			out[name] = x
		}
	}
	return out, nil
}
