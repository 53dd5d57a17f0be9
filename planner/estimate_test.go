package planner

import (
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
