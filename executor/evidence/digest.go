package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// DigestPrefix starts every digest InferCrane writes.
const DigestPrefix = "sha256:"

// Digest returns "sha256:" + the hex SHA-256 of the RFC 8785 canonical JSON
// of doc with its top-level "digest" member left out. doc may be any value
// that encodes as a JSON object (an *Evidence, a map, or raw JSON bytes).
func Digest(doc any) (string, error) {
	var raw []byte
	switch d := doc.(type) {
	case []byte:
		raw = d
	case json.RawMessage:
		raw = d
	default:
		b, err := json.Marshal(doc)
		if err != nil {
			return "", fmt.Errorf("digest: encoding the document: %w", err)
		}
		raw = b
	}
	canon, err := canonicalWithoutDigest(raw)
	if err != nil {
		return "", fmt.Errorf("digest: %w", err)
	}
	sum := sha256.Sum256(canon)
	return DigestPrefix + hex.EncodeToString(sum[:]), nil
}

// canonicalWithoutDigest canonicalises a JSON object after dropping its
// top-level "digest" member.
func canonicalWithoutDigest(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	obj, ok := v.(object)
	if !ok {
		return nil, errors.New("the document is not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON document")
	}
	kept := obj[:0:0]
	for _, m := range obj {
		if m.name != "digest" {
			kept = append(kept, m)
		}
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, kept); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	return buf.Bytes(), nil
}
