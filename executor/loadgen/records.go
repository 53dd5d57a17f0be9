package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteRecords writes records as JSONL, one Record object a line.
func WriteRecords(w io.Writer, records []Record) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	for i := range records {
		if err := enc.Encode(&records[i]); err != nil {
			return fmt.Errorf("write record %d: %w", i, err)
		}
	}
	return bw.Flush()
}

// ReadRecords reads JSONL written by WriteRecords. Blank lines are skipped;
// unknown fields and malformed lines are errors naming the line.
func ReadRecords(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<20)
	var out []Record
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var rec Record
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("records line %d: %v (each line must be one JSON request record as written by bench --records)", line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("records line %d: trailing data after the record", line)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read records: %w", err)
	}
	return out, nil
}

// RecordsFile writes records to a file as JSONL as they come (the format
// of WriteRecords), for runs that stream their records instead of keeping
// them (WithRecordSink).
type RecordsFile struct {
	f    *os.File
	path string
	w    *bufio.Writer
	enc  *json.Encoder
}

// CreateRecordsFile creates path (and its directory).
func CreateRecordsFile(path string) (*RecordsFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	return &RecordsFile{f: f, path: path, w: w, enc: json.NewEncoder(w)}, nil
}

// Write appends one record.
func (r *RecordsFile) Write(rec *Record) error { return r.enc.Encode(rec) }

// Close flushes and closes the file; a file that could not be completed is
// removed. Abort afterwards does nothing.
func (r *RecordsFile) Close() error {
	err := r.w.Flush()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.f = nil
	if err != nil {
		os.Remove(r.path)
		return fmt.Errorf("write the records file %s: %w", r.path, err)
	}
	return nil
}

// Abort closes and removes the file of a run that did not finish.
func (r *RecordsFile) Abort() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
		os.Remove(r.path)
	}
}
