package bucket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/infercrane/infercrane/planner/state"
)

// Stats says what a Pull or Push moved.
type Stats struct {
	// Entries is the number of journal entries in the state.
	Entries int
	// Fetched and Stored count objects read and written; Kept counts local
	// files that already matched.
	Fetched, Stored, Kept int
	// Removed counts local files the bucket no longer has.
	Removed int
}

// cached reports whether rel is a file the cache mirrors from the bucket
// (and so removes when the bucket no longer has it). Logs and the cache's
// own lock and backend record stay local.
func cached(rel string) bool {
	return rel == state.PlanFile || strings.HasPrefix(rel, state.RunsDir+"/") || strings.HasPrefix(rel, state.ReportsDir+"/")
}

// Pull makes dir a copy of the bucket's state: the journal and the
// deployments journal rebuilt from their entries, every file fetched
// unless the local copy already matches, every cached file the bucket
// does not have removed. Every object is checked against its SHA-256. It
// only reads from the bucket: read-only credentials are enough.
func (b *Backend) Pull(ctx context.Context, dir string) (Stats, error) {
	var st Stats
	objs, err := b.list(ctx)
	if err != nil {
		return st, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, err
	}
	var journal, deployments []object
	files := map[string]bool{}
	for _, o := range objs {
		switch {
		case strings.HasPrefix(o.rel, journalDir):
			journal = append(journal, o)
		case strings.HasPrefix(o.rel, deploymentsDir):
			deployments = append(deployments, o)
		case cached(o.rel):
			files[o.rel] = true
			n, err := b.pullFile(ctx, dir, o)
			if err != nil {
				return st, err
			}
			if n {
				st.Fetched++
			} else {
				st.Kept++
			}
		}
	}
	// Keys sort in seq (and time) order: their numbers are zero-padded.
	sort.Slice(journal, func(i, j int) bool { return journal[i].rel < journal[j].rel })
	sort.Slice(deployments, func(i, j int) bool { return deployments[i].rel < deployments[j].rel })
	for i, o := range journal {
		seq, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(o.rel, journalDir), ".jsonl"), 10, 64)
		if err != nil || seq != int64(i+1) {
			return st, fmt.Errorf("%s: journal object %s is out of sequence (expected entry %d): the bucket's journal was edited by hand", b, o.rel, i+1)
		}
	}
	n, err := b.pullLines(ctx, filepath.Join(dir, state.JournalFile), journal)
	st.Fetched += n
	if err != nil {
		return st, err
	}
	n, err = b.pullLines(ctx, filepath.Join(dir, state.DeploymentsFile), deployments)
	st.Fetched += n
	if err != nil {
		return st, err
	}
	st.Entries = len(journal)
	if err := removeStale(dir, files, &st); err != nil {
		return st, err
	}
	return st, nil
}

// pullFile fetches o into dir unless the local copy has its MD5 (the ETag
// of a single-part upload). It reports whether it fetched.
func (b *Backend) pullFile(ctx context.Context, dir string, o object) (bool, error) {
	path := filepath.Join(dir, filepath.FromSlash(o.rel))
	if have, err := readLocal(path); err == nil && have != nil && md5Hex(have) == o.etag {
		return false, nil
	}
	data, _, err := b.get(ctx, o.rel)
	if err != nil {
		return false, err
	}
	if data == nil {
		return false, fmt.Errorf("%s/%s disappeared while it was being read: another process is changing the state; try again", b, o.rel)
	}
	_, _, err = state.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return true, err
}

// pullLines rebuilds a journal file from one-line objects, reusing the
// lines the local file already has.
func (b *Backend) pullLines(ctx context.Context, path string, objs []object) (int, error) {
	local := map[string][]byte{}
	if have, err := readLocal(path); err == nil {
		for _, line := range bytes.SplitAfter(have, []byte("\n")) {
			if len(line) > 0 {
				local[md5Hex(line)] = line
			}
		}
	}
	var out bytes.Buffer
	fetched := 0
	for _, o := range objs {
		if line, ok := local[o.etag]; ok {
			out.Write(line)
			continue
		}
		data, _, err := b.get(ctx, o.rel)
		if err != nil {
			return fetched, err
		}
		if len(data) == 0 || data[len(data)-1] != '\n' || bytes.Count(data, []byte("\n")) != 1 {
			return fetched, fmt.Errorf("%s/%s is not one journal line", b, o.rel)
		}
		out.Write(data)
		fetched++
	}
	if out.Len() == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fetched, err
		}
		return fetched, nil
	}
	_, _, err := state.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(out.Bytes())
		return err
	})
	return fetched, err
}

// walkCached calls fn for every file of dir the cache mirrors from the
// bucket (see cached), half-written .tmp files left out, with its
// slash-separated name relative to dir. A dir that does not exist has none.
func walkCached(dir string, fn func(rel, path string) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !cached(rel) || strings.HasSuffix(rel, ".tmp") {
			return nil
		}
		return fn(rel, p)
	})
}

// removeStale removes the cache's mirrored files that the bucket does not
// hold (keep lists the ones it does).
func removeStale(dir string, keep map[string]bool, st *Stats) error {
	return walkCached(dir, func(rel, path string) error {
		if keep[rel] {
			return nil
		}
		st.Removed++
		return os.Remove(path)
	})
}

// Push copies the local state directory dir into an empty prefix (init's
// migration), then reads every object back and checks its digest. A
// prefix that already holds a journal is refused unless it is this very
// state (a migration that was cut off and is run again).
func (b *Backend) Push(ctx context.Context, dir string) (Stats, error) {
	var st Stats
	data, err := readLocal(filepath.Join(dir, state.JournalFile))
	if err != nil {
		return st, err
	}
	scan, err := state.ParseJournal(data)
	if err != nil {
		return st, err
	}
	if scan.TailProblem != "" {
		return st, fmt.Errorf("the journal of %s has a damaged tail (%s): run apply locally once to repair it, then migrate", dir, scan.TailProblem)
	}
	lines := bytes.SplitAfter(data[:scan.GoodSize], []byte("\n"))
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	if len(lines) != len(scan.Entries) {
		return st, fmt.Errorf("the journal of %s has %d lines for %d entries", dir, len(lines), len(scan.Entries))
	}
	for i, e := range scan.Entries {
		if e.Seq != int64(i+1) {
			return st, fmt.Errorf("the journal of %s has entry %d at position %d", dir, e.Seq, i+1)
		}
		if _, err := b.put(ctx, journalRel(e.Seq), lines[i], true, ""); err != nil {
			var ce *conflictError
			if errors.As(err, &ce) {
				return st, fmt.Errorf("%s already holds a different state (journal entry %d differs): choose another prefix, or pull that state instead", b, e.Seq)
			}
			return st, err
		}
		st.Stored++
	}
	st.Entries = len(scan.Entries)
	if dep, err := readLocal(filepath.Join(dir, state.DeploymentsFile)); err != nil {
		return st, err
	} else {
		for i, line := range bytes.SplitAfter(dep, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			// Migrated entries sort before any written later (those are
			// named by the time in nanoseconds).
			if _, err := b.put(ctx, fmt.Sprintf("%s%019d-migrated.jsonl", deploymentsDir, i), line, false, ""); err != nil {
				return st, err
			}
			st.Stored++
		}
	}
	err = walkCached(dir, func(rel, path string) error {
		if err := b.putFile(ctx, rel, path); err != nil {
			return err
		}
		st.Stored++
		return nil
	})
	if err != nil {
		return st, err
	}
	return st, b.Check(ctx, dir)
}

// putFile stores the local file path as rel.
func (b *Backend) putFile(ctx context.Context, rel, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	_, err = b.put(ctx, rel, data, false, "")
	return err
}

// Check reads every object of the bucket's state back and compares it with
// the local directory dir: the same journal, the same files with the same
// digests. Migration calls it both ways.
func (b *Backend) Check(ctx context.Context, dir string) error {
	tmp, err := os.MkdirTemp("", "infercrane-check-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := b.Pull(ctx, tmp); err != nil {
		return err
	}
	var diffs []string
	for _, rel := range []string{state.JournalFile, state.DeploymentsFile} {
		want, _ := readLocal(filepath.Join(dir, rel))
		got, _ := readLocal(filepath.Join(tmp, rel))
		if rel == state.JournalFile {
			if scan, err := state.ParseJournal(want); err == nil {
				want = want[:scan.GoodSize]
			}
		}
		if !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(got)) {
			diffs = append(diffs, rel)
		}
	}
	local := map[string]string{}
	hash := func(into map[string]string) func(rel, path string) error {
		return func(rel, path string) error {
			data, err := os.ReadFile(path)
			into[rel] = sha256Hex(data)
			return err
		}
	}
	pulled := map[string]string{}
	if err := walkCached(dir, hash(local)); err != nil {
		return err
	}
	if err := walkCached(tmp, hash(pulled)); err != nil {
		return err
	}
	for rel, sum := range pulled {
		if local[rel] != sum {
			diffs = append(diffs, rel)
		}
		delete(local, rel)
	}
	for rel := range local {
		diffs = append(diffs, rel)
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		return fmt.Errorf("%s and %s differ after the copy: %s", b, dir, strings.Join(diffs, ", "))
	}
	return nil
}

// Empty reports whether the prefix holds no state.
func (b *Backend) Empty(ctx context.Context) (bool, error) {
	objs, err := b.list(ctx)
	if err != nil {
		return false, err
	}
	for _, o := range objs {
		if o.rel != lockKey {
			return false, nil
		}
	}
	return true, nil
}

// Replica returns the state.Replica an apply holding l writes through.
func (b *Backend) Replica(l *Lock) state.Replica { return &replica{b: b, lock: l} }

// replica writes a Store's state into the bucket under a held lock.
type replica struct {
	b    *Backend
	lock *Lock
}

// requestTimeout bounds one write with its retries; a store that does not
// answer for that long fails the write, and apply stops to be resumed.
const requestTimeout = 2 * time.Minute

func (r *replica) AppendJournal(seq int64, line []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	_, err := r.b.put(ctx, journalRel(seq), line, true, "")
	return err
}

func (r *replica) AppendDeployment(line []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	rel := fmt.Sprintf("%s%019d-%s.jsonl", deploymentsDir, time.Now().UnixNano(), r.lock.ID())
	_, err := r.b.put(ctx, rel, line, true, "")
	return err
}

func (r *replica) PutFile(rel, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	return r.b.putFile(ctx, rel, path)
}

func (r *replica) Held() error  { return r.lock.Held() }
func (r *replica) Close() error { return r.lock.Release() }
