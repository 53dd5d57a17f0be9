package planner

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"slices"
	"strings"
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
	return digestPrefix + hex.EncodeToString(h.Sum(nil)), nil
}

// Marshal returns the canonical JSON of p (two-space indented, ending in a
// newline) with plan_digest recomputed, so two plans of the same spec,
// variables and state are byte-identical.
//
// It encodes the plan once, a field and a lane at a time: the compact JSON
// without plan_digest goes to the digest, and is indented as it goes (what
// json.Indent gives) into the output, where the field is written with a
// placeholder of the digest's length before variables, as its declaration
// puts it, and filled in at the end.
func Marshal(p *Plan) ([]byte, error) {
	c := *p
	c.PlanDigest = ""
	w := &indentWriter{h: sha256.New(), hashing: true}
	s := newJSONStream(w)
	placeholder := -1
	s.field = func(name string) {
		if name != "variables" {
			return
		}
		w.hashing = false
		w.Write([]byte(`,"plan_digest":"` + digestPrefix + strings.Repeat("0", sha256.Size*2) + `"`))
		w.hashing = true
		placeholder = w.size - 1 - sha256.Size*2 // the hex digits, before the closing quote
	}
	if err := s.encode(&c); err != nil {
		return nil, err
	}
	if placeholder < 0 {
		return nil, fmt.Errorf("planner: plan JSON without variables")
	}
	out := w.bytes()
	hex.Encode(out[placeholder:], w.h.Sum(nil))
	return append(out, '\n'), nil
}

// digestPrefix starts every plan digest.
const digestPrefix = "sha256:"

// indentWriter indents the compact JSON written to it as json.Indent
// does with no prefix and two spaces (the value may arrive in pieces
// split anywhere), and digests the bytes while hashing is set. The output
// is kept in chunks, so growing it copies nothing until bytes joins them.
type indentWriter struct {
	h       hash.Hash
	hashing bool
	chunks  [][]byte
	cur     []byte
	size    int // bytes written to the output
	// the scanner's state between writes
	depth             int
	inString, escaped bool
	open              bool // after { or [: the indent waits for a value, which an empty one lacks
}

// indentChunk is the size of the output's chunks.
const indentChunk = 1 << 20

func (w *indentWriter) Write(b []byte) (int, error) {
	if w.hashing {
		w.h.Write(b)
	}
	if w.cur == nil {
		w.cur = make([]byte, 0, indentChunk+indentChunk/8)
	}
	out := w.cur
	n := len(out)
	for _, c := range b {
		if w.inString {
			out = append(out, c)
			switch {
			case w.escaped:
				w.escaped = false
			case c == '\\':
				w.escaped = true
			case c == '"':
				w.inString = false
			}
			continue
		}
		if w.open && c != '}' && c != ']' {
			w.open = false
			w.depth++
			out = indentLine(out, w.depth)
		}
		switch c {
		case '"':
			w.inString = true
			out = append(out, c)
		case '{', '[':
			w.open = true
			out = append(out, c)
		case ',':
			out = indentLine(append(out, c), w.depth)
		case ':':
			out = append(out, c, ' ')
		case '}', ']':
			if w.open {
				w.open = false
			} else {
				w.depth--
				out = indentLine(out, w.depth)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	w.size += len(out) - n
	w.cur = out
	if len(out) >= indentChunk {
		w.chunks = append(w.chunks, out)
		w.cur = nil
	}
	return len(b), nil
}

// indentLine starts a new line indented to depth.
func indentLine(out []byte, depth int) []byte {
	out = append(out, '\n')
	for range depth {
		out = append(out, ' ', ' ')
	}
	return out
}

// bytes returns the output in one slice with room for one more byte.
func (w *indentWriter) bytes() []byte {
	out := make([]byte, 0, w.size+1)
	for _, c := range w.chunks {
		out = append(out, c...)
	}
	return append(out, w.cur...)
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
