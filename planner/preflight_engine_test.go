package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/lang"
)

// TestMaxNumSeqsWarnsWhateverItsSource: the batch cap below the shape's
// concurrency warns whether the runtime block's attribute or
// --max-num-seqs in its args sets it (the args win, as in vLLM), and not
// when the args lift an attribute's cap again.
func TestMaxNumSeqsWarnsWhateverItsSource(t *testing.T) {
	for _, c := range []struct {
		name string
		attr int
		args []string
		want string // "" no warning
	}{
		{"args", 0, []string{"--max-num-seqs", "2"}, "--max-num-seqs in its args"},
		{"args with =", 0, []string{"--max-num-seqs=2"}, "--max-num-seqs in its args"},
		{"attribute", 2, nil, "its max_num_seqs"},
		{"args lift the attribute", 2, []string{"--max-num-seqs", "64"}, ""},
		{"engine default", 0, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := fixture()
			r := cfg.Runtimes["vllm"]
			r.MaxNumSeqs, r.RuntimeArgs = c.attr, append(append([]string{}, r.RuntimeArgs...), c.args...)
			got := findingsMatching(build(t, cfg), `^max_num_seqs 2 < concurrency 8$`)
			if c.want == "" {
				if len(got) != 0 {
					t.Fatalf("warned: %+v", got)
				}
				return
			}
			if len(got) != 2 || got[0].Severity != SeverityWarning || !strings.Contains(got[0].Detail, c.want) {
				t.Fatalf("want a warning per interactive lane naming %q, got %+v", c.want, got)
			}
		})
	}
}

// TestMaxModelLenOverPositionsWarns: a --max-model-len in the args longer
// than the model's positions warns, like a max_context that long.
func TestMaxModelLenOverPositionsWarns(t *testing.T) {
	cfg := fixture()
	cfg.Runtimes["vllm"].RuntimeArgs = []string{"--max-model-len", "100000"}
	got := findingsMatching(build(t, cfg), `^--max-model-len 100000 exceeds the 40960 positions of Qwen/Qwen3-0.6B$`)
	if len(got) != 2 || got[0].Severity != SeverityWarning || !strings.Contains(got[0].Detail, `lower --max-model-len in the args of runtime "vllm" to at most 40960`) {
		t.Fatalf("want a warning per qwen06 lane, got %+v", got)
	}
	cfg = fixture()
	cfg.Models["qwen06"].MaxContext = 100000
	if got := findingsMatching(build(t, cfg), `^max_context 100000 exceeds the 40960 positions`); len(got) != 2 {
		t.Fatalf("max_context: %+v", got)
	}
}

// TestOverflowFixesAreFeasible: a context overflow suggests only lengths
// of at least 1; when neither alone fits it says to shorten both, and when
// the model's positions are too few for the lane, a longer-context model.
func TestOverflowFixesAreFeasible(t *testing.T) {
	for _, c := range []struct {
		name          string
		in, out       int
		maxContext    int
		want, notWant []string
	}{
		{"output alone too long", 512, 9000, 8192,
			[]string{`lower output_tokens in shape "decode_heavy" to at most 7680`, "raise the context window (max_context of model \"qwen06\") to at least 9512"},
			[]string{"lower input_tokens", "at most 0"}},
		{"input alone too long", 9000, 128, 8192,
			[]string{`lower input_tokens in shape "decode_heavy" to at most 8064`},
			[]string{"lower output_tokens", "at most 0"}},
		{"both too long", 9000, 9000, 8192,
			[]string{`shorten both input_tokens and output_tokens in shape "decode_heavy" so that together they take at most 8192 tokens`},
			[]string{"at most 0", "lower output_tokens", "lower input_tokens"}},
		{"beyond the model", 30000, 20000, 40960,
			[]string{"use a model whose context window holds 50000 tokens (Qwen/Qwen3-0.6B has 40960 positions)"},
			[]string{"at most 0", "raise the context window"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := fixture()
			cfg.Runtimes["vllm"].RuntimeArgs = nil
			cfg.Models["qwen06"].MaxContext = c.maxContext
			cfg.Screens["qwen_l40s"].Models = []string{"qwen06"}
			cfg.Screens["qwen_l40s"].Baseline = "qwen06"
			sh := cfg.Shapes["decode_heavy"]
			sh.InputTokens, sh.OutputTokens = c.in, c.out
			got := findingsMatching(build(t, cfg), `^context overflow`)
			if len(got) != 1 {
				t.Fatalf("want one overflow, got %+v", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got[0].Detail, w) {
					t.Errorf("detail lacks %q:\n%s", w, got[0].Detail)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(got[0].Detail, w) {
					t.Errorf("detail has %q:\n%s", w, got[0].Detail)
				}
			}
		})
	}
}

// TestShortConcurrencyPointsAdviseRequests: a concurrency search's points
// are sized by requests (validate rejects duration there), so the
// too-short warning says to raise requests; a request_rate search's says
// duration.
func TestShortConcurrencyPointsAdviseRequests(t *testing.T) {
	cfg := fixture()
	cfg.Searches = map[string]*lang.Search{"cap": {
		Name: "cap", Vary: "concurrency", Min: 32, Max: 64, SLO: lang.SearchSLO{TTFTP95Ms: 40},
		Goodput: 0.95, Tolerance: 0.05, MaxPoints: 5, Requests: 40,
	}}
	cfg.Screens["qwen_l40s"].Search = "cap"
	cfg.Screens["qwen_l40s"].Models, cfg.Screens["qwen_l40s"].Baseline = []string{"qwen06"}, "qwen06"
	cfg.Screens["qwen_l40s"].Shapes = []string{"interactive"}
	cfg.Shapes["interactive"].InputTokens, cfg.Shapes["interactive"].OutputTokens = 512, 128
	p := build(t, cfg)
	got := findingsMatching(p, `^search "cap" points are too short to load the server$`)
	if len(got) == 0 {
		t.Fatalf("no too-short warning: %+v", p.Preflight)
	}
	for _, f := range got {
		if strings.Contains(f.Detail, "duration") || !strings.Contains(f.Detail, `Raise requests in search "cap" to at least`) {
			t.Errorf("advice %q", f.Detail)
		}
	}
	cfg.Searches["cap"].Vary, cfg.Searches["cap"].Min, cfg.Searches["cap"].Max = "request_rate", 0.5, 64
	cfg.Searches["cap"].Duration = time.Second
	for _, f := range findingsMatching(build(t, cfg), `^search "cap" points are too short`) {
		if !strings.Contains(f.Detail, `Set duration in search "cap"`) {
			t.Errorf("request_rate advice %q", f.Detail)
		}
	}
}

// TestChecksJoinThePreflight: Options.Checks' findings are the plan's
// preflight (an error blocks it), covered by its digest, and lanes waiting
// for a trace are not checked.
func TestChecksJoinThePreflight(t *testing.T) {
	var checked []string
	check := func(sc *Screen, l *Lane) []Finding {
		checked = append(checked, sc.Name+" "+l.Key)
		return []Finding{{Severity: SeverityError, Lane: l.ID, Summary: "refused " + l.Key}}
	}
	p, diags := Build(fixture(), nil, Options{Version: "test", Checks: []LaneCheck{check}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(checked) != 4 || !strings.HasPrefix(checked[0], "qwen_l40s ") {
		t.Fatalf("checked %v", checked)
	}
	if got := findingsMatching(p, `^refused `); len(got) != 4 || !p.HasErrors() {
		t.Fatalf("findings %+v", got)
	}
	if plain := build(t, fixture()); plain.PlanDigest == p.PlanDigest {
		t.Error("the digest does not cover the checks' findings")
	}
}
