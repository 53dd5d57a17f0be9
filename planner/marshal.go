package planner

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
)

// encode writes v as compact JSON without HTML escaping. encoding/json
// writes struct fields in declaration order and map keys sorted, so equal
// values give equal bytes.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Digest is the plan digest: "sha256:" + the hex SHA-256 of the compact
// canonical JSON of p with plan_digest left out.
func Digest(p *Plan) (string, error) {
	c := *p
	c.PlanDigest = ""
	h := sha256.New()
	if err := newJSONStream(h).encode(&c); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Marshal returns the canonical JSON of p (two-space indented, ending in a
// newline) with plan_digest recomputed, so two plans of the same spec,
// variables and state are byte-identical.
func Marshal(p *Plan) ([]byte, error) {
	// One encoding serves the digest and the output: the plan's JSON with
	// plan_digest set is the digested JSON with the field inserted where
	// its declaration puts it, before variables (a JSON string cannot hold
	// `,"variables":` unescaped, so the first one is the field's).
	c := *p
	c.PlanDigest = ""
	var b bytes.Buffer
	if err := newJSONStream(&b).encode(&c); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b.Bytes())
	field := `,"plan_digest":"sha256:` + hex.EncodeToString(sum[:]) + `"`
	at := bytes.Index(b.Bytes(), []byte(`,"variables":`))
	if at < 0 {
		return nil, fmt.Errorf("planner: plan JSON without variables")
	}
	n := b.Len()
	b.WriteString(field) // room for the field, then moved into place
	full := b.Bytes()
	copy(full[at+len(field):], full[at:n])
	copy(full[at:], field)
	var out bytes.Buffer
	out.Grow(len(full) * 2)
	if err := json.Indent(&out, full, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// Unmarshal parses plan JSON written by Marshal. Unknown fields and
// trailing data are rejected, and a plan whose plan_digest does not match
// its content is refused, so a hand-edited plan cannot be applied.
func Unmarshal(b []byte) (*Plan, error) {
	var p Plan
	if err := decodeStrict(b, &p); err != nil {
		return nil, fmt.Errorf("the file %w: %v", ErrNotPlan, err)
	}
	if !slices.Contains(readableVersions, p.FormatVersion) {
		return nil, fmt.Errorf("%w: format_version %q (this infercrane writes %q)", ErrPlanFormat, p.FormatVersion, FormatVersion)
	}
	d, err := Digest(&p)
	if err != nil {
		return nil, err
	}
	if p.PlanDigest != d {
		return nil, fmt.Errorf("the plan %w: its plan_digest %s does not match its content (%s)", ErrPlanEdited, p.PlanDigest, d)
	}
	restoreCapabilities(&p)
	return &p, nil
}

// decodeStrict decodes one JSON value into v, rejecting unknown fields and
// trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err == nil {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}
