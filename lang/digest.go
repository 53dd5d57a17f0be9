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
	files := make(map[string][]byte, len(c.Files))
	for p, src := range c.Files {
		files[SpecFileName(c.Dir, p)] = src
	}
	return DigestSpecFiles(files)
}

// SpecFileName is the name the spec digest gives the file at path p of a
// spec loaded from dir: p relative to dir with forward slashes, or p itself
// (cleaned, slash-separated) for a file outside dir, such as a -var-file
// given elsewhere.
func SpecFileName(dir, p string) string { return relName(dir, p) }

// DigestSpecFiles is the spec digest of files, keyed by SpecFileName: a
// saved plan recomputes its spec_digest from the files on disk with it.
func DigestSpecFiles(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	var n [8]byte
	for _, name := range names {
		src := files[name]
		binary.BigEndian.PutUint64(n[:], uint64(len(name)))
		h.Write(n[:])
		h.Write([]byte(name))
		binary.BigEndian.PutUint64(n[:], uint64(len(src)))
		h.Write(n[:])
		h.Write(src)
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
