package lang

import (
	"fmt"
	"strings"
	"testing"
)

// Token distributions have bounds of their own (docs/language/bounds.md),
// checked where they are written: every percentile, quantile and lognormal
// median at most MaxTokens, a lognormal's sigma at most MaxSigma and a
// distribution's quantiles at most MaxQuantiles points. Before, these went
// through validate (only the context check stopped some at plan), and a
// hand-written lognormal object without its median panicked.
func TestDistributionsAreBounded(t *testing.T) {
	// 20000 increasing quantiles, each valid alone.
	big := `[for p in setproduct(range(1000), range(20)) : {q = (p[0] * 20 + p[1] + 1) / 20001, v = 10 + p[0] * 20 + p[1]}]`
	for _, tc := range []struct{ name, side, value, says string }{
		{"percentile", "output", `{p50 = 10, p90 = 20, p95 = 30, p99 = 1e12}`, "10000000"},
		{"quantile", "output", `{p50 = 10, p90 = 20, p95 = 30, p99 = 40, quantiles = [{q = 0.999, v = 1e9}]}`, "10000000"},
		{"lognormal p95", "output", `lognormal(100, 1e300)`, "10000000"},
		{"lognormal median", "input", `lognormal(1e9, 1e9)`, "10000000"},
		{"lognormal object sigma", "output", `{distribution = "lognormal", median = 100, sigma = 1e6}`, "sigma"},
		{"lognormal object negative sigma", "output", `{distribution = "lognormal", median = 100, sigma = -1}`, "sigma"},
		{"lognormal object median", "output", `{distribution = "lognormal", median = 1e300, sigma = 1}`, "median"},
		{"lognormal object without median", "output", `{distribution = "lognormal", sigma = 1}`, "median"},
		{"lognormal object string sigma", "output", `{distribution = "lognormal", median = 10, sigma = "x"}`, "sigma"},
		{"too many quantiles", "output", `{p50 = 10, p90 = 20, p95 = 30, p99 = 40, quantiles = ` + big + `}`, "at most 10000"},
		{"fit of huge percentiles", "output", `lognormal_fit({p50 = 10, p90 = 1e100, p95 = 1e200, p99 = 1e300})`, "between"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := minimal + fmt.Sprintf("shape \"d\" {\n  concurrency = 1\n  requests = 4\n  input_tokens = 8\n  lengths {\n    %s = %s\n  }\n}\n", tc.side, tc.value)
			if tc.side == "input" {
				src = strings.Replace(src, "input_tokens = 8", "output_tokens = 8", 1)
			}
			_, diags := LoadSource(".", "main.hcl", []byte(src), testOptions())
			line := strings.Count(src[:strings.Index(src, tc.value)], "\n") + 1
			for _, d := range diags {
				if d.Subject != nil && d.Subject.Start.Line == line && strings.Contains(d.Summary+d.Detail, tc.says) {
					return
				}
			}
			t.Errorf("no error at line %d naming %q; got %v", line, tc.says, diags)
		})
	}
}
