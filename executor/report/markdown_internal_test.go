package report

import (
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/evidence"
)

// Report figures carry significant digits, never an exponent: the plan
// versus measurement table once printed "1.04e+03 (781-1.3e+03)".
func TestFmtSigNeverUsesAnExponent(t *testing.T) {
	for _, c := range []struct {
		x      float64
		digits int
		want   string
	}{
		{1040.3, 3, "1040"}, {781.2, 3, "781"}, {1299.9, 3, "1300"}, {12.345, 3, "12.3"},
		{0.012345, 3, "0.0123"}, {-2.5e6, 3, "-2500000"}, {0, 3, "0"}, {99.96, 3, "100"}, {16, 4, "16"}, {12.5, 4, "12.5"},
	} {
		if got := fmtSig(c.x, c.digits); got != c.want {
			t.Errorf("fmtSig(%v, %d) = %q, want %q", c.x, c.digits, got, c.want)
		}
	}
}

// The HTML report has the sections the Markdown one has: the workload as
// sent and the plan versus the measurement (it once had neither), from the
// same rows, with the flag of a figure outside its range in bold in both.
func TestHTMLHasTheMarkdownsTables(t *testing.T) {
	hit := 0.42
	ev := &evidence.Evidence{Screen: "s", Models: []evidence.ModelEvidence{{Name: "m", Model: "Qwen/Qwen3-0.6B", Campaigns: []evidence.Campaign{{
		Profile: "chat", Lane: "abc", GPUType: "L40S",
		RequestMix: &evidence.RequestMix{InputTokens: evidence.LengthMix{Intended: evidence.Quantiles{P50: 100, P95: 900, P99: 1000}, Sent: evidence.Quantiles{P50: 101, P95: 905, P99: 1010}},
			Clipped: 3, PrefixCache: &evidence.PrefixCacheMix{Intended: 0.5, Achieved: &hit, AchievedSource: "vllm:prefix_cache_hits_total|queries"}},
		Prediction: &evidence.Prediction{Assumptions: "catalog", Metrics: []evidence.PredictedMetric{
			{Metric: "output_token_throughput", Predicted: 1040.3, Low: 781, High: 1300, Measured: 1500, Error: 0.44}}},
	}}}}}
	var md, html strings.Builder
	if err := WriteMarkdown(&md, ev); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, ev, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Workload as sent", "| 100 / 900 / 1000 | 101 / 905 / 1010 |", "42.0% (vllm:prefix_cache_hits_total/queries)",
		"## Plan versus measurement", "| 1040 (781-1300) | 1500 | +44.0% | **outside the range** |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	for _, want := range []string{"<h2>Workload as sent</h2>", "<td>100 / 900 / 1000</td><td>101 / 905 / 1010</td>", `<td class="num">3</td>`,
		"<h2>Plan versus measurement</h2>", `<td class="num">1040 (781-1300)</td>`, "<td><strong>outside the range</strong></td>"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}
