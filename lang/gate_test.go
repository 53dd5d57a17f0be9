package lang

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGateConditionType: with the report's lane metrics known, a condition
// whose type is not bool (a bare metric, arithmetic, a string) is an error
// at validate at the condition, saying what it is; comparisons, logic,
// conditionals and functions over metrics pass.
func TestGateConditionType(t *testing.T) {
	metrics := []string{"failed", "runs", "ttft_p95_ms", "failures.timeout", "cv.output_token_throughput"}
	for _, c := range []struct {
		cond string
		want string // "" valid
	}{
		{"lane.failed", "this one is a number"},
		{"lane.failed + lane.runs", "this one is a number"},
		{"lane.failures.timeout", "this one is a number"},
		{`"yes"`, `this one is the string "yes"`},
		{`lane.failed == 0 ? "ok" : "bad"`, "this one is a string"},
		{"lane.failed == 0", ""},
		{"lane.failed == 0 && lane.failures.timeout < 1", ""},
		{"max(lane.ttft_p95_ms, 1) < 500 || !(lane.cv.output_token_throughput > 0.1)", ""},
		{"lane.runs >= 5 ? lane.failed == 0 : false", ""},
		// issue 26: a string where the metric is a number passed validate
		// and plan, and every lane was INCONCLUSIVE after its runs.
		{`lane.ttft_p95_ms <= "2s"`, `with the string "2s", so the report could never judge it (every lane would be INCONCLUSIVE). Fix: write 2000, in ms`},
		{`"500ms" > lane.ttft_p95_ms`, "Fix: write 500, in ms"},
		{`lane.failed < "3.9k"`, "Fix: write 3900 (a number"},
		{`lane.failed == "0"`, "a number never equals a string"},
		{`lane.failed == 0 && lane.ttft_p95_ms < "fast"`, "Fix: compare with a number"},
		{`lane.failed < max("a", 1)`, "The condition cannot be evaluated"},
	} {
		t.Run(c.cond, func(t *testing.T) {
			dir := t.TempDir()
			src := "gate \"g\" {\n  condition     = " + c.cond + "\n  error_message = \"x\"\n}\n"
			path := filepath.Join(dir, "main.hcl")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			opts := testOptions()
			opts.LaneMetrics = metrics
			_, diags := Load(path, opts)
			if c.want == "" {
				if diags.HasErrors() {
					t.Fatalf("want valid, got %v", diags)
				}
				return
			}
			if len(diags) != 1 || !strings.Contains(diags[0].Detail, c.want) || diags[0].Summary != "Invalid gate condition" {
				t.Fatalf("want one error saying %q, got %v", c.want, diags)
			}
			if r := diags[0].Subject; r == nil || r.Start.Line != 2 || r.Start.Column < 19 || r.End.Column > 19+len(c.cond) {
				t.Errorf("error at %v, want line 2 in the condition (from column 19)", r)
			}
		})
	}
}
