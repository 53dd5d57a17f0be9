package planner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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

// TestSavedDigestCoversEveryField: changing any field of a saved plan's
// file (each one its JSON names, found by reflection so a field added
// later is covered too) is refused as an edit.
func TestSavedDigestCoversEveryField(t *testing.T) {
	dir, cfg := specDir(t)
	s := NewSaved(build(t, cfg), cfg, nil, dir, filepath.Join(dir, ".infercrane"))
	s.DigestNames = map[string]string{"/elsewhere/x.vars.hcl": "x.vars.hcl"}
	b, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseSaved(b, "plan.json"); err != nil {
		t.Fatalf("the unedited plan: %v", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	edits := map[string]json.RawMessage{
		"spec_path":    json.RawMessage(`"/tmp/other"`),
		"dir":          json.RawMessage(`"/tmp/other"`),
		"state_dir":    json.RawMessage(`"/tmp/other/.infercrane"`),
		"spec":         json.RawMessage(`{"main.hcl":"# edited\n"}`),
		"variables":    json.RawMessage(`{"x":1}`),
		"inputs":       json.RawMessage(`{"spec":{},"profiles":{},"state":"sha256:00"}`),
		"digest_names": json.RawMessage(`{"/elsewhere/x.vars.hcl":"y.vars.hcl"}`),
		"digest":       json.RawMessage(`"sha256:` + strings.Repeat("0", 64) + `"`),
	}
	typ := reflect.TypeOf(SavedPlan{})
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || name == "format" || name == "plan" {
			continue // format: refused as unknown; plan: by plan_digest (TestLoadSavedRefusesTampering)
		}
		edit, ok := edits[name]
		if !ok {
			t.Errorf("field %q has no edit in this test: add one", name)
			continue
		}
		changed := map[string]json.RawMessage{}
		for k, v := range fields {
			changed[k] = v
		}
		changed[name] = edit
		bad, _ := json.Marshal(changed)
		_, err := ParseSaved(bad, "plan.json")
		if err == nil || !strings.Contains(err.Error(), "edited after it was made") {
			t.Errorf("%s edited: %v", name, err)
		}
	}
	delete(fields, "digest")
	bad, _ := json.Marshal(fields)
	if _, err := ParseSaved(bad, "plan.json"); err == nil || !strings.Contains(err.Error(), "has no digest") {
		t.Errorf("digest removed: %v", err)
	}
}

// TestSavedPlanChecksSpecDigestOnDisk: a saved plan whose record of its
// spec (snapshot and input digests) was rewritten to match a changed spec,
// its own digest recomputed, is still stale: the spec on disk does not
// give the plan's spec_digest, which the plan_digest covers.
func TestSavedPlanChecksSpecDigestOnDisk(t *testing.T) {
	dir, cfg := specDir(t)
	stateDir := filepath.Join(dir, state.DefaultDir)
	s := NewSaved(build(t, cfg), cfg, nil, dir, stateDir)
	cur, err := s.CurrentInputs()
	if err != nil {
		t.Fatal(err)
	}
	if ch := s.Changes(cur); len(ch) != 0 {
		t.Fatalf("fresh plan reports changes: %v", ch)
	}
	edited := s.Spec["main.hcl"] + "\n# edited\n"
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Spec["main.hcl"] = edited
	s.Inputs.Spec["main.hcl"] = digestBytes([]byte(edited))
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := s.Save(file); err != nil {
		t.Fatal(err)
	}
	forged, err := LoadSaved(file)
	if err != nil {
		t.Fatalf("a consistently rewritten plan reads (its digests agree): %v", err)
	}
	cur, err = forged.CurrentInputs()
	if err != nil {
		t.Fatal(err)
	}
	ch := forged.Changes(cur)
	if len(ch) != 1 || !strings.Contains(ch[0], "the spec files on disk give spec_digest") || !strings.Contains(ch[0], forged.Plan.SpecDigest) {
		t.Errorf("changes %v", ch)
	}
}

// TestSavedPlanFromAnotherDirectory: a plan made with relative paths
// records them absolute, so its inputs read the same from any working
// directory.
func TestSavedPlanFromAnotherDirectory(t *testing.T) {
	dir, _ := specDir(t)
	t.Chdir(filepath.Dir(dir))
	rel := filepath.Base(dir)
	cfg, diags := lang.Load(rel, lang.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	s := NewSaved(build(t, cfg), cfg, nil, rel, filepath.Join(rel, state.DefaultDir))
	if !filepath.IsAbs(s.SpecPath) || !filepath.IsAbs(s.Dir) || !filepath.IsAbs(s.StateDir) {
		t.Fatalf("paths not absolute: %q %q %q", s.SpecPath, s.Dir, s.StateDir)
	}
	t.Chdir(t.TempDir())
	cur, err := s.CurrentInputs()
	if err != nil {
		t.Fatal(err)
	}
	if ch := s.Changes(cur); len(ch) != 0 {
		t.Errorf("from another directory: %v", ch)
	}
}
