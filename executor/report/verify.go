package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// VerifyResult is what Verify found.
type VerifyResult struct {
	// Recorded is the digest the file states; Computed the one its content has.
	Recorded, Computed string
	// DigestOK is true when they agree.
	DigestOK bool
	// Recomputed is true when the figures were recomputed from a state
	// directory's records; Checked counts the figures compared.
	Recomputed bool
	Checked    int
	// Differences name every figure (by its JSON path) that differs from
	// the records, and every records file whose SHA-256 changed.
	Differences []string
}

// OK reports whether the evidence passed every check made.
func (r *VerifyResult) OK() bool { return r.DigestOK && len(r.Differences) == 0 }

// Verify recomputes the digest of the evidence file at path. With a state
// directory it also recomputes every figure of the evidence from the
// stored per-request records (ignoring the summaries in the journal) and
// names each one that differs.
func Verify(path, stateDir string) (*VerifyResult, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the evidence: %w", err)
	}
	var head struct {
		SchemaVersion string `json:"schema_version"`
		Screen        string `json:"screen"`
		Digest        string `json:"digest"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("%s is not JSON (%v); pass an evidence file written by 'infercrane report'", path, err)
	}
	if head.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%s has schema_version %q, not %s; pass an evidence file written by 'infercrane report'", path, head.SchemaVersion, SchemaVersion)
	}
	res := &VerifyResult{Recorded: head.Digest}
	if res.Computed, err = Digest(raw); err != nil {
		return nil, err
	}
	res.DigestOK = res.Computed == res.Recorded
	if stateDir == "" {
		return res, nil
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	resamples := DefaultResamples
	if n := findResamples(doc); n > 0 {
		resamples = n
	}
	in, _, err := LoadInput(stateDir, Options{Resamples: resamples})
	if err != nil {
		return nil, err
	}
	for lane, runs := range in.Runs {
		for i := range runs {
			runs[i].Summary = nil // recompute from the records, not the journal
			if p := filepath.Join(stateDir, filepath.FromSlash(runs[i].RecordsFile)); runs[i].RecordsSHA256 != "" {
				if sum, err := fileSHA256(p); err == nil && sum != runs[i].RecordsSHA256 {
					res.Differences = append(res.Differences, fmt.Sprintf("records of lane %s run %d: SHA-256 %s, the journal recorded %s", lane, runs[i].Run, sum, runs[i].RecordsSHA256))
				}
			}
		}
	}
	evs, err := BuildEvidence(*in)
	if err != nil {
		return nil, err
	}
	var fresh *Evidence
	for _, ev := range evs {
		if ev.Screen == head.Screen {
			fresh = ev
		}
	}
	if fresh == nil {
		return nil, fmt.Errorf("the state in %s has no screen %q; pass the state directory of the apply that wrote this evidence", stateDir, head.Screen)
	}
	b, _ := json.Marshal(fresh)
	var want map[string]any
	if err := json.Unmarshal(b, &want); err != nil {
		return nil, err
	}
	res.Recomputed = true
	c := &comparer{res: res}
	c.diff("models", keyed(doc["models"], "name"), keyed(want["models"], "name"))
	c.diff("comparisons", keyed(doc["comparisons"], "candidate", "profile", "gpu"), keyed(want["comparisons"], "candidate", "profile", "gpu"))
	c.diff("gate_summary", doc["gate_summary"], want["gate_summary"])
	sort.Strings(res.Differences)
	return res, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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

// keyed turns a JSON array of objects into a map keyed by the named
// members (joined with "/"), so figures are matched by identity, not order.
// Nested campaign arrays are keyed by lane.
func keyed(v any, keys ...string) map[string]any {
	out := map[string]any{}
	arr, _ := v.([]any)
	for i, e := range arr {
		obj, ok := e.(map[string]any)
		if !ok {
			out[fmt.Sprint(i)] = e
			continue
		}
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprint(obj[k]))
		}
		if camps, ok := obj["campaigns"]; ok {
			cp := map[string]any{}
			for k, x := range obj {
				cp[k] = x
			}
			cp["campaigns"] = keyed(camps, "lane")
			obj = cp
		}
		if runs, ok := obj["runs"]; ok {
			cp := map[string]any{}
			for k, x := range obj {
				cp[k] = x
			}
			cp["runs"] = keyed(runs, "run")
			obj = cp
		}
		out[strings.Join(parts, "/")] = obj
	}
	return out
}

// comparer walks two JSON trees and records every number that differs or
// is present in only one of them.
type comparer struct{ res *VerifyResult }

func (c *comparer) diff(path string, got, want any) {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		if g == nil {
			c.res.Differences = append(c.res.Differences, fmt.Sprintf("%s: missing from the evidence", path))
			return
		}
		for _, k := range unionKeys(g, w) {
			if k == "campaigns" || k == "runs" {
				gk, _ := g[k].(map[string]any)
				if gk == nil {
					gk = keyed(g[k], map[string]string{"campaigns": "lane", "runs": "run"}[k])
				}
				wk, _ := w[k].(map[string]any)
				if wk == nil {
					wk = keyed(w[k], map[string]string{"campaigns": "lane", "runs": "run"}[k])
				}
				c.diff(path+"."+k, gk, wk)
				continue
			}
			c.diff(path+"."+k, g[k], w[k])
		}
	case float64:
		c.res.Checked++
		g, ok := got.(float64)
		if !ok {
			c.res.Differences = append(c.res.Differences, fmt.Sprintf("%s: the evidence has %v, the records give %s", path, got, fmtNum(w)))
			return
		}
		if math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
			c.res.Differences = append(c.res.Differences, fmt.Sprintf("%s: the evidence has %s, the records give %s", path, fmtNum(g), fmtNum(w)))
		}
	case nil:
		if g, ok := got.(float64); ok {
			c.res.Checked++
			c.res.Differences = append(c.res.Differences, fmt.Sprintf("%s: the evidence has %s, the records give no value", path, fmtNum(g)))
		}
	case string:
		// Strings are descriptive, except a gate's status: the decision the
		// records must still give.
		if strings.HasSuffix(path, ".status") && strings.Contains(path, ".gates[") {
			c.res.Checked++
			if g, _ := got.(string); g != w {
				c.res.Differences = append(c.res.Differences, fmt.Sprintf("%s: the evidence has %v, the records give %s", path, got, w))
			}
		}
	default:
		// Booleans and arrays of them are descriptive, not figures; arrays
		// of numbers (none today) would be compared element-wise.
		if wa, ok := want.([]any); ok {
			ga, _ := got.([]any)
			for i := range wa {
				var gi any
				if i < len(ga) {
					gi = ga[i]
				}
				c.diff(fmt.Sprintf("%s[%d]", path, i), gi, wa[i])
			}
		}
	}
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
	s, err := FormatNumber(f)
	if err != nil {
		return fmt.Sprint(f)
	}
	return s
}
