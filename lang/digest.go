package lang

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"path/filepath"
	"sort"
)

// SpecDigest is "sha256:" + hex of a hash over the spec's files: their paths
// relative to Dir (slash-separated, sorted) and their contents, each
// length-prefixed so that no two different file sets hash alike.
func (c *Config) SpecDigest() string {
	type entry struct {
		name string
		src  []byte
	}
	entries := make([]entry, 0, len(c.Files))
	for p, src := range c.Files {
		entries = append(entries, entry{relName(c.Dir, p), src})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	h := sha256.New()
	var n [8]byte
	for _, e := range entries {
		binary.BigEndian.PutUint64(n[:], uint64(len(e.name)))
		h.Write(n[:])
		h.Write([]byte(e.name))
		binary.BigEndian.PutUint64(n[:], uint64(len(e.src)))
		h.Write(n[:])
		h.Write(e.src)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// relName is p relative to dir with forward slashes, or p itself (cleaned)
// when it lies outside dir.
func relName(dir, p string) string {
	if r, err := filepath.Rel(dir, p); err == nil && !filepath.IsAbs(r) && r != ".." && !hasDotDotPrefix(r) {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(filepath.Clean(p))
}

func hasDotDotPrefix(r string) bool {
	return len(r) >= 3 && r[:3] == ".."+string(filepath.Separator)
}
