package planner

import (
	"encoding/json"
	"strings"
	"testing"
)

// runtimesSpec is a prefix-reuse shape on two runtimes that differ only by
// prefix caching; SCREEN_RUNTIMES is replaced by the screen's runtime
// attribute.
const runtimesSpec = `
model "qwen06" {
  id          = "Qwen/Qwen3-0.6B"
  max_context = 4096
}

gpu "l40s" {
  type = "L40S"
}

runtime "cache" {
  engine  = "vllm"
  version = "0.22.1"
  args    = ["--enable-prefix-caching"]
}

runtime "nocache" {
  engine  = "vllm"
  version = "0.22.1"
  args    = ["--no-enable-prefix-caching"]
}

runtime "cache_again" {
  engine  = "vllm"
  version = "0.22.1"
  args    = ["--enable-prefix-caching"]
}

shape "prefixed" {
  input_tokens      = 2048
  output_tokens     = 16
  template_headroom = 32
  concurrency       = 4
  requests          = 32
  prefix {
    groups        = 4
    shared_tokens = 1536
  }
}

screen "s" {
  models = [model.qwen06]
  shapes = [shape.prefixed]
  gpus   = [gpu.l40s]
  SCREEN_RUNTIMES
  runs   = 5
  seed   = 3
}
`

func planRuntimes(t *testing.T, attr string) *Plan {
	t.Helper()
	return planSpec(t, strings.Replace(runtimesSpec, "SCREEN_RUNTIMES", attr, 1))
}

// A screen listing one runtime, either way, plans exactly the lanes (keys,
// IDs, plan JSON) it planned before screens could list several.
func TestOneRuntimeKeepsLaneKeysAndIDs(t *testing.T) {
	single := planRuntimes(t, "runtime = runtime.cache")
	listed := planRuntimes(t, "runtimes = [runtime.cache]")
	if len(single.Lanes) != 1 || len(listed.Lanes) != 1 {
		t.Fatalf("lanes %d and %d, want 1 each", len(single.Lanes), len(listed.Lanes))
	}
	a, b := single.Lanes[0], listed.Lanes[0]
	if a.Key != "s/qwen06/prefixed/l40s" || b.Key != a.Key || b.ID != a.ID || a.Runtime != "cache" || b.Runtime != "cache" {
		t.Errorf("lanes %s %s (%s) and %s %s (%s), want one key without the runtime and one ID", a.Key, a.ID, a.Runtime, b.Key, b.ID, b.Runtime)
	}
	ja, _ := json.Marshal(single.Screens)
	jb, _ := json.Marshal(listed.Screens)
	if string(ja) != string(jb) || strings.Contains(string(ja), `"runtimes"`) {
		t.Errorf("screens differ or name runtimes:\n%s\n%s", ja, jb)
	}
	la, _ := json.Marshal(single.Lanes)
	lb, _ := json.Marshal(listed.Lanes)
	if string(la) != string(lb) {
		t.Errorf("lanes differ:\n%s\n%s", la, lb)
	}
}

// Two runtimes are two lanes whose keys end in the runtime, on two
// servers, and the estimator predicts each with its own prefix caching:
// the lane that reuses the shared prefix prefills less and answers sooner.
func TestRuntimesAreLanes(t *testing.T) {
	p := planRuntimes(t, "runtimes = [runtime.nocache, runtime.cache]")
	if len(p.Lanes) != 2 {
		t.Fatalf("lanes = %d, want 2", len(p.Lanes))
	}
	if got := p.Screens[0].Runtimes; len(got) != 2 || got[0] != "nocache" || got[1] != "cache" {
		t.Errorf("screen runtimes = %v, want [nocache cache] in spec order", got)
	}
	byRuntime := map[string]*Lane{}
	for _, l := range p.Lanes {
		byRuntime[l.Runtime] = l
		if l.Key != "s/qwen06/prefixed/l40s/"+l.Runtime {
			t.Errorf("lane key %q does not end in its runtime %q", l.Key, l.Runtime)
		}
		if l.ID != LaneID(l.Inputs) {
			t.Errorf("lane %s: ID %s is not the hash of its inputs", l.Key, l.ID)
		}
	}
	on, off := byRuntime["cache"], byRuntime["nocache"]
	if on == nil || off == nil {
		t.Fatalf("lanes by runtime: %v", byRuntime)
	}
	if on.ID == off.ID || on.Deployment == off.Deployment {
		t.Errorf("the two runtimes share ID %s / deployment %s", on.ID, on.Deployment)
	}
	if on.Perf == nil || off.Perf == nil || !on.Perf.Engine.PrefixCaching || off.Perf.Engine.PrefixCaching {
		t.Fatalf("prefix caching not resolved per runtime: on %+v off %+v", on.Perf, off.Perf)
	}
	if !on.Estimate.Available || !off.Estimate.Available {
		t.Fatal("estimates unavailable")
	}
	// 75% of every prompt after its group's first is cached: the median
	// TTFT must drop well below the uncached lane's.
	if on.Estimate.TTFTMs >= 0.8*off.Estimate.TTFTMs {
		t.Errorf("estimated TTFT p50 with prefix caching %.2f ms, without %.2f ms: caching should cut it", on.Estimate.TTFTMs, off.Estimate.TTFTMs)
	}
	// The lane off the reference runtime (nocache, listed first) notes
	// its prediction beside it; the reference lane has nothing to note.
	if len(on.Notes) != 1 || !strings.HasPrefix(on.Notes[0], "predicted against runtime nocache: TTFT p50 ") || len(off.Notes) != 0 {
		t.Errorf("notes: cache %q, nocache %q", on.Notes, off.Notes)
	}
	// The plan text shows the runtime of each lane.
	var text strings.Builder
	if err := WriteText(&text, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RUNTIME", "nocache", " cache "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("plan text lacks %q:\n%s", want, text.String())
		}
	}
	if len(findingsMatching(p, "same server")) != 0 {
		t.Errorf("runtimes that differ were warned about: %v", findingsMatching(p, "same server"))
	}
}

// Runtimes that resolve to the same inputs measure one server twice: the
// plan warns, and the lanes still get distinct IDs.
func TestIdenticalRuntimesWarn(t *testing.T) {
	p := planRuntimes(t, "runtimes = [runtime.cache, runtime.cache_again]")
	fs := findingsMatching(p, `runtimes "cache" and "cache_again" of screen "s" are the same server`)
	if len(fs) != 1 || fs[0].Severity != SeverityWarning {
		t.Errorf("findings %v, want one warning", p.Preflight)
	}
	if len(p.Lanes) != 2 || p.Lanes[0].ID == p.Lanes[1].ID {
		t.Errorf("lanes %v: want two with distinct IDs", p.Lanes)
	}
}
