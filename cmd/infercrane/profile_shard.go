package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/infercrane/infercrane/planner/workload"
	"github.com/infercrane/infercrane/plugins/modal"
)

func addProfileShardCommands() {
	register(&command{
		Name:     "profile shard",
		Synopsis: "Profile one shard of a trace's row groups into a mergeable shard result (the fan-out worker)",
		Run:      runProfileShard,
	})
	register(&command{
		Name:     "profile merge",
		Synopsis: "Merge saved shard results into the workload profile a single scan gives",
		Run:      runProfileMerge,
	})
}

// traceFlags are the flags that say what of a trace to profile and how to
// read it, shared by profile trace and profile shard.
type traceFlags struct {
	k, rows, maxCtx, workers *int
	indices                  *string
	all, sketch, quantiles   *bool
	region, endpoint         *string
	anonymous, pathStyle     *bool
	name, license, citation  *string
}

func addTraceFlags(fs *cmdFlags) *traceFlags {
	return &traceFlags{
		k:         fs.Int("row-groups", 0, "profile K row groups spread over 10%..90% of the file (default 3)"),
		indices:   fs.String("row-group-indices", "", "profile these row groups: i,j,k"),
		all:       fs.Bool("all", false, "full scan: every row group, in parallel, with sketch percentiles"),
		sketch:    fs.Bool("sketch", false, "sketch percentiles (within 0.5%) for a sample too: bounded memory, and shardable"),
		quantiles: fs.Bool("quantiles", false, "also write each distribution's quantiles at q = 0.01 ... 0.999 (distributions.*.quantiles), for shapes that draw lengths from the profile"),
		rows:      fs.Int("rows-per-group", 50_000, "inspect the first N rows of each group (0: all; --all reads all unless set)"),
		maxCtx:    fs.Int("max-context", 0, "clip derived shapes to this context window (0: no clipping)"),
		workers:   fs.Int("workers", 4, "row groups read at once"),
		region:    fs.String("region", "", "S3 region (default: AWS configuration, else us-east-1)"),
		anonymous: fs.Bool("anonymous", false, "read a public S3 bucket without credentials"),
		endpoint:  fs.String("endpoint", "", "S3-compatible endpoint URL (default: AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL)"),
		pathStyle: fs.Bool("path-style", false, "address buckets by path (ENDPOINT/BUCKET/KEY); on by default with a custom endpoint"),
		name:      fs.String("name", "", "source name recorded in the profile (default: the file name)"),
		license:   fs.String("license", "", "source license recorded in the profile, e.g. CC-BY-4.0"),
		citation:  fs.String("citation", "", "source citation recorded in the profile"),
	}
}

// options turns the parsed flags into profile options for source.
func (t *traceFlags) options(env *cliEnv, fs *cmdFlags, source string) (workload.Options, int, bool) {
	if code, ok := fs.checkFlags(
		flagRule{!fs.isSet("row-groups") || *t.k >= 1, fmt.Sprintf("--row-groups %d: profile at least 1 row group (leave the flag out for the default 3, or use --all for every one)", *t.k)},
		flagRule{*t.rows >= 0, fmt.Sprintf("--rows-per-group %d: inspect 1 or more leading rows of each group, or 0 for all of them", *t.rows)},
		flagRule{*t.maxCtx >= 0, fmt.Sprintf("--max-context %d: give the context window in tokens (greater than 0), or leave the flag out for no clipping", *t.maxCtx)},
		flagRule{*t.workers >= 1, fmt.Sprintf("--workers %d: read at least 1 row group at once (default 4)", *t.workers)},
	); !ok {
		return workload.Options{}, code, false
	}
	chosen := 0
	for _, set := range []bool{*t.k != 0, *t.indices != "", *t.all} {
		if set {
			chosen++
		}
	}
	if chosen > 1 {
		return workload.Options{}, fs.usageError("use one of --row-groups, --row-group-indices and --all"), false
	}
	o := workload.Options{
		Source: source, RowGroups: *t.k, All: *t.all, Sketch: *t.sketch, Quantiles: *t.quantiles, RowsPerGroup: *t.rows, MaxContext: *t.maxCtx, Workers: *t.workers,
		Name: *t.name, License: *t.license, Citation: *t.citation, Read: s3Options(env, *t.region, *t.anonymous, *t.endpoint, *t.pathStyle),
	}
	if *t.all && !fs.isSet("rows-per-group") {
		o.RowsPerGroup = 0
	}
	if *t.indices != "" {
		for _, part := range strings.Split(*t.indices, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil {
				return o, fs.usageError("--row-group-indices: %q is not an integer; write indices like 0,17,42", part), false
			}
			o.RowGroupIndices = append(o.RowGroupIndices, n)
		}
	}
	return o, exitOK, true
}

func runProfileShard(env *cliEnv, args []string) int {
	fs := newFlags(env, "profile shard", usageDoc{
		Usage: "infercrane profile shard [flags] --shard I/N SOURCE",
		About: "Profiles shard I (0-based) of N of the row groups profile trace would read with the same flags,\n" +
			"and prints its mergeable result (sketch bucket counts, exact counts and sums) as one JSON line.\n" +
			"profile trace --shards N runs these on Modal; profile merge combines saved results.",
		Examples: []string{
			"infercrane profile shard --all --shard 0/4 trace.parquet --out shard-0.json",
			"infercrane profile merge shard-*.json --out profiles/trace.json",
		},
	})
	tf := addTraceFlags(fs)
	shard := fs.String("shard", "", "this shard, I/N (0 <= I < N)")
	out := fs.outFile("out", "", "write the shard result to FILE (default: stdout)")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageError("give exactly one SOURCE (a .parquet path or s3://bucket/key), got %d", len(pos))
	}
	i, n, err := parseShard(*shard)
	if err != nil {
		return fs.usageError("--shard: %v", err)
	}
	o, code, ok := tf.options(env, fs, pos[0])
	if !ok {
		return code
	}
	o.Progress = func(p workload.Progress) {
		if p.GroupsDone < p.GroupsTotal {
			fmt.Fprintf(env.Stderr, "row groups %d/%d, %d rows\n", p.GroupsDone, p.GroupsTotal, p.RowsInspected)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	defer scanGC()()
	s, err := workload.BuildShard(ctx, o, i, n)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane profile shard: %v\n", hinted(err))
		return 1
	}
	data, err := workload.EncodeShard(s)
	if err == nil && *out != "" {
		err = os.WriteFile(*out, data, 0o644)
	} else if err == nil {
		_, err = env.Stdout.Write(data)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane profile shard: %v\n", hinted(err))
		return 1
	}
	return 0
}

// parseShard reads "I/N".
func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%q is not I/N (for example 0/4)", s)
	}
	if n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("shard %d of %d does not exist: I is 0..N-1", i, n)
	}
	return i, n, nil
}

func runProfileMerge(env *cliEnv, args []string) int {
	fs := newFlags(env, "profile merge", usageDoc{
		Usage: "infercrane profile merge [flags] SHARD.json...",
		About: "Merges the shard results of one sharded profile (profile shard, or the files profile trace --shards\n" +
			"saves) into the workload profile a single scan gives, byte for byte, in any order. Every shard must\n" +
			"be given once, from the same object and flags.",
		Examples: []string{
			"infercrane profile merge shard-0.json shard-1.json shard-2.json --out profiles/trace.json",
			"infercrane profile merge .infercrane/profile-shards/KEY/shard-*-of-4.json",
		},
	})
	out := fs.outFile("out", "", "write the profile document to FILE")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return fs.usageError("give the shard result files to merge")
	}
	var shards []*workload.Shard
	for _, p := range pos {
		data, err := os.ReadFile(p)
		if err == nil {
			var s *workload.Shard
			if s, err = workload.ParseShard(data); err == nil {
				shards = append(shards, s)
			}
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "infercrane profile merge: %s: %v\n", p, err)
			return 1
		}
	}
	res, err := workload.Merge(shards, sourceDateEpoch(env))
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane profile merge: %v\n", hinted(err))
		return 1
	}
	return writeProfile(env, "profile merge", res, shards[0].Options.MaxContext, *out)
}

// modalProfileFlags configure profile trace --shards.
type modalProfileFlags struct {
	dir, image, app, environment, binary, secrets *string
	cpu                                           *float64
	memory, attempts, parallel                    *int
	timeout                                       *time.Duration
	dryRun                                        *bool
}

func addModalProfileFlags(fs *cmdFlags) *modalProfileFlags {
	return &modalProfileFlags{
		dir:         fs.String("shard-dir", "", "keep shard results here; a rerun reuses them (default .infercrane/profile-shards/KEY)"),
		image:       fs.String("modal-image", modal.DefaultProfileImage, "image of the shard sandboxes"),
		app:         fs.String("modal-app", "infercrane", "Modal app of the shard sandboxes"),
		environment: fs.String("modal-environment", "", "Modal environment (default: the profile's)"),
		binary:      fs.String("modal-binary", "", "linux/amd64 infercrane binary to copy in (default: this one, or a fresh build)"),
		secrets:     fs.String("modal-secrets", "", "Modal Secrets for the sandboxes, comma-separated (e.g. AWS credentials)"),
		cpu:         fs.Float64("modal-cpu", 2, "physical cores per shard sandbox"),
		memory:      fs.Int("modal-memory", 2048, "MiB of memory per shard sandbox"),
		attempts:    fs.Int("attempts", 3, "sandboxes a shard may use before the profile fails"),
		parallel:    fs.Int("parallel", 0, "most shard sandboxes at once (0: all shards)"),
		timeout:     fs.Duration("modal-timeout", time.Hour, "lifetime limit of one shard sandbox"),
		dryRun:      fs.Bool("dry-run", false, "with --shards: print the plan and the estimate, start nothing"),
	}
}

// rules are the ranges of the sandbox flags.
func (mf *modalProfileFlags) rules() []flagRule {
	return []flagRule{
		{*mf.cpu > 0, fmt.Sprintf("--modal-cpu %g: give a shard sandbox more than 0 cores (default 2)", *mf.cpu)},
		{*mf.memory >= 1, fmt.Sprintf("--modal-memory %d: give a shard sandbox 1 MiB of memory or more (default 2048)", *mf.memory)},
		{*mf.attempts >= 1, fmt.Sprintf("--attempts %d: a shard needs at least 1 attempt (default 3)", *mf.attempts)},
		{*mf.parallel >= 0, fmt.Sprintf("--parallel %d: give the most sandboxes at once, or 0 for all shards", *mf.parallel)},
		{*mf.timeout > 0, fmt.Sprintf("--modal-timeout %s: give a sandbox lifetime above 0 (default 1h)", *mf.timeout)},
	}
}

// runProfileShards is profile trace --shards N: estimate, fan out, merge.
func runProfileShards(env *cliEnv, o workload.Options, n int, mf *modalProfileFlags, out string) int {
	fail := func(err error) int {
		fmt.Fprintf(env.Stderr, "infercrane profile trace: %v\n", hinted(err))
		return 1
	}
	if !strings.HasPrefix(o.Source, "s3://") && !env.Wire.ModalSeesLocalFiles {
		return fail(fmt.Errorf("--shards reads the trace from S3 inside each Modal sandbox, and %s is a local file; upload it to a bucket, or profile it here without --shards", o.Source))
	}
	if err := env.Wire.modalCredentials(nil, env.Getenv); err != nil {
		return fail(err)
	}
	cloud, err := env.Wire.modalCloud(*mf.environment)
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	plan, err := workload.PlanShards(ctx, o, n)
	if err != nil {
		return fail(err)
	}
	job := modal.ProfileJob{
		Options: o, Shards: n, Dir: *mf.dir, App: *mf.app, Environment: *mf.environment, Image: *mf.image,
		CPU: *mf.cpu, MemoryMiB: *mf.memory, Timeout: *mf.timeout, Attempts: *mf.attempts, Parallel: *mf.parallel, Now: o.Now,
		Progress: func(line string) { fmt.Fprintln(env.Stderr, line) },
	}
	if *mf.secrets != "" {
		job.Secrets = strings.Split(*mf.secrets, ",")
	}
	if job.Dir == "" {
		job.Dir = filepath.Join(".infercrane", "profile-shards", workload.ShardKey(plan.Identity, o, n))
	}
	calFile := modal.CalibrationFile(".")
	if job.Calibration, err = modal.LoadProfileCalibration(calFile); err != nil {
		return fail(err)
	}
	est := job.Estimate(plan)
	fmt.Fprintf(env.Stdout, "Sharded profile: %s rows in %d row groups over %d Modal CPU sandboxes (%g cores, %d MiB each).\n",
		profThousands(est.Rows), len(plan.RowGroups), n, *mf.cpu, *mf.memory)
	fmt.Fprintf(env.Stdout, "Estimate: %s.\n", est.Summary())
	if *mf.dryRun {
		return 0
	}
	if job.Binary, err = modal.ResolveBinary(*mf.binary); err != nil {
		return fail(err)
	}
	rep, err := modal.RunProfile(ctx, cloud, job, plan)
	if rep != nil {
		fmt.Fprintf(env.Stdout, "Ran %d shards (%d reused from %s) in %.1f s: %s.\n", n-rep.Reused, rep.Reused, job.Dir, rep.WallSeconds, rep.Summary())
		if rep.Measured != nil {
			if err := modal.AddProfileCalibration(calFile, rep.Measured); err != nil {
				fmt.Fprintf(env.Stderr, "infercrane profile trace: saving the measured calibration: %v\n", err)
			} else {
				fmt.Fprintf(env.Stdout, "Added the measured rate and start-up to %s for the next estimate (the median of its last runs).\n", calFile)
			}
		}
	}
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(env.Stdout)
	return writeProfile(env, "profile trace", rep.Result, o.MaxContext, out)
}
