package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
)

// metricWords names the ratio metrics in prose.
var metricWords = map[string]string{
	"output_token_throughput": "the output throughput",
	"request_throughput":      "the request throughput",
	"ttft_p95_ms":             "the p95 TTFT",
	"tpot_p95_ms":             "the p95 TPOT",
	"latency_p95_ms":          "the p95 latency",
}

// promptWords says in a sentence whether any campaign's runs repeat
// prompts ("" when the evidence does not record it).
func promptWords(ev *evidence.Evidence) string {
	var repeat []string
	recorded := false
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			p := c.Workload.Prompts
			if p == nil {
				continue
			}
			recorded = true
			if p.RepeatAcrossRuns || p.RepeatAcrossLanes {
				repeat = append(repeat, m.Model+" "+c.ShapeWords())
			}
		}
	}
	switch {
	case !recorded:
		return ""
	case len(repeat) > 0:
		return "**Prompts repeat** across runs or lanes in " + strings.Join(repeat, ", ") + ": a server's prefix cache may have served them (workload.prompts in the evidence)."
	}
	return "Prompts: each run of each lane sends its own (the lane's seed + run - 1, salted with the lane's id); none repeats another run's, so no prefix cache served one run's prompts from another's."
}

// WriteMarkdown renders ev as the summary a reviewer pastes into a pull
// request: the results table, the comparisons in words, the gates, the
// preflight findings and corrections, and the selection boundary.
func WriteMarkdown(w io.Writer, ev *evidence.Evidence) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# InferCrane screen `%s`\n\n", ev.Screen)
	if c := ev.Completeness; !c.Complete {
		fmt.Fprintf(&b, "> **This screen is %s** (%d missing; incomplete lane(s): %s). Its gates are inconclusive; run apply again to complete it.\n\n",
			c.Words(), c.RunsMissing, strings.Join(c.IncompleteLanes, ", "))
	}
	fmt.Fprintf(&b, "%s, observed %s on %s (%s). %d run(s) per lane, seed %d.\n\n",
		strings.ReplaceAll(ev.EvidenceClass, "-", " "), orDash(ev.ObservedAt), strings.Join(ev.Environment.GPURequest, ", "),
		environmentRuntimeWords(ev.Environment), ev.Environment.ProfileRuns, ev.Environment.RandomSeed)
	if w := promptWords(ev); w != "" {
		b.WriteString(w + "\n\n")
	}

	b.WriteString("| model | shape | gpu | runs | output tok/s (higher is better) | p95 TTFT ms (lower is better) | p95 TPOT ms (lower is better) | p95 latency ms (lower is better) | errors | $ per M output tok (lower is better) |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			a := &c.Aggregate
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				m.Model, c.ShapeWords(), c.GPUType, runsWords(&c), withCV(a.OutputTokenThroughput, c.CoefficientOfVariation["output_token_throughput"], c.AggregatedRuns()),
				fmtPtr(a.TTFTP95Ms), fmtPtr(a.TPOTP95Ms), fmtPtr(a.LatencyP95Ms), errorsWords(a), priceWords(c.Price))
		}
	}
	b.WriteString("\nThroughputs pool all runs; percentiles are the mean of the per-run values; ± is the coefficient of variation across runs; $ per M output tokens is the GPU price x GPUs / output tok/s x 1e6, at the load measured.\n")
	if n := notionalNote(ev); n != "" {
		b.WriteString(n + "\n")
	}
	writeRequestMix(&b, ev)
	writePredictions(&b, ev)
	writeCapacityMarkdown(&b, ev)

	if len(ev.Comparisons) > 0 {
		b.WriteString("\n## Comparisons\n")
		for _, higher := range []bool{true, false} {
			head := "\n### Lower is better (latency)\n\n"
			if higher {
				head = "\n### Higher is better (throughput)\n\n"
			}
			for _, c := range ev.Comparisons {
				for _, metric := range ratioMetrics {
					r, ok := c.Ratios[c.Candidate+"_over_"+c.Baseline+"_"+metric]
					if !ok || r.HigherIsBetter != higher {
						continue
					}
					b.WriteString(head)
					head = ""
					fmt.Fprintf(&b, "- %s\n", ratioSentence(&c, &r))
				}
			}
		}
	}

	writeRuntimeComparisons(&b, ev)
	writeServerViews(&b, ev)

	b.WriteString("\n## Gates\n\n")
	gs := ev.GateSummary
	fmt.Fprintf(&b, "%d pass, %d fail, %d inconclusive (exit code %d).\n\n", gs.Pass, gs.Fail, gs.Inconclusive, gs.ExitCode)
	any := false
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			for _, g := range c.Gates {
				if !any {
					b.WriteString("| gate | model | shape | status | condition | why |\n|---|---|---|---|---|---|\n")
					any = true
				}
				fmt.Fprintf(&b, "| %s | %s | %s | **%s** | `%s` | %s |\n", g.Gate, m.Model, c.ShapeWords(), g.Status, cell(g.Condition), cell(g.Reason))
			}
		}
	}
	if !any {
		b.WriteString("The screen has no gates.\n")
	}

	b.WriteString("\n## Preflight\n\n")
	if len(ev.Preflight.Findings) == 0 && len(ev.Preflight.Corrections) == 0 {
		b.WriteString("No findings.\n")
	}
	for _, f := range ev.Preflight.Findings {
		lane := ""
		if f.Lane != "" {
			lane = " (lane " + f.Lane + ")"
		}
		fmt.Fprintf(&b, "- %s%s: %s\n", f.Severity, lane, oneLine(f.Summary))
	}
	for _, c := range ev.Preflight.Corrections {
		fmt.Fprintf(&b, "- correction: %s\n", oneLine(c))
	}

	b.WriteString("\n## Boundary\n\n")
	b.WriteString(oneLine(ev.SelectionBoundary) + "\n\n")
	fmt.Fprintf(&b, "Cleanup: %s, %s. Evidence `%s`, spec `%s`, plan `%s`.\n",
		ev.Cleanup.State, activeWords(ev.Cleanup.ActiveGPUTasks), ev.Digest, ev.SpecDigest, ev.PlanDigest)
	_, err := io.WriteString(w, b.String())
	return err
}

// ratioSentence says one ratio in words, e.g. "Qwen3-0.6B delivered 1.44x
// the output throughput of Qwen3-1.7B on the interactive shape".
func ratioSentence(c *evidence.Comparison, r *evidence.Ratio) string {
	var s string
	if r.HigherIsBetter {
		s = fmt.Sprintf("%s delivered %.2fx %s of %s on the %s shape", c.CandidateModel, r.Value, metricWords[r.Metric], c.BaselineModel, c.ShapeWords())
	} else {
		s = fmt.Sprintf("%s had %.2fx %s of %s on the %s shape", c.CandidateModel, r.Value, metricWords[r.Metric], c.BaselineModel, c.ShapeWords())
	}
	switch {
	case r.CI95 == nil:
		s += " (no interval: needs at least 2 runs of each)"
	case r.Note != "":
		s += fmt.Sprintf(" (95%% CI %.2f–%.2f; too few runs to call it significant, %d needed on each side)", r.CI95.Low, r.CI95.High, MinRunsForSignificance)
	case r.Significant:
		s += fmt.Sprintf(" (95%% CI %.2f–%.2f, significant)", r.CI95.Low, r.CI95.High)
	default:
		s += fmt.Sprintf(" (95%% CI %.2f–%.2f, not significant)", r.CI95.Low, r.CI95.High)
	}
	return s + "."
}

func runtimeWords(r evidence.Runtime) string {
	s := strings.TrimSpace(r.Engine + " " + r.Version)
	if s == "" {
		return "runtime unknown"
	}
	return s
}

func withCV(v, cv float64, runs int) string {
	if runs < 2 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.1f ±%.1f%%", v, 100*cv)
}

// fmtSig formats x as %g does with digits significant digits, but never
// with an exponent (1040, not 1.04e+03): a report's reader compares
// figures by eye.
func fmtSig(x float64, digits int) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', digits, 64), 64) // rounded to digits
	decimals := max(0, digits-1-int(math.Floor(math.Log10(math.Abs(v)))))
	out := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(out, ".") { // as %g: no trailing zeros
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	return out
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f", *p)
}

func errorsWords(a *evidence.Metrics) string {
	if a.Failed == 0 {
		return "0"
	}
	parts := make([]string, 0, len(a.Failures))
	for _, k := range sortedKeys(a.Failures) {
		parts = append(parts, fmt.Sprintf("%d %s", a.Failures[k], k))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d (%s)", a.Failed, strings.Join(parts, ", "))
}

func activeWords(n int) string {
	if n < 0 {
		return "active GPU tasks not recorded"
	}
	return fmt.Sprintf("%d active GPU task(s) left", n)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// runsWords is a campaign's run count, "1 of 3" when it is incomplete.
func runsWords(c *evidence.Campaign) string {
	if c.Complete {
		return fmt.Sprint(len(c.Runs))
	}
	return fmt.Sprintf("%d of %d", len(c.Runs), c.RunsPlanned)
}

// writeServerViews lists, per run whose server exposed latency histograms,
// the client's mean TTFT and TPOT beside the server's and what was flagged.
func writeServerViews(b *strings.Builder, ev *evidence.Evidence) {
	header := false
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			for _, r := range c.Runs {
				rc, v := r.ClientVsServer, r.ServerView
				if rc == nil || v == nil {
					continue
				}
				if !header {
					b.WriteString("\n## Client vs server\n\n")
					b.WriteString("The server's own histograms over each run's measured requests (means; vLLM's TTFT starts when the engine receives the request, after HTTP, chat template and tokenization).\n\n")
					b.WriteString("| model | shape | run | TTFT ms client / server | TPOT ms client / server | latency ms client / server | verdict |\n|---|---|---:|---:|---:|---:|---|\n")
					header = true
				}
				verdict := "within margin"
				switch {
				case !rc.Comparable:
					verdict = "not compared: " + rc.Reason
				case len(rc.Flagged) > 0:
					verdict = "**flagged**: " + strings.Join(rc.Flagged, "; ")
				}
				pair := func(client *float64, d *loadgen.ServerDist) string {
					if d == nil || client == nil {
						return "-"
					}
					return fmt.Sprintf("%.2f / %.2f", *client, d.Mean)
				}
				fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s |\n", m.Model, c.ShapeWords(), r.Run,
					pair(clientMean(rc, "ttft"), v.TTFTMs), pair(clientMean(rc, "tpot"), v.TPOTMs), pair(clientMean(rc, "latency"), v.LatencyMs), cell(verdict))
			}
		}
	}
}

// clientMean returns the client's mean of metric from a reconciliation's checks.
func clientMean(rc *loadgen.Reconciliation, metric string) *float64 {
	for _, c := range rc.Checks {
		if c.Metric == metric && c.Stat == "mean" {
			v := c.ClientMs
			return &v
		}
	}
	return nil
}
