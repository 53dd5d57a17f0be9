package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Store is a state directory opened for writing by the apply that holds its
// lock. Its methods are safe for concurrent use.
type Store struct {
	dir  string
	lock *Lock
	// replica, when set, receives every write first (see Replica).
	replica Replica

	mu      sync.Mutex
	journal *os.File
	size    int64
	seq     int64
	entries []*Entry
	broken  error
	// Notes say what Open repaired or took over.
	Notes []string
}

// Open locks state directory dir (creating it), repairs a torn journal tail
// by truncating it to its last intact entry, removes half-written records
// files, and opens the journal for appending. command is recorded in the
// lock for the error a second apply gets.
func Open(dir, command string) (*Store, error) {
	lock, err := AcquireLock(dir, command)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, lock: lock}
	if lock.Stale != nil {
		s.Notes = append(s.Notes, fmt.Sprintf("took over the lock of PID %d (started %s), which is no longer running", lock.Stale.PID, lock.Stale.StartedAt))
	}
	if err := s.open(); err != nil {
		lock.Release()
		return nil, err
	}
	return s, nil
}

func (s *Store) open() error {
	path := filepath.Join(s.dir, JournalFile)
	scan, err := ReadJournal(path)
	if err != nil {
		return err
	}
	if scan.TailProblem != "" {
		if err := os.Truncate(path, scan.GoodSize); err != nil {
			return fmt.Errorf("truncate the damaged tail of %s: %w; make the state directory writable", path, err)
		}
		s.Notes = append(s.Notes, fmt.Sprintf("the journal had a damaged tail (%s); truncated it to its last intact entry (%d of %d bytes kept)", scan.TailProblem, scan.GoodSize, scan.Size))
	}
	s.entries = scan.Entries
	if n := len(scan.Entries); n > 0 {
		s.seq = scan.Entries[n-1].Seq
	}
	s.size = scan.GoodSize
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open the state journal: %w; make %s writable or choose another directory with -state", err, s.dir)
	}
	if scan.Size == 0 {
		if err := syncDir(s.dir); err != nil {
			f.Close()
			return err
		}
	}
	s.journal = f
	s.removeHalfWritten()
	return nil
}

// removeHalfWritten deletes records files that were being written when an
// earlier apply stopped.
func (s *Store) removeHalfWritten() {
	filepath.WalkDir(filepath.Join(s.dir, RunsDir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".tmp") {
			os.Remove(p)
		}
		return nil
	})
}

// Dir returns the state directory.
func (s *Store) Dir() string { return s.dir }

// LogDir returns (creating it) the directory for server and executor logs.
func (s *Store) LogDir() (string, error) { return s.subdir(LogsDir) }

// ReportDir returns (creating it) the directory for evidence and reports.
func (s *Store) ReportDir() (string, error) { return s.subdir(ReportsDir) }

func (s *Store) subdir(name string) (string, error) {
	if err := s.Check(); err != nil {
		return "", err
	}
	p := filepath.Join(s.dir, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", p, err)
	}
	return p, nil
}

// Check fails when the store may no longer write: its directory was
// removed or replaced while it held the lock (another apply may hold the
// new one), or an earlier write failed. Every write of the store checks
// it first; a caller writing into the state itself (the reports) calls it
// before each file.
func (s *Store) Check() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkLocked()
}

func (s *Store) checkLocked() error {
	if s.broken != nil {
		return s.broken
	}
	if err := s.lock.check(s.dir); err != nil {
		s.broken = err
		return err
	}
	return nil
}

// Snapshot returns the state as the journal now records it, with the
// plan.json the last apply saved as Applied.
func (s *Store) Snapshot() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := replay(s.dir, s.entries)
	snap.Warnings = append(append([]string(nil), s.Notes...), snap.Warnings...)
	if b, err := os.ReadFile(filepath.Join(s.dir, PlanFile)); err == nil {
		snap.Applied = b
	}
	return snap
}

// StartLane journals that lane id (at spec position key) runs with the
// given inputs and planned run count.
func (s *Store) StartLane(id, key string, runs int, inputs any) error {
	raw, err := json.Marshal(inputs)
	if err != nil {
		return fmt.Errorf("encode the inputs of lane %s: %w", id, err)
	}
	return s.append(&Entry{Type: EntryLane, Lane: id, Key: key, Runs: runs, Inputs: raw})
}

// Drop journals that lane id and its runs leave the state.
func (s *Store) Drop(id, reason string) error {
	return s.append(&Entry{Type: EntryDrop, Lane: id, Reason: reason})
}

// RecordsRel returns the records path of a run, relative to the state directory.
func RecordsRel(lane string, run int) string {
	return fmt.Sprintf("%s/%s/%d.jsonl", RunsDir, lane, run)
}

// StreamPath is where run n of lane id may stream its records while it
// runs (an absolute path in the state directory ending in .tmp, so a run
// cut off leaves nothing the next Open does not remove); CommitRun then
// copies it into place.
func (s *Store) StreamPath(id string, n int) string {
	return filepath.Join(s.dir, filepath.FromSlash(RecordsRel(id, n))) + ".stream.tmp"
}

// CommitRun makes a run complete: write receives the records file (one
// JSON record a line), which is fsynced and renamed into place before the
// journal entry naming it is appended and fsynced. r.Lane and r.Run must be
// set; RecordsPath and RecordsSHA256 are filled in.
func (s *Store) CommitRun(r RunRecord, write func(io.Writer) error) error {
	if r.Lane == "" || r.Run < 1 {
		return fmt.Errorf("commit run: lane %q run %d is not a run", r.Lane, r.Run)
	}
	if err := s.Check(); err != nil {
		return err
	}
	rel := RecordsRel(r.Lane, r.Run)
	size, sum, err := writeFileSynced(filepath.Join(s.dir, filepath.FromSlash(rel)), write)
	if err != nil {
		return fmt.Errorf("write the records of run %d of lane %s: %w", r.Run, r.Lane, err)
	}
	r.RecordsPath = rel
	r.RecordsSHA256 = sum
	if err := s.publish(rel); err != nil {
		return fmt.Errorf("the records of run %d of lane %s: %w", r.Run, r.Lane, err)
	}
	return s.append(&Entry{Type: EntryRun, Lane: r.Lane, Result: &r, RecordsSize: size})
}

// FailRun journals that run f.Run of lane id was made and failed; it stays
// to do. f.At is filled in.
func (s *Store) FailRun(id string, f RunFailure) error {
	if id == "" || f.Run < 1 {
		return fmt.Errorf("fail run: lane %q run %d is not a run", id, f.Run)
	}
	f.At = time.Now().UTC().Format(time.RFC3339Nano)
	return s.append(&Entry{Type: EntryRunFailed, Lane: id, Failure: &f})
}

// SavePlan writes plan.json atomically.
func (s *Store) SavePlan(data []byte) error {
	if err := s.Check(); err != nil {
		return err
	}
	_, _, err := writeFileSynced(filepath.Join(s.dir, PlanFile), func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("save the applied plan: %w", err)
	}
	return s.publish(PlanFile)
}

// append writes one entry and fsyncs the journal. After a failed write the
// journal is cut back to its last entry and the store refuses further
// writes, so a partial line can never sit before an intact one.
func (s *Store) append(e *Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	if s.journal == nil {
		return errors.New("the state store is closed")
	}
	if err := s.lock.check(s.dir); err != nil {
		s.broken = err
		return err
	}
	e.Seq = s.seq + 1
	e.At = time.Now().UTC().Format(time.RFC3339Nano)
	line, err := encodeEntry(e)
	if err != nil {
		return err
	}
	// The backend is the state: an entry counts once it is there. If the
	// local write then fails, the next pull brings it back.
	if s.replica != nil {
		if err := s.replicate(e.Seq, line); err != nil {
			return err
		}
	}
	_, werr := s.journal.Write(line)
	if werr == nil {
		werr = s.journal.Sync()
	}
	if werr != nil {
		s.journal.Truncate(s.size)
		s.broken = fmt.Errorf("write the state journal %s: %w; free disk space or make the directory writable, then re-run apply to resume", filepath.Join(s.dir, JournalFile), werr)
		return s.broken
	}
	s.seq = e.Seq
	s.size += int64(len(line))
	s.entries = append(s.entries, e)
	return nil
}

// replicate stores journal entry seq in the replica; a failure breaks the
// store like a failed local write.
func (s *Store) replicate(seq int64, line []byte) error {
	err := s.replica.Held()
	if err == nil {
		err = s.replica.AppendJournal(seq, line)
	}
	if err != nil {
		s.broken = fmt.Errorf("store journal entry %d in the backend: %w; the runs journaled before it are safe there, re-run apply to resume", seq, err)
		return s.broken
	}
	return nil
}

// Close closes the journal and releases the lock (the replica's too).
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var jerr, rerr error
	if s.journal != nil {
		jerr = s.journal.Close()
		s.journal = nil
	}
	if s.replica != nil {
		rerr = s.replica.Close()
		s.replica = nil
	}
	return errors.Join(jerr, rerr, s.lock.Release())
}

// writeFileSynced is WriteFileAtomic.
func writeFileSynced(path string, write func(io.Writer) error) (int64, string, error) {
	return WriteFileAtomic(path, write)
}

// WriteFileAtomic writes path through a temporary file in the same
// directory that is fsynced and renamed into place, then fsyncs the
// directory: a crash or a full disk leaves the old file or the new one,
// never a torn one. It returns the size and hex SHA-256 of what was
// written. The file is readable by others (0644).
func WriteFileAtomic(path string, write func(io.Writer) error) (int64, string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, "", err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, "", err
	}
	tmp := f.Name()
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return 0, "", err
	}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	err = write(cw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, "", err
	}
	return cw.n, hex.EncodeToString(h.Sum(nil)), nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
