package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
