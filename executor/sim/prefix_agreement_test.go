package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/planner"
)

// prefixSpec screens one prefix-reuse shape on two runtimes of one
// screen, with prefix caching (vLLM 0.22's default) and without it, on the
// sim executor.
const prefixSpec = `
model "q06" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "r"
  max_context = 4096
}

gpu "l40s" {
  type        = "L40S"
  prefill_mfu = 0.05
}

runtime "cached" {
  engine  = "vllm"
  version = "0.22.1"
}

runtime "uncached" {
  engine  = "vllm"
  version = "0.22.1"
  args    = ["--no-enable-prefix-caching"]
}

executor "sim" {
  type    = "sim"
  speedup = 0.5
}

shape "reuse" {
  input_tokens  = 3072
  output_tokens = 16
  concurrency   = 1
  requests      = 24
  warmup        = 2
  prefix {
    groups        = 2
    shared_tokens = 2560
  }
}

screen "prefix" {
  models   = [model.q06]
  shapes   = [shape.reuse]
  gpus     = [gpu.l40s]
  runtimes = [runtime.cached, runtime.uncached]
  executor = executor.sim
  runs     = 1
  seed     = 3
}
`

// TestSimReproducesPrefixReuse: the estimator and the simulated engine
// model prefix caching alike (the engine finds cached blocks by hashing the
// prompts it is sent, the estimator from the workload's draws, both by the
// step loop's timed rule, planner.PrefixCache), so a prefix-reuse lane's
// TTFT, latency and throughput agree within 5%; and the plan predicts the
// lower TTFT of reuse with caching on. One stream, caching on and off;
// several streams are TestSimReproducesPrefixReuseStreams.
func TestSimReproducesPrefixReuse(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test; runs without -short")
	}
	p := planText(t, prefixSpec)
	ttft := map[string]float64{}
	for _, l := range p.Lanes {
		ttft[l.Runtime] = l.Estimate.TTFTMs
		t.Run(l.Runtime, func(t *testing.T) {
			if caching := l.Perf.Engine.PrefixCaching; caching != (l.Runtime == "cached") {
				t.Fatalf("prefix caching resolved %v for runtime %s", caching, l.Runtime)
			}
			agreeWithin5(t, l)
		})
	}
	if len(ttft) != 2 || !(ttft["cached"] < 0.5*ttft["uncached"]) {
		t.Errorf("planned TTFT with prefix caching %.1f ms, without %.1f ms: reuse of 2,560 of 3,072 tokens should more than halve it", ttft["cached"], ttft["uncached"])
	}
}

// agreeWithin5 applies lane l on the sim executor at speedup 0.5 (the
// executor of prefixSpec and sessionSpec) and checks TTFT p50, latency p50
// and output throughput against the plan within 5%.
func agreeWithin5(t *testing.T, l *planner.Lane) {
	t.Helper()
	const speedup = 0.5
	x, err := New(Schema().Resolve(map[string]any{"speedup": float64(speedup)}))
	if err != nil {
		t.Fatal(err)
	}
	agreeOnSecondTry(t, x, l, speedup, func(ms []measured) []string {
		return checkAgreement(t, l.Key, ms, 0.05, "ttft p50", "latency p50", "output throughput")
	})
}

// prefixStreamsSpec is prefixSpec's reuse shape with prefix caching on at
// two and four streams, where requests of one group run together.
var prefixStreamsSpec = strings.NewReplacer(
	`  concurrency   = 1
  requests      = 24
  warmup        = 2`, `  concurrency   = 2
  requests      = 32
  warmup        = 2`,
	`shapes   = [shape.reuse]`, `shapes   = [shape.reuse, shape.reuse4]`,
	`runtimes = [runtime.cached, runtime.uncached]`, `runtimes = [runtime.cached]`,
).Replace(prefixSpec) + `
shape "reuse4" {
  input_tokens  = 3072
  output_tokens = 16
  concurrency   = 4
  requests      = 48
  warmup        = 4
  prefix {
    groups        = 2
    shared_tokens = 2560
  }
}
`

// TestSimReproducesPrefixReuseStreams: with several streams, requests of
// one prefix group are in flight together, and what each finds cached
// depends on when it is scheduled against the steps that computed the
// group's blocks (planner.PrefixCache). Both clocks apply that one rule, so
// the plan's TTFT p50 agrees with the engine's within 5% and latency and
// throughput within 3%. Before the rule was shared, the engine cached a
// request's blocks only when it finished and the plan counted any earlier
// sent request: at two streams the plan said TTFT p50 52 ms, the engine
// measured 29 ms.
func TestSimReproducesPrefixReuseStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test; runs without -short")
	}
	p := planText(t, prefixStreamsSpec)
	if len(p.Lanes) != 2 {
		t.Fatalf("%d lanes, want the two-stream and the four-stream one", len(p.Lanes))
	}
	for _, l := range p.Lanes {
		t.Run(fmt.Sprintf("c%d", l.Inputs.Concurrency), func(t *testing.T) { agreeStreams(t, l) })
	}
}

// agreeStreams applies lane l on the sim executor at speedup 0.5 and
// checks TTFT p50 against the plan within 5%, latency p50 and output
// throughput within 3%.
func agreeStreams(t *testing.T, l *planner.Lane) {
	t.Helper()
	const speedup = 0.5
	x, err := New(Schema().Resolve(map[string]any{"speedup": float64(speedup)}))
	if err != nil {
		t.Fatal(err)
	}
	agreeOnSecondTry(t, x, l, speedup, func(ms []measured) []string {
		return append(checkAgreement(t, l.Key, ms, 0.05, "ttft p50"), checkAgreement(t, l.Key, ms, 0.03, "latency p50", "output throughput")...)
	})
}
