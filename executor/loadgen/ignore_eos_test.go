package loadgen_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

// TestIgnoreEOSIsSent: the shape option ignore_eos reaches every request.
// Left at its default the simulated engine generates max_tokens; sent as
// false it stops at its own length, shorter here, and no such answer is
// counted as truncated (which ignore_eos = true would mean).
func TestIgnoreEOSIsSent(t *testing.T) {
	url := startSim(t, sim.Options{})
	outputs := func(cfg loadgen.Config) (lo, hi int) {
		t.Helper()
		res, err := loadgen.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Failed != 0 {
			t.Fatalf("%d requests failed: %v", res.Summary.Failed, res.Summary.Failures)
		}
		lo = cfg.OutputTokens
		for _, r := range res.Records {
			if !r.Warmup {
				lo, hi = min(lo, r.OutputTokens), max(hi, r.OutputTokens)
			}
		}
		return lo, hi
	}
	cfg := baseConfig(url)
	cfg.OutputTokens = 400
	if lo, hi := outputs(cfg); lo != 400 || hi != 400 {
		t.Errorf("default ignore_eos: outputs %d..%d tokens, want 400", lo, hi)
	}
	no := false
	cfg.IgnoreEOS = &no
	if _, hi := outputs(cfg); hi >= 400 || hi == 0 {
		t.Errorf("ignore_eos = false: longest output %d tokens, want the engine's own length, under 400", hi)
	}
	// The option travels in the config's JSON (a sandbox's copy) only when
	// it is not the default.
	b, _ := json.Marshal(cfg)
	var back loadgen.Config
	if err := json.Unmarshal(b, &back); err != nil || back.IgnoresEOS() {
		t.Errorf("ignore_eos = false lost in the config's JSON: %s", b)
	}
	cfg.IgnoreEOS = nil
	if b, _ := json.Marshal(cfg); strings.Contains(string(b), "ignore_eos") {
		t.Errorf("the default ignore_eos is in the config's JSON: %s", b)
	}
}
