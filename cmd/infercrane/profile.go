package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/infercrane/infercrane/planner/workload"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// addProfileCommands registers the commands of this file (called by setupCommands).
func addProfileCommands() {
	register(&command{
		Name:     "profile trace",
		Synopsis: "Profile a Parquet serving trace (local or s3://) into a digest-pinned workload profile",
		Run:      runProfileTrace,
	})
	register(&command{
		Name:     "profile validate",
		Synopsis: "Check a workload profile document and print its digest and shapes",
		Run:      runProfileValidate,
	})
}

func runProfileTrace(env *cliEnv, args []string) int {
	fs := newFlags(env, "profile trace", usageDoc{
		Usage: "infercrane profile trace [flags] SOURCE",
		About: "Profiles a Parquet serving trace into a digest-pinned workload profile. SOURCE is a Parquet\n" +
			"file path or s3://BUCKET/KEY; only the footer and the needed column chunks are read.",
		Examples: []string{
			"infercrane profile trace trace.parquet --out profiles/trace.json",
			"infercrane profile trace s3://harvardsys-datasets/2026_chutes_anonymized/chutes_trace.parquet --anonymous --region us-east-1 --out profiles/chutes.json",
			"infercrane profile trace trace.parquet --all --max-context 8192",
		},
	})
	tf := addTraceFlags(fs)
	out := fs.outFile("out", "", "write the profile document to FILE")
	shards := fs.Int("shards", 0, "fan the scan out over N Modal CPU sandboxes (needs --all or --sketch; 0: this process)")
	mf := addModalProfileFlags(fs)
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageError("give exactly one SOURCE (a .parquet path or s3://bucket/key), got %d", len(pos))
	}
	o, code, ok := tf.options(env, fs, pos[0])
	if !ok {
		return code
	}
	rules := append([]flagRule{{*shards >= 0, fmt.Sprintf("--shards %d: give 1 or more shards, or 0 to scan in this process", *shards)}}, mf.rules()...)
	if code, ok := fs.checkFlags(rules...); !ok {
		return code
	}
	o.Now = sourceDateEpoch(env)
	if *shards > 0 {
		return runProfileShards(env, o, *shards, mf, *out)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	finish := func() {}
	if o.All {
		o.Progress, finish = profileProgress(env)
	}
	defer scanGC()()
	res, err := workload.Build(ctx, o)
	finish()
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane profile trace: %v\n", hinted(err))
		return 1
	}
	return writeProfile(env, "profile trace", res, o.MaxContext, *out)
}

// scanGCPercent is the garbage collector's target while a trace is scanned.
// The Parquet decoder allocates about 100 bytes a row (dictionaries grown
// batch by batch; page buffers are pooled, see workload's bufferPool) over
// a small live heap, so at the default
// 100 the collector runs every few row groups; at 400 a full scan takes
// about 15% less CPU for about twice the (row-count-independent) peak
// memory: ~140 instead of ~70 MiB with one worker.
const scanGCPercent = 400

// scanGC sets the collector's target for a scan and returns what restores
// it.
func scanGC() func() {
	old := debug.SetGCPercent(scanGCPercent)
	return func() { debug.SetGCPercent(old) }
}

// writeProfile saves the document to out (when set) and prints the summary.
func writeProfile(env *cliEnv, cmd string, res *workload.Result, maxCtx int, out string) int {
	if out != "" {
		data, err := workload.Encode(res.Document)
		if err == nil {
			err = os.WriteFile(out, data, 0o644)
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "infercrane %s: write %s: %v\n", cmd, out, err)
			return 1
		}
	}
	renderProfile(env.Stdout, res, maxCtx)
	if out != "" {
		fmt.Fprintf(env.Stdout, "\nWrote %s\n", out)
	}
	fmt.Fprintf(env.Stdout, "digest %s\n", res.Document.Digest)
	return 0
}

// sourceDateEpoch stamps profiles with SOURCE_DATE_EPOCH (seconds since
// the epoch) when it is set, for reproducible documents; else the clock.
func sourceDateEpoch(env *cliEnv) func() time.Time {
	v := env.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return func() time.Time { return time.Unix(n, 0) }
}

// s3Options reads the S3 flags, falling back to the standard environment.
func s3Options(env *cliEnv, region string, anonymous bool, endpoint string, pathStyle bool) workload.ReadOptions {
	if endpoint == "" {
		endpoint = env.Getenv("AWS_ENDPOINT_URL_S3")
	}
	if endpoint == "" {
		endpoint = env.Getenv("AWS_ENDPOINT_URL")
	}
	if endpoint != "" {
		pathStyle = true
	}
	return workload.ReadOptions{Region: region, Anonymous: anonymous, Endpoint: endpoint, PathStyle: pathStyle}
}

// progressBar renders full-scan progress on a terminal; elsewhere it is silent.
func profileProgress(env *cliEnv) (func(workload.Progress), func()) {
	f, ok := terminalOf(env.Stderr)
	if !ok {
		return nil, func() {}
	}
	p := mpb.New(mpb.WithOutput(f))
	var bar *mpb.Bar
	return func(pr workload.Progress) {
			if bar == nil {
				bar = p.AddBar(int64(pr.GroupsTotal),
					mpb.PrependDecorators(decor.Name("row groups "), decor.CountersNoUnit("%d/%d")),
					mpb.AppendDecorators(decor.Percentage(), decor.Name(" "), decor.EwmaETA(decor.ET_STYLE_GO, 30)))
			}
			bar.SetCurrent(int64(pr.GroupsDone))
		}, func() {
			if bar != nil {
				bar.Abort(false)
			}
			p.Wait()
		}
}

func renderProfile(w io.Writer, res *workload.Result, maxCtx int) {
	d := res.Document
	fmt.Fprintf(w, "Profiled %s: %s rows in %d row groups; read groups %s, %s rows inspected.\n",
		d.Source.URL, profThousands(d.Source.TraceRows), d.Sampling.TotalRowGroups, profGroups(d.Sampling.RowGroups), profThousands(int64(d.Sampling.RowsInspected)))
	pct := 0.0
	if res.FileSize > 0 {
		pct = 100 * float64(res.BytesRead) / float64(res.FileSize)
	}
	fmt.Fprintf(w, "Read %s of %s (%.2f%%).\n", profBytes(res.BytesRead), profBytes(res.FileSize), pct)
	switch {
	case res.PageChunks > 0 && res.PrefixChunks == 0:
		fmt.Fprintf(w, "Page-level sample: the offset index (%s) located the pages holding the rows, %s of column data.\n", profBytes(res.IndexBytes), profBytes(res.NeededBytes))
	case res.PrefixChunks > 0:
		fmt.Fprintf(w, "Page-level sample: %d of %d column chunks have no offset index; they were read page by page from their start up to the rows wanted.\n", res.PrefixChunks, res.PrefixChunks+res.PageChunks)
	}
	if e := d.Sampling.QuantileRelativeError; e > 0 {
		fmt.Fprintf(w, "Percentiles are approximate: each is within %g%% of the exact nearest-rank value; counts are exact.\n", e*100)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "distribution\tunit\tsamples\tp50\tp90\tp95\tp99\t")
	dist := d.Distributions
	for _, r := range []struct {
		name string
		d    workload.Distribution
	}{{"input_tokens", dist.InputTokens}, {"output_tokens", dist.OutputTokens}, {"cached_tokens", dist.CachedTokens},
		{"ttft_ms", dist.TTFTMs}, {"duration_ms", dist.DurationMs}, {"cache_hit_fraction", dist.CacheHitFraction}} {
		p := r.d.Percentiles
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", r.name, r.d.Unit, r.d.Samples, profNum(p.P50), profNum(p.P90), profNum(p.P95), profNum(p.P99))
	}
	tw.Flush()
	if q := dist.InputTokens.Quantiles; len(q) > 0 {
		fmt.Fprintf(w, "Quantiles: each distribution is sketched at %d quantiles, q = %g to %g (distributions.*.quantiles); shapes whose lengths come from it draw from them.\n", len(q), q[0].Q, q[len(q)-1].Q)
	}
	fmt.Fprintln(w)
	if maxCtx > 0 {
		fmt.Fprintf(w, "Shapes (clipped to a %d-token context):\n", maxCtx)
	} else {
		fmt.Fprintln(w, "Shapes:")
	}
	renderProfileShapes(w, d.Profiles)
	if t := d.Traffic; t != nil {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Arrivals: %.2f req/s mean over %d whole 1-second windows (p50 %s, p99 %s); %.2f req/s over %d whole 1-minute windows (p50 %s, p99 %s).\n",
			t.PerSecond.Mean, t.PerSecond.Windows, profNum(t.PerSecond.P50), profNum(t.PerSecond.P99), t.PerMinute.Mean, t.PerMinute.Windows, profNum(t.PerMinute.P50), profNum(t.PerMinute.P99))
		fmt.Fprintf(w, "Burstiness: inter-arrival coefficient of variation %.3f over %d gaps (1 = Poisson, above 1 = bursty).\n", t.InterarrivalCV, t.InterarrivalSamples)
		if len(t.Functions) > 0 {
			var parts []string
			for _, f := range t.Functions {
				parts = append(parts, fmt.Sprintf("%s %.1f%%", f.Name, 100*f.Share))
			}
			fmt.Fprintf(w, "Functions: %s.\n", strings.Join(parts, ", "))
		}
	}
}

func renderProfileShapes(w io.Writer, shapes []workload.Shape) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  name\tkey\tinput\toutput\tconcurrency\trequests\tclipped")
	for _, s := range shapes {
		fmt.Fprintf(tw, "  %s\ttrace.NAME.shapes.%s\t%d\t%d\t%d\t%d\t%v\n", s.Name, workload.ShapeKey(s.Name), s.InputTokens, s.OutputTokens, s.Concurrency, s.Requests, s.Clipped)
	}
	tw.Flush()
}

func profGroups(g []int) string {
	if len(g) > 8 {
		return fmt.Sprintf("%d..%d (%d groups)", g[0], g[len(g)-1], len(g))
	}
	s := make([]string, len(g))
	for i, x := range g {
		s[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(s, " ") + "]"
}

func profNum(x float64) string {
	if x == float64(int64(x)) {
		return profThousands(int64(x))
	}
	if x < 10 {
		return strconv.FormatFloat(x, 'f', 4, 64)
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}

// profThousands renders n with thousands separators ("6,122,413,756").
func profThousands(n int64) string { return message.NewPrinter(language.English).Sprint(n) }

func profBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// validateOutput is `profile validate --output json`.
type validateOutput struct {
	File         string           `json:"file"`
	Valid        bool             `json:"valid"`
	Digest       string           `json:"digest,omitempty"`
	DigestStatus string           `json:"digest_status,omitempty"`
	Problems     []string         `json:"problems"`
	Shapes       []workload.Shape `json:"shapes"`
}

func runProfileValidate(env *cliEnv, args []string) int {
	fs := newFlags(env, "profile validate", usageDoc{
		Usage: "infercrane profile validate [flags] FILE",
		About: "Checks a workload profile document (infercrane.public-workload-profile/v1) and prints its\n" +
			"digest, whether the digest it states matches, and its shapes.",
		Examples: []string{
			"infercrane profile validate profiles/chutes.json",
			"infercrane profile validate profiles/chutes.json --output json",
		},
	})
	output := fs.String("output", "human", "human or json")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 || (*output != "human" && *output != "json") {
		return fs.usageError("give one FILE and --output human or json")
	}
	res := validateOutput{File: pos[0], Problems: []string{}, Shapes: []workload.Shape{}}
	data, err := os.ReadFile(pos[0])
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane profile validate: %v\n", hinted(err))
		return 1
	}
	doc, digest, err := workload.Parse(data)
	res.Digest = digest
	var verr *workload.ValidationError
	switch {
	case err == nil:
		res.Valid = true
	case errors.As(err, &verr):
		for _, p := range verr.Problems {
			res.Problems = append(res.Problems, p.String())
		}
	default:
		res.Problems = append(res.Problems, err.Error())
	}
	switch {
	case digest == "":
	case doc.Digest == "":
		res.DigestStatus = "computed"
	case doc.Digest == digest:
		res.DigestStatus = "matches"
	default:
		res.DigestStatus = "mismatch"
	}
	if res.Valid {
		res.Shapes = doc.Profiles
	}
	if *output == "json" {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintln(env.Stdout, string(b))
	} else {
		renderValidate(env, res)
	}
	if !res.Valid {
		return 1
	}
	return 0
}

func renderValidate(env *cliEnv, res validateOutput) {
	if !res.Valid {
		fmt.Fprintf(env.Stderr, "%s is not a valid workload profile:\n", res.File)
		for _, p := range res.Problems {
			fmt.Fprintf(env.Stderr, "  - %s\n", p)
		}
	} else {
		fmt.Fprintf(env.Stdout, "%s is a valid %s document.\n", res.File, workload.SchemaVersion)
	}
	switch res.DigestStatus {
	case "matches":
		fmt.Fprintf(env.Stdout, "digest %s (matches the document)\n", res.Digest)
	case "computed":
		fmt.Fprintf(env.Stdout, "digest %s (computed; the document carries none)\n", res.Digest)
	case "mismatch":
		fmt.Fprintf(env.Stdout, "digest %s (computed; the document's digest differs)\n", res.Digest)
	}
	if !res.Valid {
		return
	}
	fmt.Fprintln(env.Stdout, "\nShapes to paste into a spec (list them in a screen's shapes; the plan then carries the load to generate):")
	for _, s := range res.Shapes {
		fmt.Fprintf(env.Stdout, "\n%s", shapeBlock(s))
	}
}

// shapeBlock is the spec shape block that runs one profile shape: what a
// user pastes, since the plan, not a command line, carries the load.
func shapeBlock(s workload.Shape) string {
	var b strings.Builder
	if s.Description != "" {
		fmt.Fprintf(&b, "# %s\n", strings.Join(strings.Fields(s.Description), " "))
	}
	if s.Clipped {
		b.WriteString("# clipped to the profile's context window: input_tokens counts the templated prompt, so no template_headroom is added\n")
	}
	fmt.Fprintf(&b, "shape %q {\n  input_tokens  = %d\n  output_tokens = %d\n  concurrency   = %d\n  requests      = %d\n  streaming     = %v\n",
		workload.ShapeKey(s.Name), s.InputTokens, s.OutputTokens, s.Concurrency, s.Requests, s.Streaming)
	if s.ArrivalPattern != "" {
		fmt.Fprintf(&b, "  arrival       = %q\n  request_rate  = %v\n", s.ArrivalPattern, s.RequestRate)
	}
	b.WriteString("}\n")
	return b.String()
}
