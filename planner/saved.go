package planner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/state"
)

// SavedFormat identifies saved plan files (plan -out). Version 2 added the
// digest over every field of the file.
const SavedFormat = "infercrane.saved-plan/v2"

// savedFormatV1 identifies saved plans of earlier releases, whose digests
// covered the plan only: show, diff and report still read them (a state's
// plan.json may be one), apply refuses them (see Unverified).
const savedFormatV1 = "infercrane.saved-plan/v1"

// absent is the digest recorded for an input file that does not exist.
const absent = "absent"

// SavedPlan is a plan saved with -out: the plan, a snapshot of the spec it
// was made from, the variables, and the digest of every input, so apply
// can refuse it when anything changed since. Digest covers every other
// field, so an edit to any part of the file is refused too.
type SavedPlan struct {
	Format string `json:"format"`
	// Digest is "sha256:" + hex of the canonical JSON of the saved plan
	// with this field empty (its plan keeps its plan_digest); see Encode.
	Digest string `json:"digest,omitempty"`
	// SpecPath is the spec path given to plan (a directory or one file),
	// made absolute, so the plan applies from any working directory.
	SpecPath string `json:"spec_path"`
	// Dir is the spec directory (absolute).
	Dir string `json:"dir"`
	// StateDir is the state directory the plan read (absolute).
	StateDir string `json:"state_dir"`
	// Spec holds the spec files' contents by path relative to Dir. Variable
	// files (*.vars.hcl) are recorded by digest only, since they may hold
	// secrets.
	Spec map[string]string `json:"spec"`
	// Variables are the variable values (sensitive ones redacted).
	Variables map[string]any `json:"variables"`
	// Inputs are the digests of every input as the plan saw them.
	Inputs InputDigests `json:"inputs"`
	// DigestNames maps the key in Inputs.Spec of each file that the plan's
	// spec_digest names otherwise (a -var-file outside the spec directory
	// is keyed by its absolute path and was hashed by the path as given),
	// so apply can recompute spec_digest from the files on disk.
	DigestNames map[string]string `json:"digest_names,omitempty"`
	Plan        *Plan             `json:"plan"`

	// legacy is set for a saved plan of format v1 (see Unverified).
	legacy bool
}

// InputDigests are the digests of everything a plan depends on besides
// the infercrane version.
type InputDigests struct {
	// Spec maps spec file paths (relative to the spec dir) to digests.
	Spec map[string]string `json:"spec"`
	// Profiles maps pinned workload profile paths to digests ("absent" when
	// the file does not exist).
	Profiles map[string]string `json:"profiles"`
	// State is the digest of the state directory's lanes and completed runs.
	State string `json:"state"`

	// specDigest is, in the digests CurrentInputs reads, the spec digest of
	// the recorded spec files as they are on disk ("" when one is missing).
	specDigest string
}

// Digests computes the input digests of a loaded spec and state.
func Digests(cfg *lang.Config, snap *state.Snapshot) InputDigests {
	in := InputDigests{Spec: map[string]string{}, Profiles: map[string]string{}, State: StateDigest(snap)}
	for name, b := range specFiles(cfg) {
		in.Spec[name] = digestBytes(b)
	}
	for _, t := range cfg.Traces {
		if t != nil && t.Profile != "" {
			in.Profiles[filepath.ToSlash(t.Profile)] = fileDigest(resolve(cfg.Dir, t.Profile))
		}
	}
	return in
}

// StateDigest is the digest of what a state snapshot holds for planning:
// its lanes' IDs, keys, inputs, run counts and completed runs.
func StateDigest(snap *state.Snapshot) string {
	type lane struct {
		ID        string         `json:"id"`
		Key       string         `json:"key"`
		Inputs    map[string]any `json:"inputs"`
		Runs      int            `json:"runs"`
		Completed []int          `json:"completed"`
	}
	lanes := []lane{}
	if snap != nil {
		for _, id := range sortedKeys(snap.Lanes) {
			r := snap.Lanes[id]
			if r == nil {
				continue
			}
			done := append([]int{}, r.Completed...)
			sort.Ints(done)
			lanes = append(lanes, lane{r.ID, r.Key, r.Inputs, r.Runs, done})
		}
	}
	b, err := encode(lanes)
	if err != nil {
		return "unreadable"
	}
	return digestBytes(b)
}

// NewSaved wraps a plan made from cfg and snap for saving. specPath is the
// path given to plan, stateDir the state directory it read.
func NewSaved(p *Plan, cfg *lang.Config, snap *state.Snapshot, specPath, stateDir string) *SavedPlan {
	s := &SavedPlan{
		Format: SavedFormat, SpecPath: absPath(specPath), Dir: absPath(cfg.Dir), StateDir: absPath(stateDir),
		Spec: map[string]string{}, Variables: p.Variables, Inputs: Digests(cfg, snap), Plan: p,
	}
	varFiles := map[string]bool{}
	for _, f := range cfg.VarFiles {
		varFiles[relPath(cfg.Dir, f)] = true
	}
	for f := range cfg.Files {
		if key, name := relPath(cfg.Dir, f), lang.SpecFileName(cfg.Dir, f); key != name {
			if s.DigestNames == nil {
				s.DigestNames = map[string]string{}
			}
			s.DigestNames[key] = name
		}
	}
	for name, b := range specFiles(cfg) {
		// Variable files (any name given to -var-file) may hold secrets:
		// they are recorded by digest only.
		if !varFiles[name] && !strings.HasSuffix(name, ".vars.hcl") && !strings.HasSuffix(name, ".json") {
			s.Spec[name] = string(b)
		}
	}
	return s
}

// absPath is p made absolute (p itself when that fails, or for "").
func absPath(p string) string {
	if p == "" {
		return p
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Encode returns the saved plan's file content (compact canonical JSON, no
// trailing newline) in the current format, with its plan's plan_digest and
// its own digest computed. The state's plan.json holds the same bytes.
func (s *SavedPlan) Encode() ([]byte, error) {
	if s.Plan == nil {
		return nil, errors.New("saved plan has no plan")
	}
	c := *s
	c.Format = SavedFormat
	pc := *s.Plan
	d, err := Digest(&pc)
	if err != nil {
		return nil, err
	}
	pc.PlanDigest = d
	c.Plan = &pc
	if c.Digest, err = c.digest(); err != nil {
		return nil, err
	}
	return encode(&c)
}

// digest is the saved plan's digest: "sha256:" + hex of its canonical JSON
// with Digest empty.
func (s *SavedPlan) digest() (string, error) {
	c := *s
	c.Digest = ""
	b, err := encode(&c)
	if err != nil {
		return "", err
	}
	return digestBytes(b), nil
}

// Unverified says why apply must refuse a saved plan that reads well
// otherwise ("" when it need not): one of format v1, whose digests did not
// cover its state directory, spec path or spec snapshot.
func (s *SavedPlan) Unverified() string {
	if s.legacy {
		return fmt.Sprintf("it has format %q, made by an earlier infercrane, whose digests do not cover the whole file (its state directory and spec snapshot could be edited unnoticed)", savedFormatV1)
	}
	return ""
}

// Save writes the saved plan to path atomically (a temporary file renamed
// into place), readable by others since it holds no secrets.
func (s *SavedPlan) Save(path string) error {
	b, err := s.Encode()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plan-*.tmp")
	if err != nil {
		return fmt.Errorf("cannot save the plan: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("cannot save the plan: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("cannot save the plan: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// LoadSaved reads a saved plan, checking its format, that its plan digest
// matches the plan and that its spec snapshot matches the recorded digests.
func LoadSaved(path string) (*SavedPlan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the saved plan: %w", err)
	}
	return ParseSaved(b, path)
}

// ParseSaved parses the bytes of a saved plan; name is used in errors.
func ParseSaved(b []byte, name string) (*SavedPlan, error) {
	var s SavedPlan
	if err := decodeStrict(b, &s); err != nil {
		return nil, fmt.Errorf("%s %w (%v)", name, ErrNotPlan, err)
	}
	if s.Format != SavedFormat && s.Format != savedFormatV1 {
		return nil, fmt.Errorf("%s: %w: it has format %q, this infercrane reads %q", name, ErrPlanFormat, s.Format, SavedFormat)
	}
	s.legacy = s.Format == savedFormatV1
	if s.Plan == nil {
		return nil, fmt.Errorf("%s %w: it holds no plan", name, ErrNotPlan)
	}
	if !slices.Contains(readableVersions, s.Plan.FormatVersion) {
		return nil, fmt.Errorf("%s: %w: it holds a plan of format_version %q, this infercrane reads %q", name, ErrPlanFormat, s.Plan.FormatVersion, FormatVersion)
	}
	d, err := Digest(s.Plan)
	if err != nil {
		return nil, err
	}
	if d != s.Plan.PlanDigest {
		return nil, fmt.Errorf("%s %w: its plan_digest is %s but its content gives %s", name, ErrPlanEdited, s.Plan.PlanDigest, d)
	}
	if !s.legacy {
		whole, err := s.digest()
		if err != nil {
			return nil, err
		}
		switch {
		case s.Digest == "":
			return nil, fmt.Errorf("%s %w: it has no digest", name, ErrPlanEdited)
		case whole != s.Digest:
			return nil, fmt.Errorf("%s %w: its digest is %s but its content gives %s (every field counts: state_dir, spec_path, dir, spec, variables, inputs, digest_names and the plan)", name, ErrPlanEdited, s.Digest, whole)
		}
	}
	for f, src := range s.Spec {
		if s.Inputs.Spec[f] != digestBytes([]byte(src)) {
			return nil, fmt.Errorf("%s %w: its snapshot of %s does not match the recorded digest", name, ErrPlanEdited, f)
		}
	}
	if s.Spec == nil {
		s.Spec = map[string]string{}
	}
	if s.Inputs.Spec == nil {
		s.Inputs.Spec = map[string]string{}
	}
	if s.Inputs.Profiles == nil {
		s.Inputs.Profiles = map[string]string{}
	}
	restoreCapabilities(s.Plan)
	return &s, nil
}

// CurrentInputs reads the digests of the saved plan's inputs as they are
// now on disk: the recorded spec files and any spec file added to the spec
// directory since, the pinned profiles, and the state directory.
func (s *SavedPlan) CurrentInputs() (InputDigests, error) {
	cur := InputDigests{Spec: map[string]string{}, Profiles: map[string]string{}}
	for name := range s.Inputs.Spec {
		if d := fileDigest(resolve(s.Dir, name)); d != absent {
			cur.Spec[name] = d
		}
	}
	if fi, err := os.Stat(s.SpecPath); err == nil && fi.IsDir() {
		entries, err := os.ReadDir(s.SpecPath)
		if err != nil {
			return cur, err
		}
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() || !(strings.HasSuffix(n, ".hcl") || strings.HasSuffix(n, ".auto.vars.json")) || strings.HasPrefix(n, ".") ||
				(strings.HasSuffix(n, ".vars.hcl") && !strings.HasSuffix(n, ".auto.vars.hcl")) {
				continue
			}
			rel := relPath(s.Dir, filepath.Join(s.SpecPath, n))
			if _, ok := cur.Spec[rel]; !ok {
				cur.Spec[rel] = fileDigest(filepath.Join(s.SpecPath, n))
			}
		}
	}
	for name := range s.Inputs.Profiles {
		cur.Profiles[name] = fileDigest(resolve(s.Dir, name))
	}
	cur.specDigest = s.specDigestOnDisk()
	snap, err := state.Load(s.StateDir)
	if err != nil {
		return cur, fmt.Errorf("cannot read the state directory %s: %w", s.StateDir, err)
	}
	cur.State = StateDigest(snap)
	return cur, nil
}

// Changes names every input that differs between the saved plan and cur
// (as CurrentInputs or Digests computed them), one sentence each, in a
// stable order; nil means the plan is still valid.
func (s *SavedPlan) Changes(cur InputDigests) []string {
	var out []string
	out = append(out, mapChanges("spec file", s.Inputs.Spec, cur.Spec)...)
	if len(out) == 0 && cur.specDigest != "" && s.Plan != nil && cur.specDigest != s.Plan.SpecDigest {
		out = append(out, fmt.Sprintf("the spec files on disk give spec_digest %s, but the plan was made from %s (the saved plan's record of its spec files does not match the plan)", cur.specDigest, s.Plan.SpecDigest))
	}
	out = append(out, mapChanges("workload profile", s.Inputs.Profiles, cur.Profiles)...)
	if s.Inputs.State != cur.State {
		out = append(out, fmt.Sprintf("the state in %s changed (an apply ran or was interrupted since the plan was made)", s.StateDir))
	}
	return out
}

// mapChanges compares two path -> digest maps.
func mapChanges(what string, old, cur map[string]string) []string {
	var out []string
	names := map[string]bool{}
	for n := range old {
		names[n] = true
	}
	for n := range cur {
		names[n] = true
	}
	for _, n := range sortedKeys(names) {
		o, okO := old[n]
		c, okC := cur[n]
		switch {
		case okO && o != absent && (!okC || c == absent):
			out = append(out, fmt.Sprintf("%s %s was removed", what, n))
		case (!okO || o == absent) && okC && c != absent:
			out = append(out, fmt.Sprintf("%s %s was added", what, n))
		case o != c:
			out = append(out, fmt.Sprintf("%s %s changed", what, n))
		}
	}
	return out
}

// specDigestOnDisk is the spec digest of the spec files the saved plan
// records (Inputs.Spec), read from disk now and named as the plan's
// spec_digest named them; "" when one cannot be read.
func (s *SavedPlan) specDigestOnDisk() string {
	files := make(map[string][]byte, len(s.Inputs.Spec))
	for key := range s.Inputs.Spec {
		b, err := os.ReadFile(resolve(s.Dir, key))
		if err != nil {
			return ""
		}
		name := key
		if n, ok := s.DigestNames[key]; ok {
			name = n
		}
		files[name] = b
	}
	return lang.DigestSpecFiles(files)
}

// fileDigest is the digest of a file's content, or "absent".
func fileDigest(path string) string {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || err != nil {
		return absent
	}
	return digestBytes(b)
}

// resolve joins a path relative to dir (absolute paths stay).
func resolve(dir, p string) string {
	p = filepath.FromSlash(p)
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// ReadPlanFile reads a plan from a saved plan (-out) or plan JSON (-json)
// file. The saved plan is nil for plan JSON.
func ReadPlanFile(path string) (*Plan, *SavedPlan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the plan: %w", err)
	}
	return DecodePlan(b, path)
}

// DecodePlan reads a plan from the bytes of a saved plan or of plan JSON;
// name says where they came from in errors. The saved plan is nil for plan
// JSON.
func DecodePlan(b []byte, path string) (*Plan, *SavedPlan, error) {
	var probe struct {
		Format        string `json:"format"`
		FormatVersion string `json:"format_version"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, nil, fmt.Errorf("%s %w (%v)", path, ErrNotPlan, err)
	}
	if probe.Format != "" {
		s, err := ParseSaved(b, path)
		if err != nil {
			return nil, nil, err
		}
		return s.Plan, s, nil
	}
	p, err := Unmarshal(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil, nil
}
