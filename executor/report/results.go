package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/infercrane/infercrane/executor/benchresult"
	"github.com/infercrane/infercrane/executor/cachehit"
	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/planner"
)

// ResultsFile is the name of the Markdown report that sets other tools'
// results beside the plan's estimates (report -results), in the reports
// directory. It is a document of its own: the evidence is rebuilt from the
// state alone (verify), and these results are not in the state.
const ResultsFile = "results-vs-plan.md"

// ResultComparison sets the plan's estimate beside one result another tool
// measured (benchresult): the lane whose conditions it matches, the
// figures, and whether a prefix cache served its prompts.
type ResultComparison struct {
	Result benchresult.Result
	// Lane is the plan's lane the result's conditions match (nil: none).
	Lane *planner.Lane
	// Unmatched says why no lane matches: the nearest lane and how it
	// differs ("" when Lane is set).
	Unmatched string
	// Notes are conditions that differ without making the estimate
	// incomparable (another engine version, another arrival process).
	Notes []string
	// Prediction is the lane's estimate beside the result's figures (nil
	// without a lane, an estimate or a comparable figure). Its CacheHits
	// name the runs or requests a prefix cache served.
	Prediction *evidence.Prediction
	// SamePrompts says which other results sent the same prompts
	// (benchresult.SharedPrompts): on one server with prefix caching the
	// later of them measured a cache ("" when none did).
	SamePrompts string
}

// Name is the result's file, and its label within the file when it holds
// several.
func (c *ResultComparison) Name() string { return c.Result.Name() }

// CompareResults matches each result to the plan's lane with the same
// model, GPU, engine, request lengths and load, and sets that lane's
// estimate beside the result's figures (in InferCrane's definitions, as
// benchresult mapped them). The estimate is the plan's for a real engine:
// a result was measured on one, so the sim executor's speedup is not
// applied.
func CompareResults(plan *planner.Plan, results []benchresult.Result) []ResultComparison {
	out := make([]ResultComparison, 0, len(results))
	shared := benchresult.SharedPrompts(results)
	for i, r := range results {
		c := ResultComparison{Result: r}
		c.Lane, c.Unmatched, c.Notes = matchLane(plan, r)
		c.SamePrompts = shared[i]
		if c.Lane != nil {
			c.Prediction = predict(c.Lane, r.Metrics, 1)
			if hits := resultCacheHits(c.Lane, r); len(hits) > 0 {
				if c.Prediction == nil {
					c.Prediction = &evidence.Prediction{Scale: 1, Metrics: []evidence.PredictedMetric{}, Outside: []string{}}
				}
				c.Prediction.CacheHits = hits
			}
		}
		out = append(out, c)
	}
	return out
}

// laneDiffs lists how a lane's conditions differ from a result's in what
// the estimate depends on (none: the result measured the lane), and notes
// the differences it does not depend on enough to refuse the comparison.
func laneDiffs(l *planner.Lane, r benchresult.Result) (diffs, notes []string) {
	in := &l.Inputs
	if !strings.EqualFold(in.ModelID, r.Model) {
		diffs = append(diffs, fmt.Sprintf("model (lane %s, result %s)", in.ModelID, r.Model))
	}
	if in.GPUType != r.GPU || max(in.GPUCount, 1) != max(r.GPUCount, 1) {
		diffs = append(diffs, fmt.Sprintf("GPU (lane %dx %s, result %dx %s)", max(in.GPUCount, 1), in.GPUType, max(r.GPUCount, 1), r.GPU))
	}
	if !strings.EqualFold(in.RuntimeEngine, r.Engine) {
		diffs = append(diffs, fmt.Sprintf("engine (lane %s, result %s)", in.RuntimeEngine, r.Engine))
	} else if in.RuntimeVersion != r.EngineVersion {
		notes = append(notes, fmt.Sprintf("the lane plans %s %s, the result ran %s %s (the front end differs by version)", in.RuntimeEngine, in.RuntimeVersion, r.Engine, r.EngineVersion))
	}
	if !nearTokens(in.InputTokens, r.InputTokens) {
		diffs = append(diffs, fmt.Sprintf("input tokens (lane %d, result %d)", in.InputTokens, r.InputTokens))
	}
	if !nearTokens(in.OutputTokens, r.OutputTokens) {
		diffs = append(diffs, fmt.Sprintf("output tokens (lane %d, result %d)", in.OutputTokens, r.OutputTokens))
	}
	switch {
	case in.RequestRate > 0 || r.RequestRate > 0:
		if math.Abs(in.RequestRate-r.RequestRate) > 0.01*math.Max(in.RequestRate, r.RequestRate) {
			diffs = append(diffs, fmt.Sprintf("request rate (lane %g/s, result %g/s)", in.RequestRate, r.RequestRate))
		} else if in.Concurrency != r.Concurrency && (in.Concurrency > 0 || r.Concurrency > 0) {
			diffs = append(diffs, fmt.Sprintf("cap on requests in flight (lane %d, result %d)", in.Concurrency, r.Concurrency))
		} else if a, b := arrivalOf(in.Arrival), arrivalOf(r.Arrival); a != b {
			notes = append(notes, fmt.Sprintf("the lane's arrivals are %s, the result's %s", a, b))
		}
	case in.Concurrency != r.Concurrency:
		diffs = append(diffs, fmt.Sprintf("concurrency (lane %d, result %d)", in.Concurrency, r.Concurrency))
	case in.Concurrency >= in.Requests && in.Requests != r.Requests:
		// A burst: every request at once; the estimate depends on how many.
		diffs = append(diffs, fmt.Sprintf("requests in the burst (lane %d, result %d)", in.Requests, r.Requests))
	}
	return diffs, notes
}

// nearTokens reports whether two request lengths are the same within what
// tools disagree on (a chat template's tokens, a re-tokenised output): 5%
// or 2 tokens.
func nearTokens(a, b int) bool {
	return math.Abs(float64(a-b)) <= math.Max(2, 0.05*float64(max(a, b)))
}

func arrivalOf(s string) string {
	if s == "" {
		return "poisson"
	}
	return s
}

// matchLane finds the first lane of the plan whose conditions the result
// measured (a capacity search's lanes have no single load and are not
// matched). Without one, unmatched names the nearest lane (fewest
// differences) and how it differs.
func matchLane(plan *planner.Plan, r benchresult.Result) (lane *planner.Lane, unmatched string, notes []string) {
	var nearest *planner.Lane
	var nearestDiffs []string
	for _, l := range plan.Lanes {
		if l.Inputs.Search != nil {
			continue
		}
		diffs, n := laneDiffs(l, r)
		if len(diffs) == 0 {
			return l, "", n
		}
		if nearest == nil || len(diffs) < len(nearestDiffs) {
			nearest, nearestDiffs = l, diffs
		}
	}
	if nearest == nil {
		return nil, "the plan has no lane with a fixed load to compare it with", nil
	}
	return nil, fmt.Sprintf("no lane of the plan measured its conditions; the nearest, %s, differs in %s", nearest.Key, strings.Join(nearestDiffs, ", ")), nil
}

// resultCacheHits names the runs (or the share of requests) of a result
// whose TTFT is under half a lone prefill's compute on the lane (cachehit):
// a prefix cache served their prompts.
func resultCacheHits(l *planner.Lane, r benchresult.Result) []string {
	if l.Perf == nil {
		return nil
	}
	var out []string
	if len(r.RunMetrics) > 0 {
		for i, m := range r.RunMetrics {
			if why := cachehit.TTFT(*l.Perf, r.InputTokens, m[benchresult.TTFTP50], 1); why != "" {
				out = append(out, fmt.Sprintf("run %d: %s", i+1, why))
			}
		}
		return out
	}
	if why := cachehit.TTFT(*l.Perf, r.InputTokens, r.Metrics[benchresult.TTFTP50], 1); why != "" {
		return []string{why}
	}
	if len(r.TTFTsMs) > 0 {
		if hits, floor := cachehit.Requests(*l.Perf, r.InputTokens, r.TTFTsMs, 1); hits > 0 {
			out = append(out, fmt.Sprintf("%d of %d requests' TTFT is under %.1f ms (half a lone %d-token prefill on %s): a prefix cache served their prompts", hits, len(r.TTFTsMs), floor, r.InputTokens, l.Perf.Hardware.GPU.Name))
		}
	}
	return out
}

// resultsTable renders the comparisons as a report table.
func resultsTable(cs []ResultComparison) reportTable {
	t := reportTable{Title: "Plan versus other tools' measurements",
		Intro:   "Each result is matched to the plan's lane with its model, GPU, engine, lengths and load, and set beside that lane's estimate for a real engine. The tools' figures are mapped to InferCrane's definitions (docs/performance-model.md, \"Calibrating from other tools\").",
		Header:  []string{"result", "tool", "lane", "assumptions", "metric", "predicted (range)", "measured", "error", ""},
		Numeric: []bool{false, false, false, false, false, true, true, true, false},
		Strong:  []bool{false, false, false, false, false, false, false, false, true}}
	seen := map[string]bool{}
	for _, c := range cs {
		tool := c.Result.Tool
		if c.Result.ToolVersion != "" {
			tool += " " + c.Result.ToolVersion
		}
		if c.SamePrompts != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("SAME PROMPTS: %s: %s.", c.Name(), c.SamePrompts))
		}
		if c.Lane == nil {
			t.Notes = append(t.Notes, fmt.Sprintf("NOT COMPARED: %s (%s, %s on %s, %d+%d tokens): %s.", c.Name(), tool, c.Result.Model, c.Result.GPU, c.Result.InputTokens, c.Result.OutputTokens, c.Unmatched))
			continue
		}
		p := c.Prediction
		if p == nil || len(p.Metrics) == 0 {
			t.Notes = append(t.Notes, fmt.Sprintf("NOT COMPARED: %s matches lane %s, which has no estimate of the figures the result has.", c.Name(), c.Lane.Key))
		}
		if p != nil {
			t.Rows = append(t.Rows, predictionRows(p, "cache-served", c.Name(), tool, c.Lane.Key)...)
			for _, h := range p.CacheHits {
				t.Notes = append(t.Notes, fmt.Sprintf("CACHE-SERVED: %s: %s; its error is the cache's, not the model's.", c.Name(), h))
			}
		}
		for _, n := range c.Notes {
			t.Notes = append(t.Notes, fmt.Sprintf("%s: %s.", c.Name(), n))
		}
		for _, n := range c.Result.Notes { // the tool's definitions, said once
			if !seen[n] {
				seen[n] = true
				t.Notes = append(t.Notes, fmt.Sprintf("%s: %s.", c.Result.Tool, n))
			}
		}
	}
	return t
}

// WriteResults writes the comparisons as the Markdown document ResultsFile
// names: which files (with their SHA-256) were read, and the table.
func WriteResults(w io.Writer, cs []ResultComparison) error {
	var b strings.Builder
	b.WriteString("# Plan versus other tools' measurements\n\nResults read:\n\n")
	for _, c := range cs {
		v := c.Result.ToolVersion
		if v == "" {
			v = "version not recorded"
		}
		fmt.Fprintf(&b, "- %s: %s (%s), %s\n", c.Name(), c.Result.Tool, v, c.Result.Digest)
	}
	t := resultsTable(cs)
	t.markdown(&b)
	_, err := io.WriteString(w, b.String())
	return err
}
