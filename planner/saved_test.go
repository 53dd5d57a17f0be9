package planner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/state"
)

// specDir writes a spec directory with a pinned profile and loads it.
func specDir(t testing.TB) (string, *lang.Config) {
	t.Helper()
	dir := t.TempDir()
	src := strings.Join(strings.Split(hclBlocks, "\n---\n"), "\n\n")
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.auto.vars.hcl"), []byte("# no variables\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := lang.Load(dir, lang.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return dir, cfg
}

func TestSavedPlanRoundTripAndChanges(t *testing.T) {
	dir, cfg := specDir(t)
	cfg.Traces = map[string]*lang.Trace{"chutes": {Name: "chutes", Profile: "profiles/chutes.json"}}
	if err := os.MkdirAll(filepath.Join(dir, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "profiles", "chutes.json"), []byte(`{"v":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(dir, state.DefaultDir)
	snap, err := state.Load(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	p := build(t, cfg)
	s := NewSaved(p, cfg, snap, dir, stateDir)
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := s.Save(file); err != nil {
		t.Fatal(err)
	}
	got, err := LoadSaved(file)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Marshal(p)
	b, _ := Marshal(got.Plan)
	if string(a) != string(b) {
		t.Fatal("the saved plan differs from the plan")
	}
	if _, ok := got.Spec["main.hcl"]; !ok || len(got.Inputs.Spec) != 2 {
		t.Errorf("spec snapshot %v, digests %v", keys(got.Spec), got.Inputs.Spec)
	}
	if _, ok := got.Spec["secret.auto.vars.hcl"]; ok {
		t.Error("variable files are kept by digest only")
	}
	cur, err := got.CurrentInputs()
	if err != nil {
		t.Fatal(err)
	}
	if ch := got.Changes(cur); len(ch) != 0 {
		t.Fatalf("fresh plan reports changes: %v", ch)
	}

	// Every kind of input change is named.
	edit := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit(filepath.Join(dir, "main.hcl"), got.Spec["main.hcl"]+"\n# edited\n")
	edit(filepath.Join(dir, "extra.hcl"), "# new file\n")
	edit(filepath.Join(dir, "profiles", "chutes.json"), `{"v":2}`)
	writeState(t, stateDir, p.Lanes[:1], []int{1})
	cur, err = got.CurrentInputs()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"spec file extra.hcl was added",
		"spec file main.hcl changed",
		"workload profile profiles/chutes.json changed",
		"the state in " + stateDir + " changed (an apply ran or was interrupted since the plan was made)",
	}
	if ch := got.Changes(cur); strings.Join(ch, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(ch, "\n"), strings.Join(want, "\n"))
	}
	if err := os.Remove(filepath.Join(dir, "main.hcl")); err != nil {
		t.Fatal(err)
	}
	cur, _ = got.CurrentInputs()
	if ch := got.Changes(cur); !strings.Contains(strings.Join(ch, "\n"), "spec file main.hcl was removed") {
		t.Errorf("removal not named: %v", ch)
	}
}

func TestLoadSavedRefusesTampering(t *testing.T) {
	dir, cfg := specDir(t)
	s := NewSaved(build(t, cfg), cfg, nil, dir, filepath.Join(dir, ".infercrane"))
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := s.Save(file); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	for name, mutate := range map[string]func(string) string{
		"plan":     func(s string) string { return strings.Replace(s, `"runs":5`, `"runs":6`, 1) },
		"snapshot": func(s string) string { return strings.Replace(s, `seed     = 7`, `seed     = 8`, 1) },
		"format":   func(s string) string { return strings.Replace(s, SavedFormat, "infercrane.saved-plan/v0", 1) },
		"unknown":  func(s string) string { return strings.Replace(s, `{"format"`, `{"extra":1,"format"`, 1) },
		"trailing": func(s string) string { return s + "{}" },
	} {
		bad := mutate(string(b))
		if bad == string(b) {
			t.Fatalf("%s: mutation did nothing", name)
		}
		if _, err := ParseSaved([]byte(bad), "plan.json"); err == nil {
			t.Errorf("%s: tampered saved plan accepted", name)
		}
	}
	if _, _, err := ReadPlanFile(file); err != nil {
		t.Errorf("ReadPlanFile(saved): %v", err)
	}
}

func keys(m map[string]string) []string { return sortedKeys(m) }

func TestSavedPlanVarFileOutsideSpecDir(t *testing.T) {
	dir, _ := specDir(t)
	vars := filepath.Join(t.TempDir(), "extra.vars.hcl")
	if err := os.WriteFile(vars, []byte("# nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(vars)) // given relative to the working directory, outside the spec dir
	cfg, diags := lang.Load(dir, lang.Options{VarFiles: []string{"extra.vars.hcl"}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	s := NewSaved(build(t, cfg), cfg, nil, dir, filepath.Join(dir, ".infercrane"))
	if _, ok := s.Inputs.Spec[filepath.ToSlash(vars)]; !ok {
		t.Fatalf("var file outside the spec dir not recorded by absolute path: %v", s.Inputs.Spec)
	}
	cur, err := s.CurrentInputs()
	if err != nil {
		t.Fatal(err)
	}
	if ch := s.Changes(cur); len(ch) != 0 {
		t.Errorf("unchanged inputs reported as changed: %v", ch)
	}
	if err := os.WriteFile(vars, []byte("# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cur, _ = s.CurrentInputs()
	if ch := s.Changes(cur); len(ch) != 1 || !strings.Contains(ch[0], "extra.vars.hcl changed") {
		t.Errorf("changes %v", ch)
	}
}
