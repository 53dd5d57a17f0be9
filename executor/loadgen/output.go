package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// RunRecorded is Run as the command-line load generators (`infercrane
// bench` and infercrane-loadgen) run it, with one rule for where the
// per-request records go. With keep false they are written to the JSONL
// file records ("" drops them) as they finish and none stays in memory:
// Result.Records is nil, so a result written with WriteResultFile leaves
// them out (they are in the file). With keep true Result.Records holds them
// and, when records is set, they are also written there after the run.
//
// It returns nil and the error when the run could not start (the records
// file included), else the result with the run's own error (ctx's when it
// was interrupted, as Run) and, apart, werr: the records file could not be
// written.
func RunRecorded(ctx context.Context, cfg Config, records string, keep bool, opts ...Option) (res *Result, err, werr error) {
	var sink *RecordsFile
	if !keep {
		write := func(*Record) error { return nil }
		if records != "" {
			if sink, err = CreateRecordsFile(records); err != nil {
				return nil, fmt.Errorf("write records: %w", err), nil
			}
			write = sink.Write
		}
		opts = append(opts, WithRecordSink(write, ""))
	}
	res, err = Run(ctx, cfg, opts...)
	if sink != nil {
		if res == nil {
			sink.Abort()
		} else {
			werr = sink.Close()
		}
	}
	if res != nil && keep && records != "" {
		werr = WriteRecordsFile(records, res.Records)
	}
	return res, err, werr
}

// WriteResultFile writes res as one JSON document and a newline to path, or
// to stdout for "-": the typed output a load generator in another process
// (the modal executor's sandbox) sends back, read with ReadResult.
func WriteResultFile(path string, stdout io.Writer, res *Result) error {
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

// ReadResult decodes one result written by WriteResultFile. Unknown fields
// and trailing data are errors, so nothing a load generator reported is
// dropped silently.
func ReadResult(r io.Reader) (*Result, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var res Result
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("the load generator's result is not valid JSON of loadgen.Result: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the load generator's result has data after its JSON object")
	}
	return &res, nil
}
