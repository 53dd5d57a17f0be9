package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/infercrane/infercrane/executor/cachehit"
	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner"
	"github.com/infercrane/infercrane/planner/perf"
)

// predictionMetrics are the figures compared: the aggregate's, and the
// parts of the TTFT the server measures (serverTTFTParts).
var predictionMetrics = []string{"ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "tpot_p95_ms", "latency_p50_ms", "latency_p95_ms", "output_token_throughput",
	perf.QueuedMeanMetric, perf.PrefillMeanMetric}

// serverTTFTParts are the parts of the TTFT the server measured over the
// runs, by the names the estimate gives them (perf.Estimate.Metric): the
// mean time queued in the engine and prefilling of every request the
// runs' server views counted (loadgen.ServerView.QueueMs, PrefillMs); a
// part is left out when a run's server did not measure it, and predict
// leaves it out when both sides are under minTTFTPartMs, where a relative
// range says nothing.
func serverTTFTParts(runs []evidence.RunEvidence) map[string]float64 {
	out := map[string]float64{}
	for name, of := range map[string]func(*loadgen.ServerView) *loadgen.ServerDist{
		perf.QueuedMeanMetric:  func(v *loadgen.ServerView) *loadgen.ServerDist { return v.QueueMs },
		perf.PrefillMeanMetric: func(v *loadgen.ServerView) *loadgen.ServerDist { return v.PrefillMs },
	} {
		var sum, count float64
		for _, r := range runs {
			var d *loadgen.ServerDist
			if r.ServerView != nil {
				d = of(r.ServerView)
			}
			if d == nil {
				count = 0
				break
			}
			sum += d.Mean * float64(d.Count)
			count += float64(d.Count)
		}
		if count > 0 {
			out[name] = sum / count
		}
	}
	return out
}

// minTTFTPartMs is the time queued or prefilling under which, on both
// sides, a prediction does not compare it: noise beside the TTFT.
const minTTFTPartMs = 10

// prediction compares a lane's estimate with its aggregate; nil when the
// plan has no estimate or nothing was measured. Runs whose TTFT says a
// prefix cache served their prompts, with no cache hit declared, are
// named in CacheHits.
func prediction(l *planner.Lane, a *evidence.Metrics, runs []evidence.RunEvidence) *evidence.Prediction {
	if a.Succeeded == 0 {
		return nil
	}
	measured := map[string]float64{}
	for m, v := range map[string]*float64{
		"ttft_p50_ms": a.TTFTP50Ms, "ttft_p95_ms": a.TTFTP95Ms, "tpot_p50_ms": a.TPOTP50Ms, "tpot_p95_ms": a.TPOTP95Ms,
		"latency_p50_ms": a.LatencyP50Ms, "latency_p95_ms": a.LatencyP95Ms, "output_token_throughput": ptr(a.OutputTokenThroughput),
	} {
		if v != nil {
			measured[m] = *v
		}
	}
	for m, v := range serverTTFTParts(runs) {
		measured[m] = v
	}
	p := predict(l, measured, planner.SimSpeedup(l))
	if p != nil {
		p.CacheHits = campaignCacheHits(l, runs, p.Scale)
	}
	return p
}

// predict sets the lane's estimate beside measured figures (by metric
// name), its times divided by scale and its throughputs multiplied by it
// (the sim executor's speedup; 1 for a real engine); nil when the plan has
// no estimate or no figure is comparable.
func predict(l *planner.Lane, measured map[string]float64, scale float64) *evidence.Prediction {
	e := l.Estimate
	if !e.Available {
		return nil
	}
	u := perf.CatalogUncertainty()
	if e.Uncertainty != nil {
		u = *e.Uncertainty
	}
	p := &evidence.Prediction{Assumptions: "catalog", Scale: scale, Metrics: []evidence.PredictedMetric{}, Outside: []string{}}
	if c := l.Calibration; c != nil {
		p.Assumptions = c.File
	}
	for _, m := range predictionMetrics {
		pred, ok := e.Metric(m)
		meas, mok := measured[m]
		if !ok || pred <= 0 || !mok || meas <= 0 {
			continue
		}
		if strings.HasSuffix(m, "_ms") {
			pred /= p.Scale
		} else {
			pred *= p.Scale
		}
		if perf.IsTTFTPart(m) && pred < minTTFTPartMs && meas < minTTFTPartMs {
			continue
		}
		w := u.Of(m)
		pm := evidence.PredictedMetric{Metric: m, Predicted: round6(pred), Low: round6(pred * (1 - w)), High: round6(pred * (1 + w)),
			Measured: meas, Error: round6(meas/pred - 1)}
		pm.Within = meas >= pred*(1-w) && meas <= pred*(1+w)
		if !pm.Within {
			p.Outside = append(p.Outside, m)
		}
		p.Metrics = append(p.Metrics, pm)
	}
	if len(p.Metrics) == 0 {
		return nil
	}
	return p
}

// campaignCacheHits names the runs whose TTFT p50 is under half a lone
// prefill's compute (cachehit) while the server declared no prefix-cache
// hit: a cache the evidence does not declare served their prompts, so
// their figures measure the cache, not the plan's model. A workload that
// shares prefixes or holds sessions hits the cache by design and is not
// judged.
func campaignCacheHits(l *planner.Lane, runs []evidence.RunEvidence, scale float64) []string {
	if l.Perf == nil || l.Inputs.Workload != nil {
		return nil
	}
	var out []string
	for _, r := range runs {
		if v := r.ServerView; v != nil && v.PrefixCache != nil && v.PrefixCache.HitTokens > 0 {
			continue // declared
		}
		if r.TTFTP50Ms == nil {
			continue
		}
		if why := cachehit.TTFT(*l.Perf, l.Inputs.InputTokens, *r.TTFTP50Ms, scale); why != "" {
			out = append(out, fmt.Sprintf("run %d: %s", r.Run, why))
		}
	}
	return out
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// reportTable is a table both report formats render: Markdown with pipes,
// HTML as a table element.
type reportTable struct {
	Title, Intro string
	Header       []string
	// Numeric marks the columns aligned right, Strong those shown in bold.
	Numeric, Strong []bool
	Rows            [][]string
	// Notes are sentences after the table.
	Notes []string
}

// markdown renders t as a Markdown section.
func (t *reportTable) markdown(b *strings.Builder) {
	if len(t.Rows) == 0 && len(t.Notes) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## %s\n\n", t.Title)
	if t.Intro != "" {
		b.WriteString(t.Intro + "\n\n")
	}
	if len(t.Rows) > 0 {
		b.WriteString("| " + strings.Join(t.Header, " | ") + " |\n|")
		for i := range t.Header {
			if i < len(t.Numeric) && t.Numeric[i] {
				b.WriteString("---:|")
			} else {
				b.WriteString("---|")
			}
		}
		b.WriteString("\n")
		for _, r := range t.Rows {
			cells := make([]string, len(r))
			for i, c := range r {
				cells[i] = strings.ReplaceAll(c, "|", "/")
				if c != "" && i < len(t.Strong) && t.Strong[i] {
					cells[i] = "**" + cells[i] + "**"
				}
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
	}
	for _, n := range t.Notes {
		b.WriteString("\n" + n + "\n")
	}
}

// predictionTable sets each campaign's predicted figures beside the
// measured ones (empty when no campaign has a prediction).
func predictionTable(ev *evidence.Evidence) reportTable {
	t := reportTable{Title: "Plan versus measurement",
		Header:  []string{"model", "shape", "gpu", "assumptions", "metric", "predicted (range)", "measured", "error", ""},
		Numeric: []bool{false, false, false, false, false, true, true, true, false},
		Strong:  []bool{false, false, false, false, false, false, false, false, true}}
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			p := c.Prediction
			if p == nil {
				continue
			}
			t.Rows = append(t.Rows, predictionRows(p, "cache-served runs", m.Model, c.ShapeWords(), c.GPUType)...)
		}
	}
	if len(t.Rows) > 0 {
		t.Notes = []string{"Predictions are the plan's virtual-time estimates (on the sim executor divided by its speedup); the range is the calibration's residuals or, uncalibrated, the catalog's stated uncertainty."}
	}
	for _, m := range ev.Models {
		for _, c := range m.Campaigns {
			if p := c.Prediction; p != nil {
				for _, h := range p.CacheHits {
					t.Notes = append(t.Notes, fmt.Sprintf("CACHE-SERVED: %s %s on %s, %s; its error is the cache's, not the model's.", m.Model, c.ShapeWords(), c.GPUType, h))
				}
			}
		}
	}
	return t
}

// predictionRows are a prediction's rows of a plan-versus-measurement
// table: the leading cells, the assumptions, the metric, the predicted
// figure with its range, the measured one, the error and a flag (outside
// the range; cached, named so, when a prefix cache served runs).
func predictionRows(p *evidence.Prediction, cached string, lead ...string) [][]string {
	var rows [][]string
	for _, pm := range p.Metrics {
		flag := ""
		if !pm.Within {
			flag = "outside the range"
		}
		if len(p.CacheHits) > 0 {
			flag = strings.TrimPrefix(flag+"; "+cached, "; ")
		}
		rows = append(rows, append(append([]string{}, lead...), p.Assumptions, pm.Metric,
			fmt.Sprintf("%s (%s-%s)", fmtSig(pm.Predicted, 3), fmtSig(pm.Low, 3), fmtSig(pm.High, 3)),
			fmtSig(pm.Measured, 3), fmt.Sprintf("%+.1f%%", 100*pm.Error), flag))
	}
	return rows
}

// writePredictions renders the prediction-versus-measurement table.
func writePredictions(b *strings.Builder, ev *evidence.Evidence) {
	t := predictionTable(ev)
	t.markdown(b)
}
