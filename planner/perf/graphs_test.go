package perf

import (
	"testing"

	"github.com/infercrane/infercrane/lang/engine"
)

// TestEagerStepsLaunchTheirKernels: a step vLLM runs without a CUDA
// graph lasts at least its layers' kernel launches, which run beside its
// GPU work. vLLM's V0 engine replays decodes of up to 256 sequences as
// graphs and runs larger decodes and every step with a prefill eager; V1
// pays no launches in the model unless --enforce-eager, which makes
// every step eager; a processor without CUDA graphs (the CPU) has none.
func TestEagerStepsLaunchTheirKernels(t *testing.T) {
	m, ok := LookupModel("meta-llama/Llama-3.1-8B-Instruct")
	if !ok {
		t.Fatal("Llama 3.1 8B is not in the catalog")
	}
	launches := float64(m.Layers) * eagerLayerUs / 1e6
	on := func(gpu string, count int, version string, args ...string) Hardware {
		h := hw(gpu, count)
		o, _ := FrontEnd("vllm", version, "completions")
		s, err := ResolveRuntime(engine.Runtime{RuntimeEngine: "vllm", RuntimeVersion: version, RuntimeArgs: args}, h.GPU, count, 2048)
		if err != nil {
			t.Fatal(err)
		}
		// The planner applies the version first, the catalog's server
		// the settings first: the order does not matter.
		o.Apply(&h.Assume, h.GPU)
		s.Assume(&h.Assume, h.GPU)
		other := hw(gpu, count)
		s.Assume(&other.Assume, other.GPU)
		o.Apply(&other.Assume, other.GPU)
		if other.Assume != h.Assume {
			t.Fatalf("vLLM %s %v on %s: the version then the settings give %+v, the other way %+v", version, args, gpu, h.Assume, other.Assume)
		}
		return h
	}
	graphed := func(h Hardware) Hardware { h.Assume.EagerSteps = EagerNone; return h }
	decode := func(h Hardware, seqs int) float64 { return StepTime(m, h, 0, 0, seqs, float64(300*seqs)) }

	// LambdaLabsML's servers: vLLM 0.6 over four H100s. A decode of 300
	// sequences is eager and waits for its launches; one of 256 replays
	// its graph as before.
	v0 := on("H100", 4, "0.6.0")
	if v0.Assume.EagerSteps != EagerUncaptured || v0.Assume.EagerLayerUs != eagerLayerUs {
		t.Fatalf("vLLM 0.6 on an H100: eager steps %q at %v us a layer, want the uncaptured ones at %v", v0.Assume.EagerSteps, v0.Assume.EagerLayerUs, eagerLayerUs)
	}
	if got, gpu := decode(v0, 300), decode(graphed(v0), 300); got < launches+v0.Assume.StepOverheadMs/1000 || gpu >= got {
		t.Errorf("V0 decode of 300 sequences over 4 H100s: %.2f ms (graphed %.2f), want at least the launches %.2f ms and the step overhead", 1000*got, 1000*gpu, 1000*launches)
	}
	if got, gpu := decode(v0, 256), decode(graphed(v0), 256); got != gpu {
		t.Errorf("V0 decode of 256 sequences: %.3f ms, want the graphed %.3f ms", 1000*got, 1000*gpu)
	}
	if got, gpu := StepTime(m, v0, 64, 1, 8, 3000), StepTime(m, graphed(v0), 64, 1, 8, 3000); got <= gpu || got < launches {
		t.Errorf("V0 step with a prefill: %.2f ms (graphed %.2f), want at least the launches %.2f ms", 1000*got, 1000*gpu, 1000*launches)
	}
	// A prefill whose GPU work outlasts the launches hides them.
	if got, gpu := StepTime(m, v0, 8192, 4, 0, 8192), StepTime(m, graphed(v0), 8192, 4, 0, 8192); got != gpu || gpu < 2*launches {
		t.Errorf("V0 prefill of 8,192 tokens: %.2f ms, graphed %.2f: the launches (%.2f ms) should hide under it", 1000*got, 1000*gpu, 1000*launches)
	}

	// V1: no launches in the model, until --enforce-eager.
	v1 := on("H100", 1, "0.11.0")
	if v1.Assume.EagerSteps != EagerNone || v1.Assume.EagerLayerUs != 0 || decode(v1, 1) >= launches {
		t.Errorf("vLLM 0.11: eager steps %q, a lone decode %.2f ms; want none and less than the launches %.2f ms", v1.Assume.EagerSteps, 1000*decode(v1, 1), 1000*launches)
	}
	eager := on("H100", 1, "0.11.0", "--enforce-eager")
	if eager.Assume.EagerSteps != EagerAll || decode(eager, 1) < launches || decode(eager, 1) <= decode(v1, 1) {
		t.Errorf("vLLM 0.11 with --enforce-eager: eager steps %q, a lone decode %.2f ms; want every step, at least %.2f ms", eager.Assume.EagerSteps, 1000*decode(eager, 1), 1000*launches)
	}
	if off := on("H100", 1, "0.11.0", "--enforce-eager=false"); off.Assume.EagerSteps != EagerNone {
		t.Errorf("--enforce-eager=false: eager steps %q, want none", off.Assume.EagerSteps)
	}

	// The CPU build has no CUDA graphs to leave out: its step overhead
	// holds its launches.
	cpu := on("CPU", 1, "0.6.0", "--enforce-eager")
	if cpu.Assume.EagerSteps != EagerNone || cpu.Assume.EagerLayerUs != 0 {
		t.Errorf("on the CPU: eager steps %q at %v us a layer, want none", cpu.Assume.EagerSteps, cpu.Assume.EagerLayerUs)
	}
}
