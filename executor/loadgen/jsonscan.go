package loadgen

import (
	"bytes"
	"math"
)

// A minimal allocation-free JSON walker for streamed chunks. It never
// unescapes: strings are returned as their raw bytes, which is enough to tell
// an empty string from a non-empty one and to compare plain keys.

type jscan struct {
	b []byte
	i int
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *jscan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jscan) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// str reads a string and returns its raw (still escaped) contents. It jumps
// from quote to quote with IndexByte; a quote preceded by an odd number of
// backslashes is escaped.
func (s *jscan) str() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for {
		j := bytes.IndexByte(s.b[s.i:], '"')
		if j < 0 {
			s.i = len(s.b)
			return nil, false
		}
		q := s.i + j
		bs := 0
		for k := q - 1; k >= start && s.b[k] == '\\'; k-- {
			bs++
		}
		s.i = q + 1
		if bs%2 == 0 {
			return s.b[start:q], true
		}
	}
}

// int reads a JSON number and returns its integer part (0 for non-integers
// it cannot read); ok is false when no number is there.
func (s *jscan) int() (int, bool) {
	s.ws()
	start := s.i
	neg := false
	if s.i < len(s.b) && s.b[s.i] == '-' {
		neg = true
		s.i++
	}
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if d := int(s.b[s.i] - '0'); n < math.MaxInt/10 || n == math.MaxInt/10 && d <= math.MaxInt%10 {
			n = n*10 + d
		} else {
			n = math.MaxInt // saturate, on 32-bit builds too
		}
		s.i++
	}
	if s.i == start || (neg && s.i == start+1) {
		return 0, false
	}
	// fraction or exponent: skip it
	for s.i < len(s.b) {
		c := s.b[s.i]
		if (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
			s.i++
			continue
		}
		break
	}
	if neg {
		n = -n
	}
	return n, true
}

// skip skips any value; depth bounds nesting.
func (s *jscan) skip(depth int) bool {
	if depth > 64 {
		return false
	}
	switch s.peek() {
	case '"':
		_, ok := s.str()
		return ok
	case '{':
		s.i++
		if s.eat('}') {
			return true
		}
		for {
			if _, ok := s.str(); !ok || !s.eat(':') || !s.skip(depth+1) {
				return false
			}
			if s.eat('}') {
				return true
			}
			if !s.eat(',') {
				return false
			}
		}
	case '[':
		s.i++
		if s.eat(']') {
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			if s.eat(']') {
				return true
			}
			if !s.eat(',') {
				return false
			}
		}
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	case 0:
		return false
	default:
		_, ok := s.int()
		return ok
	}
}

func (s *jscan) lit(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// null consumes a null literal if one is next.
func (s *jscan) null() bool {
	return s.peek() == 'n' && s.lit("null")
}

// openObject consumes the opening brace of an object.
func (s *jscan) openObject() bool { return s.eat('{') }

// nextKey returns the next key of an object opened with openObject; more is
// false at the closing brace; ok is false on malformed input.
func (s *jscan) nextKey(first bool) (key []byte, more, ok bool) {
	if s.eat('}') {
		return nil, false, true
	}
	if !first && !s.eat(',') {
		return nil, false, false
	}
	k, good := s.str()
	if !good || !s.eat(':') {
		return nil, false, false
	}
	return k, true, true
}
