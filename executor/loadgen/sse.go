package loadgen

import (
	"bytes"
	"io"
	"time"
)

// sseReader splits a server-sent-events body into data payloads, stamping
// each with the monotonic time at which the read that completed it returned.
// It reuses one buffer, so reading a stream allocates nothing per event.
// Each `data:` line is one event (OpenAI-compatible servers never split a
// payload over several lines); comments, other fields and blank lines are
// skipped.
type sseReader struct {
	r     io.Reader
	buf   []byte
	start int // first unconsumed byte
	end   int // end of valid data
	at    time.Time
	err   error
}

func newSSEReader(r io.Reader, buf []byte) *sseReader {
	return &sseReader{r: r, buf: buf[:cap(buf)]}
}

func (s *sseReader) reset(r io.Reader) {
	s.r, s.start, s.end, s.err = r, 0, 0, nil
}

var dataPrefix = []byte("data:")

// next returns the next data payload and the time its last byte was read.
// The payload aliases the internal buffer and is valid until the next call.
// At the end of the body it returns io.EOF (or the read error).
func (s *sseReader) next() ([]byte, time.Time, error) {
	for {
		if i := bytes.IndexByte(s.buf[s.start:s.end], '\n'); i >= 0 {
			line := s.buf[s.start : s.start+i]
			s.start += i + 1
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			if !bytes.HasPrefix(line, dataPrefix) {
				continue
			}
			line = line[len(dataPrefix):]
			if len(line) > 0 && line[0] == ' ' {
				line = line[1:]
			}
			return line, s.at, nil
		}
		if s.err != nil {
			// A final line without a newline still counts.
			if s.start < s.end {
				line := s.buf[s.start:s.end]
				s.start = s.end
				if bytes.HasPrefix(line, dataPrefix) {
					line = bytes.TrimPrefix(line[len(dataPrefix):], []byte(" "))
					return bytes.TrimSuffix(line, []byte("\r")), s.at, nil
				}
			}
			return nil, s.at, s.err
		}
		s.fill()
	}
}

// fill reads more bytes, compacting or growing the buffer as needed.
func (s *sseReader) fill() {
	if s.start > 0 {
		s.end = copy(s.buf, s.buf[s.start:s.end])
		s.start = 0
	}
	if s.end == len(s.buf) {
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	n, err := s.r.Read(s.buf[s.end:])
	if n > 0 {
		s.at = time.Now()
		s.end += n
	}
	if err != nil {
		s.err = err
	}
}
