package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner/state"
)

// VerifyResult is what Verify found.
type VerifyResult struct {
	// Recorded is the digest the file states; Computed the one its content has.
	Recorded, Computed string
	// DigestOK is true when they agree.
	DigestOK bool
	// Recomputed is true when the whole document was rebuilt from a state
	// directory; Checked counts the fields (leaves) compared.
	Recomputed bool
	Checked    int
	// FilesChecked counts the files named in the evidence whose SHA-256
	// was checked.
	FilesChecked int
	// Differences name every field (by its JSON path) that differs from
	// what the state gives, is missing or is extra, and every file whose
	// SHA-256 differs from the one the evidence or the journal records.
	Differences []string
	// Predates names the members the rebuilt document has that the
	// evidence lacks because it was written before they were added to the
	// schema (AddedLater); they are no difference.
	Predates []string
}

// AddedLater are the optional evidence members added after
// infercrane.screen-evidence/v1 was first written, by the end of their
// path. Evidence written before one existed lacks it, and verify -state
// accepts that: an absent workload.arrival_process loses nothing a reader
// relies on (calibrate leaves such an open loop out of a fit from
// aggregates). A member present with another value is a difference.
var AddedLater = []string{"workload.arrival_process", "prediction.cache_hits", "workload.prompts"}

// addedLater reports whether path ends with a member of AddedLater.
func addedLater(path string) bool {
	for _, s := range AddedLater {
		if strings.HasSuffix(path, "."+s) {
			return true
		}
	}
	return false
}

// OK reports whether the evidence passed every check made.
func (r *VerifyResult) OK() bool { return r.DigestOK && len(r.Differences) == 0 }

// Verify recomputes the digest of the evidence file at path and checks the
// SHA-256 of every file the evidence names beside it. With a state
// directory it also rebuilds the whole evidence document from the state
// (plan snapshot, journal, per-request records recomputed from scratch,
// cleanup facts) and compares it with the file field by field: numbers,
// booleans, strings, array length and order, nothing missing and nothing
// extra, naming the path of every field that differs.
func Verify(path, stateDir string) (*VerifyResult, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the evidence: %w", err)
	}
	res, head, err := verifyDigest(path, raw)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	res.checkFiles(doc, filepath.Dir(path), stateDir)
	if stateDir == "" {
		return res, nil
	}
	resamples := DefaultResamples
	if n := findResamples(doc); n > 0 {
		resamples = n
	}
	in, _, err := LoadInput(stateDir, Options{Resamples: resamples})
	if err != nil {
		return nil, err
	}
	if err := res.checkJournal(stateDir); err != nil {
		return nil, err
	}
	for _, lane := range sortedKeys(in.Runs) {
		runs := in.Runs[lane]
		for i := range runs {
			// The evidence is rebuilt from the records, not the journal's
			// summary, which state show prints: the two must agree.
			if js := runs[i].Summary; js != nil {
				computed := loadgen.Compute(runs[i].Records, loadgen.SLO{})
				a, _ := json.Marshal(runMetrics(js, false))
				b, _ := json.Marshal(runMetrics(&computed, false))
				if !bytes.Equal(a, b) {
					res.Differences = append(res.Differences, fmt.Sprintf("summary of lane %s run %d in the journal (what state show prints) differs from its records: %s; the records give %s", lane, runs[i].Run, a, b))
				}
			}
			runs[i].Summary = nil // recompute from the records, not the journal
			if p := filepath.Join(stateDir, filepath.FromSlash(runs[i].RecordsFile)); runs[i].RecordsSHA256 != "" {
				if sum, err := evidence.FileSHA256(p); err == nil && sum != runs[i].RecordsSHA256 {
					res.Differences = append(res.Differences, fmt.Sprintf("records of lane %s run %d: SHA-256 %s, the journal recorded %s", lane, runs[i].Run, sum, runs[i].RecordsSHA256))
				}
			}
		}
	}
	evs, err := BuildEvidence(*in)
	if err != nil {
		return nil, err
	}
	var fresh *evidence.Evidence
	for _, ev := range evs {
		if ev.Screen == head.Screen {
			fresh = ev
		}
	}
	if fresh == nil {
		return nil, fmt.Errorf("the state in %s has no screen %q; pass the state directory of the apply that wrote this evidence", stateDir, head.Screen)
	}
	b, err := json.Marshal(fresh)
	if err != nil {
		return nil, err
	}
	var want map[string]any
	if err := json.Unmarshal(b, &want); err != nil {
		return nil, err
	}
	res.Recomputed = true
	// The digest of the rebuilt document differs whenever any field does;
	// DigestOK already says whether the file's own digest holds.
	delete(doc, "digest")
	delete(want, "digest")
	c := &comparer{res: res}
	c.diff("", doc, want)
	return res, nil
}

// checkJournal adds a difference for each run the journal records more
// than once for the same lane (the state keeps the last, silently): a
// run is recorded once, or again only after its lane was started anew.
func (r *VerifyResult) checkJournal(stateDir string) error {
	scan, err := state.ReadJournal(filepath.Join(stateDir, state.JournalFile))
	if err != nil {
		return err
	}
	seen := map[string]int{}
	for _, e := range scan.Entries {
		switch e.Type {
		case state.EntryLane, state.EntryDrop:
			for k := range seen {
				if strings.HasPrefix(k, e.Lane+"\x00") {
					delete(seen, k)
				}
			}
		case state.EntryRun:
			k := fmt.Sprintf("%s\x00%d", e.Lane, e.Result.Run)
			if seen[k]++; seen[k] == 2 {
				r.Differences = append(r.Differences, fmt.Sprintf("the journal records run %d of lane %s more than once (line seq %d repeats it); the state keeps the last", e.Result.Run, e.Lane, e.Seq))
			}
		}
	}
	return nil
}

// VerifyDigest is Verify's first check on raw, the bytes of the evidence
// file at path (named in errors): that it is an
// infercrane.screen-evidence/v1 document, and whether the digest it states
// is the one its content gives (Recorded, Computed, DigestOK). A reader of
// the evidence that trusts its figures (calibrate) checks this first.
func VerifyDigest(path string, raw []byte) (*VerifyResult, error) {
	res, _, err := verifyDigest(path, raw)
	return res, err
}

// evidenceHead is the part of an evidence document that says what it is.
type evidenceHead struct {
	SchemaVersion string `json:"schema_version"`
	Screen        string `json:"screen"`
	Digest        string `json:"digest"`
}

func verifyDigest(path string, raw []byte) (*VerifyResult, evidenceHead, error) {
	var head evidenceHead
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, head, fmt.Errorf("%s %w: not JSON (%v)", path, ErrNotEvidence, err)
	}
	switch head.SchemaVersion {
	case evidence.SchemaVersion:
	case "":
		return nil, head, fmt.Errorf("%s %w: it has no schema_version, not %s as evidence has", path, ErrNotEvidence, evidence.SchemaVersion)
	default:
		return nil, head, fmt.Errorf("%s %w: it has schema_version %q, not %s", path, ErrNotEvidence, head.SchemaVersion, evidence.SchemaVersion)
	}
	res := &VerifyResult{Recorded: head.Digest}
	var err error
	if res.Computed, err = evidence.Digest(raw); err != nil {
		return nil, head, err
	}
	res.DigestOK = res.Computed == res.Recorded
	return res, head, nil
}

// checkFiles checks the SHA-256 of every file the evidence names: those
// beside the evidence always, those in the state directory when given.
func (r *VerifyResult) checkFiles(doc map[string]any, reportDir, stateDir string) {
	files, _ := doc["files"].([]any)
	for i, f := range files {
		m, _ := f.(map[string]any)
		p, _ := m["path"].(string)
		base, _ := m["base"].(string)
		want, _ := m["sha256"].(string)
		dir := reportDir
		switch base {
		case evidence.BaseReport:
		case evidence.BaseState:
			if stateDir == "" {
				continue
			}
			dir = stateDir
		default:
			r.Differences = append(r.Differences, fmt.Sprintf("files[%d].base: %q is neither %q nor %q", i, base, evidence.BaseReport, evidence.BaseState))
			continue
		}
		if p == "" || filepath.IsAbs(filepath.FromSlash(p)) || strings.HasPrefix(filepath.ToSlash(filepath.Clean(p)), "../") {
			r.Differences = append(r.Differences, fmt.Sprintf("files[%d].path: %q is not a path inside the %s directory", i, p, base))
			continue
		}
		r.FilesChecked++
		sum, err := evidence.FileSHA256(filepath.Join(dir, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			r.Differences = append(r.Differences, fmt.Sprintf("files[%d] (%s): the file is missing from %s", i, p, dir))
		case err != nil:
			r.Differences = append(r.Differences, fmt.Sprintf("files[%d] (%s): %v", i, p, err))
		case sum != want:
			r.Differences = append(r.Differences, fmt.Sprintf("files[%d].sha256 (%s): the evidence has %s, the file hashes to %s", i, p, want, sum))
		}
	}
}

// findResamples reads the bootstrap size the evidence was built with.
func findResamples(doc map[string]any) int {
	models, _ := doc["models"].([]any)
	for _, m := range models {
		mm, _ := m.(map[string]any)
		camps, _ := mm["campaigns"].([]any)
		for _, c := range camps {
			cm, _ := c.(map[string]any)
			ci, _ := cm["confidence_intervals"].(map[string]any)
			if n, ok := ci["resamples"].(float64); ok {
				return int(n)
			}
		}
	}
	return 0
}

// identity names the members that identify an array element in paths.
var identity = []string{"name", "lane", "run", "candidate", "gate", "path"}

// comparer walks the evidence (got) and the document rebuilt from the
// state (want) and records every leaf that differs, is missing or is extra.
type comparer struct{ res *VerifyResult }

func (c *comparer) add(format string, args ...any) {
	c.res.Differences = append(c.res.Differences, fmt.Sprintf(format, args...))
}

func (c *comparer) diff(path string, got, want any) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			c.res.Checked++
			c.add("%s: the evidence has %s, the state gives an object", orRoot(path), describe(got))
			return
		}
		for _, k := range unionKeys(g, w) {
			p := join(path, k)
			gv, inG := g[k]
			wv, inW := w[k]
			switch {
			case !inG && addedLater(p):
				c.res.Predates = append(c.res.Predates, p)
			case !inG:
				c.res.Checked++
				c.add("%s: missing from the evidence (the state gives %s)", p, describe(wv))
			case !inW:
				c.res.Checked++
				c.add("%s: not in the document the state gives (the evidence has %s)", p, describe(gv))
			default:
				c.diff(p, gv, wv)
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			c.res.Checked++
			c.add("%s: the evidence has %s, the state gives an array of %d", orRoot(path), describe(got), len(w))
			return
		}
		if len(g) != len(w) {
			c.add("%s: the evidence has %d entries, the state gives %d", path, len(g), len(w))
		}
		for i := 0; i < max(len(g), len(w)); i++ {
			switch {
			case i >= len(g):
				c.res.Checked++
				c.add("%s: missing from the evidence (the state gives %s)", elem(path, i, w[i]), describe(w[i]))
			case i >= len(w):
				c.res.Checked++
				c.add("%s: not in the document the state gives (the evidence has %s)", elem(path, i, g[i]), describe(g[i]))
			default:
				c.diff(elem(path, i, w[i]), g[i], w[i])
			}
		}
	case float64:
		c.res.Checked++
		g, ok := got.(float64)
		if !ok {
			c.add("%s: the evidence has %s, the state gives %s", path, describe(got), fmtNum(w))
			return
		}
		if math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
			c.add("%s: the evidence has %s, the state gives %s", path, fmtNum(g), fmtNum(w))
		}
	default: // string, bool, null
		c.res.Checked++
		if got != want {
			c.add("%s: the evidence has %s, the state gives %s", path, describe(got), describe(want))
		}
	}
}

func orRoot(path string) string {
	if path == "" {
		return "(document)"
	}
	return path
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// elem names an array element by index and, where it has one, identity:
// models[1](qwen06), runs[0](run 1).
func elem(path string, i int, v any) string {
	s := fmt.Sprintf("%s[%d]", path, i)
	if m, ok := v.(map[string]any); ok {
		for _, k := range identity {
			if x, ok := m[k]; ok {
				if k == "run" {
					return fmt.Sprintf("%s(run %v)", s, x)
				}
				return fmt.Sprintf("%s(%v)", s, x)
			}
		}
	}
	return s
}

// describe renders a JSON value briefly for a message.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("%q", x)
	case float64:
		return fmtNum(x)
	case bool:
		return fmt.Sprint(x)
	case []any:
		return fmt.Sprintf("an array of %d", len(x))
	case map[string]any:
		keys := sortedKeys(x)
		if len(keys) > 4 {
			keys = append(keys[:4], "...")
		}
		return "an object {" + strings.Join(keys, ", ") + "}"
	}
	return fmt.Sprint(v)
}

func unionKeys(a, b map[string]any) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func fmtNum(f float64) string {
	s, err := evidence.FormatNumber(f)
	if err != nil {
		return fmt.Sprint(f)
	}
	return s
}
