package modal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
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
// the estimate assumes.
const (
	CPUCorePricePerSecond   = 0.0000131
	MemoryGiBPricePerSecond = 0.00000222
	// ScanRowsPerCoreSecond is the full-scan rate of one core, measured
	// with `make bench-duckdb` (README "Performance"); a sandbox's core may
	// be slower or faster.
	ScanRowsPerCoreSecond = 4.0e6
	// S3BytesPerSecond is what one sandbox is assumed to fetch from S3 with
	// 8 ranged GETs in flight.
	S3BytesPerSecond = 100e6
	// ShardStartSeconds is the assumed cost of starting a sandbox and
	// copying the binary in.
	ShardStartSeconds = 15.0
)

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
	// sum over shards; CPUSeconds that times the cores per sandbox.
	WallSeconds, SandboxSeconds, CPUSeconds float64
	CostUSD                                 float64
}

// sandboxPrice is the price of one sandbox-second.
func (j *ProfileJob) sandboxPrice() float64 {
	return j.CPU*CPUCorePricePerSecond + float64(j.MemoryMiB)/1024*MemoryGiBPricePerSecond
}

// Estimate predicts the job's time and cost from the trace's footer: each
// shard scans its rows at ScanRowsPerCoreSecond per core or fetches its
// bytes at S3BytesPerSecond, whichever is slower, after ShardStartSeconds.
func (j ProfileJob) Estimate(plan *workload.ShardPlan) ProfileEstimate {
	j.defaults()
	e := ProfileEstimate{Shards: len(plan.Parts)}
	for i := range plan.Parts {
		rows, bytes := plan.Rows[i], plan.Bytes[i]
		e.Rows += rows
		e.Bytes += bytes
		s := ShardStartSeconds + math.Max(float64(rows)/(ScanRowsPerCoreSecond*j.CPU), float64(bytes)/S3BytesPerSecond)
		e.WallSeconds = math.Max(e.WallSeconds, s)
		e.SandboxSeconds += s
	}
	e.CPUSeconds = e.SandboxSeconds * j.CPU
	e.CostUSD = e.SandboxSeconds * j.sandboxPrice()
	return e
}

// ProfileReport is a finished sharded profile.
type ProfileReport struct {
	Result *workload.Result
	// Reused counts shards taken from Dir; Attempts is, per shard, the
	// sandboxes it used (0 when reused).
	Reused   int
	Attempts []int
	// WallSeconds is the job's time; SandboxSeconds the sandboxes' summed
	// lifetimes (what Modal bills), CPUSeconds that times their cores.
	WallSeconds, SandboxSeconds, CPUSeconds float64
	CostUSD                                 float64
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
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
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
			s, attempts, secs, err := runShard(ctx, cloud, job, id, i)
			mu.Lock()
			defer mu.Unlock()
			rep.Attempts[i] = attempts
			rep.SandboxSeconds += secs
			if err != nil {
				failures = append(failures, err.Error())
				return
			}
			shards[i] = s
		}()
	}
	wg.Wait()
	rep.WallSeconds = time.Since(start).Seconds()
	rep.CPUSeconds = rep.SandboxSeconds * job.CPU
	rep.CostUSD = rep.SandboxSeconds * job.sandboxPrice()
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

// runShard runs shard i, in a new sandbox per attempt, and saves it.
func runShard(ctx context.Context, cloud Cloud, job ProfileJob, id string, i int) (*workload.Shard, int, float64, error) {
	var last error
	var secs float64
	for attempt := 1; attempt <= job.Attempts; attempt++ {
		if ctx.Err() != nil {
			return nil, attempt - 1, secs, ctx.Err()
		}
		s, took, err := shardAttempt(ctx, cloud, job, id, i, attempt)
		secs += took
		if err == nil {
			data, err := workload.EncodeShard(s)
			if err == nil {
				err = writeAtomic(ShardFile(job.Dir, i, job.Shards), data)
			}
			if err != nil {
				return nil, attempt, secs, fmt.Errorf("shard %d/%d: saving its result: %w", i, job.Shards, err)
			}
			job.note("shard %d/%d: done in %.1fs (attempt %d)", i, job.Shards, took, attempt)
			return s, attempt, secs, nil
		}
		last = err
		job.note("shard %d/%d: attempt %d of %d failed: %v", i, job.Shards, attempt, job.Attempts, err)
	}
	return nil, job.Attempts, secs, fmt.Errorf("shard %d/%d: %w", i, job.Shards, last)
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
		if job.Binary, err = ResolveBinary(cfg.Binary, filepath.Join(specDir, ".infercrane", "bin")); err != nil {
			return nil, err
		}
		est := job.Estimate(plan)
		job.note("profiling trace %s on %d Modal CPU sandboxes: %d rows, estimated %.0f s, %.0f CPU-seconds, $%.4f", t.Name, job.Shards, est.Rows, est.WallSeconds, est.CPUSeconds, est.CostUSD)
		rep, err := RunProfile(ctx, cloud, job, plan)
		if err != nil {
			return nil, err
		}
		job.note("profiled trace %s: %.1f sandbox-seconds, %.1f CPU-seconds, $%.4f", t.Name, rep.SandboxSeconds, rep.CPUSeconds, rep.CostUSD)
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
