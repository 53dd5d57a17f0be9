package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/infercrane/infercrane/planner/load"
)

// Arrival patterns of open-loop runs (the schedule itself is
// load.Arrivals, which the estimator simulates too).
const (
	ArrivalConstant = load.ArrivalConstant
	ArrivalPoisson  = load.ArrivalPoisson
	ArrivalGamma    = load.ArrivalGamma
)

// TraceEntry is one line of a replay trace (JSONL).
type TraceEntry struct {
	TimestampMs  float64 `json:"timestamp_ms"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
}

// ReadTrace reads a replay trace file: one {"timestamp_ms","input_tokens",
// "output_tokens"} object a line, timestamps non-decreasing, token counts
// positive.
func ReadTrace(path string) ([]TraceEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	return ParseTrace(f, path)
}

// ParseTrace reads a replay trace from r; name labels its errors.
func ParseTrace(r io.Reader, name string) ([]TraceEntry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var out []TraceEntry
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var e TraceEntry
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil || dec.More() {
			if err == nil {
				err = errors.New("trailing data")
			}
			return nil, fmt.Errorf("trace %s line %d: %v (want {\"timestamp_ms\":N,\"input_tokens\":N,\"output_tokens\":N})", name, line, err)
		}
		switch {
		case e.InputTokens < 1 || e.OutputTokens < 1:
			return nil, fmt.Errorf("trace %s line %d: input_tokens and output_tokens must be at least 1", name, line)
		case e.TimestampMs < 0 || math.IsNaN(e.TimestampMs) || math.IsInf(e.TimestampMs, 0) || e.TimestampMs > 1e12:
			return nil, fmt.Errorf("trace %s line %d: timestamp_ms %g must be a non-negative number of milliseconds", name, line, e.TimestampMs)
		case len(out) > 0 && e.TimestampMs < out[len(out)-1].TimestampMs:
			return nil, fmt.Errorf("trace %s line %d: timestamp_ms %g goes back in time; sort the trace by timestamp", name, line, e.TimestampMs)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trace %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("trace %s has no requests", name)
	}
	return out, nil
}
