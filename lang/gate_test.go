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
			if r := diags[0].Subject; r == nil || r.Start.Line != 2 || r.Start.Column != 19 {
				t.Errorf("error at %v, want line 2, column 19", r)
			}
		})
	}
}
