package planner

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/arch"
)

// TestEstimatePeers: lanes whose estimate inputs are equal (the same
// model, GPU and shape in two screens) are peers, so estimate computes
// their key and shares one simulation; a lane without a peer has a key
// no other lane has. Every pair of lanes with equal keys has equal peers.
func TestEstimatePeers(t *testing.T) {
	cfg := genConfig(3, 2, 2)
	twin := *cfg.Screens["gen"]
	twin.Name = "twin"
	twin.Models = twin.Models[:1] // the first model's 4 lanes again
	cfg.Screens["twin"] = &twin
	p, diags := Build(cfg, nil, Options{NoDigest: true})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	lanes := make([]*lanePlan, len(p.Lanes))
	for i, l := range p.Lanes {
		lanes[i] = &lanePlan{Lane: l}
	}
	loads, peers := estimateLoads(lanes)
	shared := 0
	for i, a := range lanes {
		if a.Perf == nil || !a.Estimate.Available {
			t.Fatalf("lane %s has no estimate", a.ID)
		}
		if peers[loads[i].peer] > 1 {
			shared++
		}
		for j, b := range lanes {
			ka := estimateKey(a.Perf, loads[i].load, loads[i].workload, a.Runs)
			kb := estimateKey(b.Perf, loads[j].load, loads[j].workload, b.Runs)
			if ka == kb && loads[i].peer != loads[j].peer {
				t.Errorf("lanes %s and %s have equal keys and different peers", a.ID, b.ID)
			}
			if ka == kb && a.Estimate.Estimate != b.Estimate.Estimate {
				t.Errorf("lanes %s and %s share a key but not an estimate", a.ID, b.ID)
			}
		}
	}
	if want := 2 * 2 * 2; shared != want {
		t.Errorf("%d lanes have a peer, want %d (the twin screen's and their originals)", shared, want)
	}
}

// A model block that overrides the parameters or the hidden size of its
// config leaves the config's MLP width behind: the width is derived
// from the overrides (perf.ModelArch.MLPWidth), as the config's
// parameter split is dropped. Without overrides the config's width
// stands.
func TestResolveModelArchDerivesTheMLPWidthOfOverrides(t *testing.T) {
	pinned, ok := arch.Lookup("Qwen/Qwen3-0.6B")
	if !ok {
		t.Fatal("Qwen3-0.6B is not in the catalog")
	}
	plain, _ := ResolveModelArch(&lang.Model{ID: "Qwen/Qwen3-0.6B"}, &pinned)
	if plain.MLPWidth != 3072 {
		t.Fatalf("from the config: MLP width %d, want 3,072", plain.MLPWidth)
	}
	for _, m := range []*lang.Model{{ID: "q", Params: 2_000_000_000}, {ID: "q", Hidden: 2048}} {
		a, _ := ResolveModelArch(m, &pinned)
		if a.MLPWidth != 0 {
			t.Errorf("overrides %+v: MLP width %d kept from the config, want it derived", m, a.MLPWidth)
		}
	}
}

// A lane whose requests spend most of their TTFT queued in the engine says
// so (a burst of 256 into the runtime's batch of 8), a lane of one stream
// does not; plan -verbose splits every lane's mean TTFT, and the plan's
// JSON carries the split (perf.TTFTParts).
func TestQueueingTTFTIsNamed(t *testing.T) {
	cfg := fixture()
	cfg.Executors["modal"].Capabilities = lang.BuiltinExecutors["modal"]
	cfg.Runtimes["vllm"].RuntimeArgs = append(cfg.Runtimes["vllm"].RuntimeArgs, "--max-num-seqs", "8")
	cfg.Shapes["interactive"].Concurrency, cfg.Shapes["interactive"].Requests = 256, 256
	cfg.Shapes["decode_heavy"].Concurrency = 1
	p := build(t, cfg)
	for _, l := range p.Lanes {
		parts := l.Estimate.TTFTParts
		if parts == nil || math.Abs(parts.FrontEndMs+parts.QueuedMs+parts.PrefillMs-parts.MeanMs) > 1e-9*parts.MeanMs {
			t.Fatalf("lane %s: TTFT parts %+v", l.ID, parts)
		}
		named := strings.Contains(strings.Join(l.Notes, "\n"), "TTFT mostly queueing")
		if burst := l.Shape == "interactive"; named != burst || (burst && parts.QueuedMs < parts.MeanMs/2) {
			t.Errorf("lane %s (shape %s): TTFT parts %+v, notes %q", l.ID, l.Shape, parts, l.Notes)
		}
	}
	var out strings.Builder
	if err := WriteTextOpts(&out, p, TextOptions{Verbose: true}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), " = "); !strings.Contains(out.String(), "Where the TTFT goes") || got < len(p.Lanes) {
		t.Errorf("plan -verbose:\n%s", out.String())
	}
	if js, err := json.Marshal(p); err != nil || !strings.Contains(string(js), `"queued_ms"`) {
		t.Errorf("plan JSON (%v) has no TTFT parts", err)
	}
}
