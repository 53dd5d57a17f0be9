package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Digest returns "sha256:" + hex(sha256(json.Marshal(doc))) computed with
// the digest field left out. Go's encoding/json output (struct field order,
// compact, optional fields omitted when empty) is the canonical form, so
// documents written by earlier InferCrane releases keep their digests.
func Digest(doc Document) (string, error) {
	doc.Digest = ""
	b, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("encode workload profile for its digest: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Seal sets doc.Digest to the document's digest and returns the document.
func Seal(doc Document) (Document, error) {
	d, err := Digest(doc)
	if err != nil {
		return doc, err
	}
	doc.Digest = d
	return doc, nil
}

// Encode renders a document the way InferCrane writes profile files:
// indented JSON with a trailing newline.
func Encode(doc Document) ([]byte, error) {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode workload profile: %w", err)
	}
	return append(b, '\n'), nil
}
