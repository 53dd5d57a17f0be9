package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner/state"
)

// addMetricsCommands registers the commands of this file (called by setupCommands).
func addMetricsCommands() {
	register(&command{
		Name:     "metrics",
		Synopsis: "Recompute a run's metrics from its per-request records (JSONL)",
		Run:      metricsCmd,
	})
}

// sloFlags registers the goodput objectives shared by bench and metrics.
func sloFlags(fs *flag.FlagSet, slo *loadgen.SLO) {
	fs.Float64Var(&slo.TTFTMs, "slo-ttft", 0, "goodput objective: TTFT at most this many ms (0: unset)")
	fs.Float64Var(&slo.TPOTMs, "slo-tpot", 0, "goodput objective: TPOT at most this many ms (0: unset)")
	fs.Float64Var(&slo.LatencyMs, "slo-latency", 0, "goodput objective: end-to-end latency at most this many ms (0: unset)")
}

func metricsCmd(env *cliEnv, args []string) int {
	fs := newFlags(env, "metrics", usageDoc{
		Usage: "infercrane metrics [flags] RECORDS.jsonl",
		About: "Recomputes every statistic of a run from the per-request records bench --records (or apply,\n" +
			"in STATE_DIR/runs/LANE/N.jsonl) wrote.",
		Examples: []string{
			"infercrane metrics run.jsonl",
			"infercrane metrics run.jsonl --json --slo-ttft 200",
			"infercrane metrics .infercrane/runs/598f4af04901/1.jsonl --slo-latency 2000",
		},
	})
	asJSON := fs.Bool("json", false, "print the summary as JSON (byte-identical to bench --json for the same records and SLOs)")
	var slo loadgen.SLO
	sloFlags(fs.FlagSet, &slo)
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageError("give exactly one records file (JSONL, as written by bench --records), got %d", len(pos))
	}
	if err := dirGivenForFiles(pos[0], "records file", state.RunsDir+"/*/*.jsonl"); err != nil {
		return fs.usageError("%v", err)
	}
	f, err := os.Open(pos[0])
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane metrics: %v\n", hinted(err))
		return 1
	}
	defer f.Close()
	recs, err := loadgen.ReadRecords(f)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane metrics: %v\n", hinted(err))
		return 1
	}
	s := loadgen.Compute(recs, slo)
	if *asJSON {
		return writeSummaryJSON(env, s)
	}
	writeSummaryTable(env.Stdout, s)
	return 0
}

// writeSummaryJSON prints the summary document: the one rendering both bench
// --json and metrics --json use.
func writeSummaryJSON(env *cliEnv, s loadgen.Summary) int {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane: %v\n", hinted(err))
		return 1
	}
	fmt.Fprintf(env.Stdout, "%s\n", b)
	return 0
}

// writeSummaryTable prints the human summary of a run.
func writeSummaryTable(w io.Writer, s loadgen.Summary) {
	fmt.Fprintf(w, "Requests:                %d (%d succeeded, %d failed", s.Requests, s.Succeeded, s.Failed)
	if s.Cancelled > 0 {
		fmt.Fprintf(w, ", %d cancelled at the end", s.Cancelled)
	}
	fmt.Fprintln(w, ")")
	if len(s.Failures) > 0 {
		classes := make([]string, 0, len(s.Failures))
		for c := range s.Failures {
			classes = append(classes, c)
		}
		sort.Strings(classes)
		parts := make([]string, len(classes))
		for i, c := range classes {
			parts[i] = fmt.Sprintf("%s=%d", c, s.Failures[c])
		}
		fmt.Fprintf(w, "Failures:                %s\n", strings.Join(parts, " "))
		if s.Failures[loadgen.FailTruncated] > 0 {
			fmt.Fprintln(w, "                         truncated: answers shorter than max_tokens although ignore_eos was set; the prompt left too little context (vLLM clamps max_tokens instead of rejecting): lower --input-tokens or --output-tokens, or raise the server's context window")
		}
	}
	fmt.Fprintf(w, "Window:                  %.3f s\n", s.WindowSeconds)
	fmt.Fprintf(w, "Request throughput:      %.3f req/s\n", s.RequestThroughput)
	fmt.Fprintf(w, "Output token throughput: %.1f tok/s\n", s.OutputTokenThroughput)
	fmt.Fprintf(w, "Total token throughput:  %.1f tok/s\n", s.TotalTokenThroughput)
	fmt.Fprintf(w, "Tokens:                  %d in, %d out\n", s.InputTokens, s.OutputTokens)
	if s.Goodput != nil {
		fmt.Fprintf(w, "Goodput:                 %.3f req/s (%d good", *s.Goodput, s.Good)
		if s.GoodFraction != nil {
			fmt.Fprintf(w, ", good_fraction %.4f", *s.GoodFraction)
		}
		fmt.Fprintln(w, ")")
	}
	if s.RequestedRate != nil && s.AchievedRate != nil {
		fmt.Fprintf(w, "Send rate:               %.3f req/s achieved, %.3f req/s scheduled\n", *s.AchievedRate, *s.RequestedRate)
	}
	if s.UsageMissing > 0 {
		fmt.Fprintf(w, "Note: %d requests had no usage; their output tokens are the client's count\n", s.UsageMissing)
	}
	if s.PromptOffTarget > 0 {
		fmt.Fprintf(w, "Note: %d requests' prompt_tokens differ from the requested input tokens\n", s.PromptOffTarget)
	}
	fmt.Fprintf(w, "\n%-26s %7s %9s %9s %9s %9s %9s %9s %9s %9s\n", "metric (ms)", "count", "mean", "std", "min", "p50", "p90", "p95", "p99", "max")
	row := func(name string, d loadgen.Dist) {
		fmt.Fprintf(w, "%-26s %7d %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", name, d.Count, d.Mean, d.Std, d.Min, d.P50, d.P90, d.P95, d.P99, d.Max)
	}
	row("ttft", s.TTFTMs)
	row("tpot", s.TPOTMs)
	row("itl", s.ITLMs)
	row("latency", s.LatencyMs)
	if s.DispatchDelayMs != nil {
		row("dispatch_delay", *s.DispatchDelayMs)
		row("ttft_from_scheduled", *s.TTFTFromScheduledMs)
		row("latency_from_scheduled", *s.LatencyFromScheduledMs)
	}
}

// writeServerView prints the server's view of the measured requests beside
// the client's figures, and the checks that flagged the run.
func writeServerView(w io.Writer, s *loadgen.Summary, v *loadgen.ServerView) {
	if v == nil {
		return
	}
	rc := loadgen.Reconcile(s, v, loadgen.DefaultMargin)
	fmt.Fprintf(w, "\nServer's view (/metrics before and after the measured requests; p50/p95 interpolated from its buckets):\n")
	fmt.Fprintf(w, "%-26s %7s %9s %9s %9s   %s\n", "metric (ms)", "count", "mean", "p50", "p95", "histogram")
	for _, r := range []struct {
		name string
		d    *loadgen.ServerDist
	}{{"ttft", v.TTFTMs}, {"  queued in the engine", v.QueueMs}, {"  prefilling", v.PrefillMs}, {"tpot", v.TPOTMs}, {"itl", v.ITLMs}, {"latency", v.LatencyMs}} {
		if r.d != nil {
			fmt.Fprintf(w, "%-26s %7d %9.2f %9.2f %9.2f   %s\n", r.name, r.d.Count, r.d.Mean, r.d.P50, r.d.P95, r.d.Metric)
		}
	}
	if pc := v.PrefixCache; pc != nil && pc.QueriedTokens > 0 {
		fmt.Fprintf(w, "prefix cache: the server served %.0f of the %.0f prompt tokens it looked up from its cache (vllm:prefix_cache_hits_total)\n", pc.HitTokens, pc.QueriedTokens)
	}
	switch {
	case !rc.Comparable:
		fmt.Fprintf(w, "Not compared: %s\n", rc.Reason)
	case len(rc.Flagged) == 0:
		fmt.Fprintf(w, "Client within %.0f ms of the server, either way, on every compared figure (one run: the server's own spread is unknown, so the margin is the floor).\n", rc.Margin.FloorMs)
	default:
		for _, f := range rc.Flagged {
			fmt.Fprintf(w, "FLAG: %s\n", f)
		}
	}
}
