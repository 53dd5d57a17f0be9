// Package redact removes known secret values from text before it is
// written anywhere: streams, logs, records, reports. It is the safety net
// under the spec language's sensitive marks: a value from a sensitive
// variable is shown as "(sensitive)" in plans by its mark, and any text that
// still carries it (a server's error body, a log line, an error message)
// loses it here.
package redact

import (
	"bytes"
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
// a nil *Set hold no secrets. It matches every spelling of each value
// (Spellings): callers add the values, never their derived forms.
type Set struct {
	mu     sync.RWMutex
	values []string   // as added
	forms  []spelling // longest first, so a secret inside another goes after it
	seen   map[string]bool
	maxLen int // of the longest form
}

// New returns a Set holding secrets (those shorter than MinLen are ignored).
func New(secrets ...string) *Set {
	s := &Set{}
	s.Add(secrets...)
	return s
}

// Add adds secrets to the set, with every spelling derived from them.
func (s *Set) Add(secrets ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	added := false
	for _, x := range secrets {
		if len(x) < MinLen || s.seen["\x00"+x] {
			continue
		}
		s.seen["\x00"+x] = true
		s.values = append(s.values, x)
		for _, f := range spellings(x) {
			if !s.seen[f.text] {
				s.seen[f.text] = true
				s.forms = append(s.forms, f)
				s.maxLen = max(s.maxLen, len(f.text))
				added = true
			}
		}
	}
	if added {
		sort.SliceStable(s.forms, func(i, j int) bool { return len(s.forms[i].text) > len(s.forms[j].text) })
	}
}

// Values returns the secrets added (not their derived spellings: a Set
// made from them matches the same text).
func (s *Set) Values() []string {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.values...)
}

// Empty reports whether the set holds no secret.
func (s *Set) Empty() bool {
	if s == nil {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.values) == 0
}

// String returns x with every spelling of every secret replaced by Marker.
func (s *Set) String(x string) string {
	if s == nil {
		return x
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, f := range s.forms {
		if strings.Contains(x, f.text) {
			x = replace(x, f)
		}
	}
	return x
}

// replace replaces every occurrence of f in x with Marker; a base64
// fragment takes the whole run of base64 letters around it (and the run's
// padding) with it.
func replace(x string, f spelling) string {
	if !f.b64 {
		return strings.ReplaceAll(x, f.text, Marker)
	}
	var b strings.Builder
	for {
		i := strings.Index(x, f.text)
		if i < 0 {
			b.WriteString(x)
			return b.String()
		}
		start, end := i, i+len(f.text)
		for start > 0 && isBase64Letter(x[start-1]) {
			start--
		}
		for end < len(x) && (isBase64Letter(x[end]) || x[end] == '=') {
			end++
		}
		b.WriteString(x[:start])
		b.WriteString(Marker)
		x = x[end:]
	}
}

// Bytes returns b with every secret replaced by Marker (b itself when it
// holds none).
func (s *Set) Bytes(b []byte) []byte {
	if s == nil {
		return b
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, f := range s.forms {
		if bytes.Contains(b, []byte(f.text)) {
			b = []byte(replace(string(b), f))
		}
	}
	return b
}

// heldBack is how many bytes at the end of b may begin a secret that the
// bytes still to come complete: the longest suffix of b that is a proper
// prefix of some spelling.
func (s *Set) heldBack(b []byte) int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, f := range s.forms {
		for k := min(len(f.text)-1, len(b)); k > n; k-- {
			if bytes.HasSuffix(b, []byte(f.text[:k])) {
				n = k
				break
			}
		}
	}
	return n
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
// newline (or Close), so a secret split across writes is still caught. A
// line longer than 64 KiB is written in pieces, each holding back the tail
// that may begin a secret.
func (s *Set) LineWriter(w io.Writer) io.WriteCloser { return &lineWriter{set: s, w: w} }

// flushAt is how long a partial line the line writer holds before it
// writes part of it.
const flushAt = 64 << 10

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
	if cut == 0 && len(l.buf) >= flushAt {
		// A line too long to hold: write it redacted, but for a tail that
		// may begin a secret the next write completes.
		l.buf = l.set.Bytes(l.buf)
		cut = len(l.buf) - l.set.heldBack(l.buf)
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
