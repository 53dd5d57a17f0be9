package executor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/infercrane/infercrane/executor/loadgen"
)

// recordSink streams a run's records to a file as JSONL.
type recordSink struct {
	f    *os.File
	path string
	w    *bufio.Writer
	enc  *json.Encoder
}

// newRecordSink creates path; what names the run in errors ("run 1 of
// lane L").
func newRecordSink(path, what string) (*recordSink, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("write the records of %s: %w; make the state directory writable", what, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("write the records of %s: %w; make the state directory writable", what, err)
	}
	w := bufio.NewWriterSize(f, 64<<10)
	return &recordSink{f: f, path: path, w: w, enc: json.NewEncoder(w)}, nil
}

func (s *recordSink) write(r *loadgen.Record) error { return s.enc.Encode(r) }

// close flushes and closes the file (abort afterwards does nothing).
func (s *recordSink) close() error {
	err := s.w.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.f = nil
	if err != nil {
		os.Remove(s.path)
		return fmt.Errorf("write the records file %s: %w", s.path, err)
	}
	return nil
}

// abort removes the file of a run that did not finish.
func (s *recordSink) abort() {
	if s.f != nil {
		s.f.Close()
		os.Remove(s.path)
	}
}
