package planner

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzUnmarshalPlan: any input either is refused or round-trips exactly.
func FuzzUnmarshalPlan(f *testing.F) {
	b, err := os.ReadFile("testdata/golden/screen-l40s/plan.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"format_version":"1"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Unmarshal(b)
		if err != nil {
			return
		}
		out, err := Marshal(p)
		if err != nil {
			t.Fatalf("accepted plan does not marshal: %v", err)
		}
		q, err := Unmarshal(out)
		if err != nil {
			t.Fatalf("re-reading a marshalled plan: %v", err)
		}
		again, _ := Marshal(q)
		if string(again) != string(out) {
			t.Fatal("Marshal is not stable")
		}
	})
}

// FuzzParseSaved: any input either is refused or is a saved plan whose
// digests verify and which saves and loads back unchanged.
func FuzzParseSaved(f *testing.F) {
	dir, cfg := specDir(f)
	s := NewSaved(build(f, cfg), cfg, nil, dir, filepath.Join(dir, ".infercrane"))
	file := filepath.Join(f.TempDir(), "plan.json")
	if err := s.Save(file); err != nil {
		f.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	f.Add(b)
	f.Add([]byte(`{"format":"infercrane.saved-plan/v1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSaved(b, "fuzz")
		if err != nil {
			return
		}
		path := filepath.Join(t.TempDir(), "p.json")
		if err := s.Save(path); err != nil {
			t.Fatalf("accepted saved plan does not save: %v", err)
		}
		back, err := LoadSaved(path)
		if err != nil {
			t.Fatalf("reloading: %v", err)
		}
		if back.Plan.PlanDigest != s.Plan.PlanDigest {
			t.Fatal("digest changed across save and load")
		}
	})
}

// FuzzPreflightContext: Build never panics, the graph stays valid, and the
// context check fires exactly when input + output exceeds the window (the
// fixture's modal lanes calibrate prompts, so template_headroom is not
// counted).
func FuzzPreflightContext(f *testing.F) {
	f.Add(1129, 349, 512, 8192, 8, 32, true)
	f.Add(7680, 512, 0, 8192, 4, 32, true)
	f.Add(0, -1, -5, 0, 0, 0, false)
	// A negative max_context never reaches the planner (validate refuses
	// it): the harness took it for unset (issue 25, defect 9).
	f.Add(10, 10, 0, -5, 1, 1, true)
	f.Fuzz(func(t *testing.T, in, out, headroom, ctx, conc, reqs int, chat bool) {
		cfg := fixture()
		s := cfg.Shapes["interactive"]
		s.InputTokens, s.OutputTokens, s.TemplateHeadroom = in%100000, out%100000, headroom%10000
		s.Concurrency, s.Requests = conc%300, reqs%1000
		if !chat {
			s.API = "completions"
		}
		cfg.Models["qwen06"].MaxContext = ctx % 200000
		cfg.Runtimes["vllm"].RuntimeArgs = nil
		p, _ := Build(cfg, nil, Options{})
		checkGraph(t, p)
		window := cfg.Models["qwen06"].MaxContext
		valid := s.InputTokens >= 1 && s.OutputTokens >= 1 && s.Concurrency >= 1 && s.Requests >= 1 && s.TemplateHeadroom >= 0 && window >= 0
		if window == 0 {
			window = 40960 // unset: the model's maximum positions
		}
		// The fixture's lanes run on modal, whose prompts are calibrated:
		// the template is inside input_tokens and the headroom not counted.
		overflow := s.InputTokens+s.OutputTokens > window
		var got bool
		for _, f := range p.Preflight {
			if l := p.Lane(f.Lane); l != nil && l.Model == "qwen06" && l.Shape == "interactive" && len(f.Summary) > 16 && f.Summary[:16] == "context overflow" {
				got = true
			}
		}
		if valid && got != overflow {
			t.Fatalf("in %d + headroom %d + out %d vs %d: overflow=%v, reported=%v", s.InputTokens, s.TemplateHeadroom, s.OutputTokens, window, overflow, got)
		}
	})
}
