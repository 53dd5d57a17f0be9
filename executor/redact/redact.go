// Package redact removes known secret values from text before it is
// written anywhere: streams, logs, records, reports. It is the safety net
// under the spec language's sensitive marks: a value from a sensitive
// variable is shown as "(sensitive)" in plans by its mark, and any text that
// still carries it (a server's error body, a log line, an error message)
// loses it here.
package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"strings"
	"sync"
)

// Marker replaces every secret.
const Marker = "(sensitive)"

// MinLen is the shortest value treated as a secret: shorter ones ("1",
// "true") would redact unrelated text. Plans still mark them by name.
const MinLen = 6

// Set is a set of secret values, safe for concurrent use. The zero Set and
// a nil *Set hold no secrets.
type Set struct {
	mu      sync.RWMutex
	secrets []string // longest first, so a secret inside another goes after it
}

// New returns a Set holding secrets (those shorter than MinLen are ignored).
func New(secrets ...string) *Set {
	s := &Set{}
	s.Add(secrets...)
	return s
}

// Add adds secrets to the set, with their JSON-escaped spellings.
func (s *Set) Add(secrets ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, x := range s.secrets {
		seen[x] = true
	}
	for _, x := range secrets {
		forms := []string{x}
		if b, err := json.Marshal(x); err == nil && string(b[1:len(b)-1]) != x {
			forms = append(forms, string(b[1:len(b)-1]))
		}
		for _, f := range forms {
			if len(f) >= MinLen && !seen[f] {
				seen[f] = true
				s.secrets = append(s.secrets, f)
			}
		}
	}
	sort.SliceStable(s.secrets, func(i, j int) bool { return len(s.secrets[i]) > len(s.secrets[j]) })
}

// Values returns the secrets held.
func (s *Set) Values() []string {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.secrets...)
}

// Empty reports whether the set holds no secret.
func (s *Set) Empty() bool {
	if s == nil {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.secrets) == 0
}

// String returns x with every secret replaced by Marker.
func (s *Set) String(x string) string {
	if s == nil {
		return x
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, sec := range s.secrets {
		if strings.Contains(x, sec) {
			x = strings.ReplaceAll(x, sec, Marker)
		}
	}
	return x
}

// Bytes returns b with every secret replaced by Marker (b itself when it
// holds none).
func (s *Set) Bytes(b []byte) []byte {
	if s == nil {
		return b
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, sec := range s.secrets {
		if bytes.Contains(b, []byte(sec)) {
			b = bytes.ReplaceAll(b, []byte(sec), []byte(Marker))
		}
	}
	return b
}

// Writer redacts each Write to w on its own, without buffering, for
// streams that show progress without newlines (a terminal). A secret split
// across two writes is not caught; use LineWriter where writes are
// arbitrary chunks (a child process's output).
func (s *Set) Writer(w io.Writer) io.Writer { return &writer{set: s, w: w} }

type writer struct {
	set *Set
	w   io.Writer
}

func (r *writer) Write(p []byte) (int, error) {
	if _, err := r.w.Write(r.set.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap returns the underlying writer (to find a terminal under it).
func (r *writer) Unwrap() io.Writer { return r.w }

// LineWriter redacts whole lines: it holds back a partial line until its
// newline (or Close, or 64 KiB), so a secret split across writes is still
// caught.
func (s *Set) LineWriter(w io.Writer) io.WriteCloser { return &lineWriter{set: s, w: w} }

type lineWriter struct {
	set *Set
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	cut := bytes.LastIndexByte(l.buf, '\n') + 1
	if cut == 0 && len(l.buf) >= 64<<10 {
		cut = len(l.buf)
	}
	if cut > 0 {
		if _, err := l.w.Write(l.set.Bytes(append([]byte(nil), l.buf[:cut]...))); err != nil {
			return 0, err
		}
		l.buf = append(l.buf[:0], l.buf[cut:]...)
	}
	return len(p), nil
}

// Close writes what is held back; it does not close the underlying writer.
func (l *lineWriter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) == 0 {
		return nil
	}
	_, err := l.w.Write(l.set.Bytes(l.buf))
	l.buf = nil
	return err
}
