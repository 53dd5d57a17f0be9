package sim

import (
	"fmt"
	"strings"
	"testing"
)

// burstSpec is vllm bench serve's default load on a KV cache too small for
// it: 48 requests of 512 + 32 tokens sent at once, where the cache
// (gpu_memory_utilization 0.07 on an L40S: about 5,900 tokens) holds about
// ten. The plan warns and estimates the burst with the engine's queueing.
const burstSpec = `
model "q06" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "r"
  max_context = 1024
}

gpu "l40s" {
  type = "L40S"
}

runtime "vllm" {
  engine  = "vllm"
  version = "0.22.1"
  args    = ["--gpu-memory-utilization", "0.07", "--max-model-len", "1024"]
}

executor "sim" {
  type    = "sim"
  speedup = 0.5
}

shape "burst" {
  input_tokens  = 512
  output_tokens = 32
  concurrency   = 48
  requests      = 48
  api           = "completions"
}

screen "kv" {
  models   = [model.q06]
  shapes   = [shape.burst]
  gpus     = [gpu.l40s]
  runtime  = runtime.vllm
  executor = executor.sim
  runs     = 1
  seed     = 7
}
`

// A burst beyond the KV cache is planned (a warning, not an error) and the
// simulated engine, queueing and preempting as the plan's scheduler does,
// measures what the plan predicted: duration, output throughput and TTFT
// within 5%, and the engine's own histogram of a request's time queued
// (158 ms of its 338 ms mean TTFT) the plan's part of the TTFT
// (perf.TTFTParts; its prefill, 6 ms, is under the 10 ms compared).
func TestSimAgreesOnABurstBeyondTheKVCache(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test; runs without -short")
	}
	if raceEnabled {
		t.Skip("the race detector slows the client and engine too much for a timing comparison")
	}
	p := planText(t, burstSpec)
	warned := false
	for _, f := range p.Preflight {
		warned = warned || strings.HasPrefix(f.Summary, "KV cache holds ")
	}
	l := p.Lanes[0]
	// A lone 512-token prefill with the front end takes about 10 ms: the
	// queue shows in the median TTFT.
	if e := l.Estimate.Estimate; !warned || e.TTFTMs < 100 {
		t.Fatalf("warned %v; estimate %+v: want the queueing in the TTFT", warned, e)
	}
	x, err := New(Schema().Resolve(map[string]any{"speedup": 0.5}))
	if err != nil {
		t.Fatal(err)
	}
	agreeOnSecondTry(t, x, l, 0.5, func(ms []measured) []string {
		if !hasMeasure(ms, "queued mean") {
			return []string{fmt.Sprintf("%s: the engine's server view has no time queued to compare (%+v)", l.Key, l.Estimate.TTFTParts)}
		}
		return checkAgreement(t, l.Key, ms, 0.05, "ttft p50", "latency p50", "output throughput", "queued mean", "prefill mean")
	})
}

// hasMeasure reports whether ms compares a figure named name.
func hasMeasure(ms []measured, name string) bool {
	for _, m := range ms {
		if m.name == name {
			return true
		}
	}
	return false
}

// The same burst on vLLM 0.6, whose front end batches (perf.FrontEnd: the
// 48 requests are admitted 2.5 ms apart and enter the engine together):
// the simulated engine runs the plan's batching front end in real time
// and measures what the plan predicted.
func TestSimAgreesOnABatchingFrontEndBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test; runs without -short")
	}
	if raceEnabled {
		t.Skip("the race detector slows the client and engine too much for a timing comparison")
	}
	p := planText(t, strings.Replace(burstSpec, `version = "0.22.1"`, `version = "0.6.0"`, 1))
	l := p.Lanes[0]
	if a := l.Perf.Hardware.Assume; a.FrontEndAdmitUs <= 0 || a.FrontEndTokenUs != 0 {
		t.Fatalf("vLLM 0.6's lane assumes %+v: want the batching front end", a)
	}
	x, err := New(Schema().Resolve(map[string]any{"speedup": 0.5}))
	if err != nil {
		t.Fatal(err)
	}
	agreeOnSecondTry(t, x, l, 0.5, func(ms []measured) []string {
		return checkAgreement(t, l.Key, ms, 0.05, "ttft p50", "latency p50", "output throughput")
	})
}

// The same burst of chat requests on vLLM 0.11, whose chat front end
// batches a burst (perf.FrontEnd: the first request goes on alone, the
// other 47 are prepared 15 ms apart and enter the engine together): the
// simulated engine runs the plan's front end in real time and measures
// what the plan predicted.
func TestSimAgreesOnAV1ChatBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test; runs without -short")
	}
	if raceEnabled {
		t.Skip("the race detector slows the client and engine too much for a timing comparison")
	}
	spec := strings.Replace(burstSpec, `version = "0.22.1"`, `version = "0.11.0"`, 1)
	spec = strings.Replace(spec, `api           = "completions"`, `api           = "chat"`, 1)
	p := planText(t, spec)
	l := p.Lanes[0]
	if a := l.Perf.Hardware.Assume; a.FrontEndAdmitUs <= 0 || !a.FrontEndIdleAlone || a.FrontEndTokenUs != 0 {
		t.Fatalf("vLLM 0.11's chat lane assumes %+v: want the batching chat front end", a)
	}
	x, err := New(Schema().Resolve(map[string]any{"speedup": 0.5}))
	if err != nil {
		t.Fatal(err)
	}
	agreeOnSecondTry(t, x, l, 0.5, func(ms []measured) []string {
		return checkAgreement(t, l.Key, ms, 0.05, "ttft p50", "latency p50", "output throughput")
	})
}
