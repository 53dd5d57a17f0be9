package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
)

// Journal entry types.
const (
	// EntryLane records a lane's key, inputs and planned run count; it is
	// written when the lane starts.
	EntryLane = "lane"
	// EntryRun records one completed run; its records file was fsynced first.
	EntryRun = "run"
	// EntryDrop removes a lane and its runs from the state (a lane that left
	// the spec, the old ID of a changed lane, or a lane forced with -replace).
	EntryDrop = "drop"
	// EntryRunFailed records a run that was made and failed (every request
	// failed, the server was unreachable, the executor failed): it is not
	// complete, and the next apply redoes it.
	EntryRunFailed = "run_failed"
)

// Entry is one journal entry.
type Entry struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	At   string `json:"at"`
	Lane string `json:"lane"`
	// Key, Runs and Inputs are set on lane entries.
	Key    string          `json:"key,omitempty"`
	Runs   int             `json:"runs,omitempty"`
	Inputs json.RawMessage `json:"inputs,omitempty"`
	// Result is set on run entries; its RecordsPath is relative to the state
	// directory.
	Result *RunRecord `json:"result,omitempty"`
	// RecordsSize is the size in bytes of the run's records file.
	RecordsSize int64 `json:"records_size,omitempty"`
	// Reason says why a lane was dropped.
	Reason string `json:"reason,omitempty"`
	// Failure is set on run_failed entries.
	Failure *RunFailure `json:"failure,omitempty"`
}

// RunFailure is a run that failed, as the journal records it.
type RunFailure struct {
	Run        int    `json:"run"`
	Deployment string `json:"deployment,omitempty"`
	// Error says what failed, in words.
	Error string `json:"error"`
	// Requests and Failures are the run's request count and its failed
	// requests by class, when the run got as far as sending them.
	Requests int            `json:"requests,omitempty"`
	Failures map[string]int `json:"failures,omitempty"`
	At       string         `json:"at"`
}

// journalLine is the on-disk form of an entry: the entry's exact bytes and
// their CRC-32C.
type journalLine struct {
	CRC   string          `json:"crc"`
	Entry json.RawMessage `json:"entry"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeEntry returns the journal line for e, newline included.
func encodeEntry(e *Entry) ([]byte, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode journal entry: %w", err)
	}
	line, err := json.Marshal(journalLine{CRC: fmt.Sprintf("%08x", crc32.Checksum(raw, castagnoli)), Entry: raw})
	if err != nil {
		return nil, fmt.Errorf("encode journal entry: %w", err)
	}
	return append(line, '\n'), nil
}

// decodeLine parses one journal line (without its newline) and checks its CRC.
func decodeLine(line []byte) (*Entry, error) {
	var jl journalLine
	if err := json.Unmarshal(line, &jl); err != nil {
		return nil, fmt.Errorf("not a journal line: %w", err)
	}
	if want := fmt.Sprintf("%08x", crc32.Checksum(jl.Entry, castagnoli)); jl.CRC != want {
		return nil, fmt.Errorf("CRC mismatch (stored %q, computed %q)", jl.CRC, want)
	}
	var e Entry
	if err := json.Unmarshal(jl.Entry, &e); err != nil {
		return nil, fmt.Errorf("bad entry: %w", err)
	}
	if e.Lane == "" || (e.Type != EntryLane && e.Type != EntryRun && e.Type != EntryDrop && e.Type != EntryRunFailed) {
		return nil, fmt.Errorf("entry %d has type %q and lane %q", e.Seq, e.Type, e.Lane)
	}
	if e.Type == EntryRun && (e.Result == nil || e.Result.Run < 1) {
		return nil, fmt.Errorf("run entry %d has no result", e.Seq)
	}
	if e.Type == EntryRunFailed && (e.Failure == nil || e.Failure.Run < 1) {
		return nil, fmt.Errorf("run_failed entry %d has no run", e.Seq)
	}
	return &e, nil
}

// JournalScan is the outcome of reading a journal.
type JournalScan struct {
	Entries []*Entry
	// GoodSize is the byte length of the intact prefix of the file.
	GoodSize int64
	// Size is the file's byte length.
	Size int64
	// TailProblem describes a torn or corrupt tail (empty when intact). The
	// bytes after GoodSize are that tail.
	TailProblem string
}

// ErrJournalCorrupt is returned (wrapped) when a journal line in the middle
// of the file is damaged while later lines are intact: that is not a torn
// write, and truncating would lose completed runs.
var ErrJournalCorrupt = errors.New("journal corrupt")

// ParseJournal reads journal bytes. A damaged tail (a last line without its
// newline, or damaged lines with no intact line after them) is reported in
// TailProblem; a damaged line followed by intact ones is an
// ErrJournalCorrupt error.
func ParseJournal(data []byte) (*JournalScan, error) {
	scan := &JournalScan{Size: int64(len(data))}
	var off int64
	var firstBad string
	var badAt int64 = -1
	lineNo := 0
	for off < int64(len(data)) {
		lineNo++
		rest := data[off:]
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			if badAt < 0 {
				badAt = off
				firstBad = fmt.Sprintf("line %d is torn (%d bytes without a newline)", lineNo, len(rest))
			}
			break
		}
		line := rest[:nl]
		e, err := decodeLine(line)
		if err != nil {
			if badAt < 0 {
				badAt = off
				firstBad = fmt.Sprintf("line %d: %v", lineNo, err)
			}
		} else {
			if badAt >= 0 {
				return nil, fmt.Errorf("%w: %s, but line %d after it is intact; this is not a torn write, so nothing was truncated: move the journal aside (or delete the damaged line) and re-apply to redo the affected runs", ErrJournalCorrupt, firstBad, lineNo)
			}
			scan.Entries = append(scan.Entries, e)
		}
		off += int64(nl) + 1
	}
	scan.GoodSize = off
	if badAt >= 0 {
		scan.GoodSize = badAt
		scan.TailProblem = firstBad
	}
	return scan, nil
}

// ReadJournal reads and parses the journal file at path; a missing file is
// an empty journal.
func ReadJournal(path string) (*JournalScan, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &JournalScan{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the state journal: %w", err)
	}
	scan, err := ParseJournal(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return scan, nil
}
