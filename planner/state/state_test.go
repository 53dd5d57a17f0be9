package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func commit(t *testing.T, s *Store, lane string, run int) {
	t.Helper()
	err := s.CommitRun(RunRecord{Lane: lane, Run: run, Summary: json.RawMessage(`{"requests":2}`)}, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "{\"index\":0}\n{\"index\":1}\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestStoreRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	s, err := Open(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StartLane("aa11", "scr/m/sh/g", 3, map[string]any{"model_id": "m", "requests": 4}); err != nil {
		t.Fatal(err)
	}
	commit(t, s, "aa11", 2)
	commit(t, s, "aa11", 1)
	if err := s.StartLane("bb22", "scr/m2/sh/g", 1, map[string]any{"model_id": "m2"}); err != nil {
		t.Fatal(err)
	}
	commit(t, s, "bb22", 1)
	if err := s.Drop("bb22", "left the spec"); err != nil {
		t.Fatal(err)
	}
	if err := s.SavePlan([]byte(`{"format_version":"1"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Warnings) != 0 {
		t.Errorf("warnings: %v", snap.Warnings)
	}
	if len(snap.Lanes) != 1 {
		t.Fatalf("lanes: %v", snap.LaneIDs())
	}
	l := snap.Lanes["aa11"]
	if l.Key != "scr/m/sh/g" || l.Runs != 3 || fmt.Sprint(l.Completed) != "[1 2]" || !l.Complete(2) || l.Complete(3) {
		t.Errorf("lane record: %+v", l)
	}
	if l.Inputs["model_id"] != "m" || l.Inputs["requests"] != float64(4) {
		t.Errorf("inputs: %v", l.Inputs)
	}
	r := l.Results[1]
	if r.Run != 2 || string(r.Summary) != `{"requests":2}` || !filepath.IsAbs(r.RecordsPath) || len(r.RecordsSHA256) != 64 {
		t.Errorf("result: %+v", r)
	}
	if data, err := os.ReadFile(r.RecordsPath); err != nil || strings.Count(string(data), "\n") != 2 {
		t.Errorf("records file: %q %v", data, err)
	}
	if p, err := LoadPlan(dir); err != nil || string(p) != `{"format_version":"1"}` {
		t.Errorf("plan: %s %v", p, err)
	}
	if string(snap.Applied) != `{"format_version":"1"}` {
		t.Errorf("the snapshot's applied plan is %q, want plan.json's bytes", snap.Applied)
	}
	if empty, err := Load(t.TempDir()); err != nil || empty.Applied != nil {
		t.Errorf("a state without plan.json: applied %q, %v; want none", empty.Applied, err)
	}
}

func TestTornTailIsTruncatedOnOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	s.StartLane("aa11", "k", 2, map[string]any{})
	commit(t, s, "aa11", 1)
	commit(t, s, "aa11", 2)
	s.Close()
	jp := filepath.Join(dir, JournalFile)
	data, _ := os.ReadFile(jp)
	// Tear the last entry in half, as a crash during write would.
	torn := data[:len(data)-40]
	os.WriteFile(jp, torn, 0o644)

	snap, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(snap.Lanes["aa11"].Completed) != "[1]" || len(snap.Warnings) != 1 || !strings.Contains(snap.Warnings[0], "torn") {
		t.Fatalf("snapshot of torn journal: %v %v", snap.Lanes["aa11"].Completed, snap.Warnings)
	}
	if after, _ := os.ReadFile(jp); len(after) != len(torn) {
		t.Fatal("Load modified the journal")
	}
	s, err = Open(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "truncated") {
		t.Errorf("notes: %v", s.Notes)
	}
	commit(t, s, "aa11", 2)
	s.Close()
	snap, err = Load(dir)
	if err != nil || fmt.Sprint(snap.Lanes["aa11"].Completed) != "[1 2]" || len(snap.Warnings) != 0 {
		t.Fatalf("after repair: %v %v %v", snap.Lanes["aa11"].Completed, snap.Warnings, err)
	}
}

func TestCorruptMiddleIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, "test")
	s.StartLane("aa11", "k", 2, map[string]any{})
	commit(t, s, "aa11", 1)
	commit(t, s, "aa11", 2)
	s.Close()
	jp := filepath.Join(dir, JournalFile)
	data, _ := os.ReadFile(jp)
	lines := strings.SplitAfter(string(data), "\n")
	lines[1] = strings.Replace(lines[1], `"run":1`, `"run":7`, 1)
	os.WriteFile(jp, []byte(strings.Join(lines, "")), 0o644)
	_, err := Load(dir)
	if !errors.Is(err, ErrJournalCorrupt) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("want ErrJournalCorrupt naming line 2, got %v", err)
	}
	if _, err := Open(dir, "test"); !errors.Is(err, ErrJournalCorrupt) {
		t.Fatalf("Open: want ErrJournalCorrupt, got %v", err)
	}
}

func TestMissingRecordsFileIsNotComplete(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, "test")
	s.StartLane("aa11", "k", 2, map[string]any{})
	commit(t, s, "aa11", 1)
	commit(t, s, "aa11", 2)
	s.Close()
	os.Remove(filepath.Join(dir, "runs", "aa11", "1.jsonl"))
	snap, err := Load(dir)
	if err != nil || fmt.Sprint(snap.Lanes["aa11"].Completed) != "[2]" || len(snap.Warnings) != 1 {
		t.Fatalf("%v %v %v", snap.Lanes["aa11"].Completed, snap.Warnings, err)
	}
}

func TestSecondOpenFailsFastNamingHolder(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "apply")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(dir, "apply")
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.PID != os.Getpid() || !strings.Contains(err.Error(), fmt.Sprintf("PID %d", os.Getpid())) {
		t.Fatalf("want LockedError naming PID %d, got %v", os.Getpid(), err)
	}
}

// TestLockOfKilledProcessIsTakenOver runs a real process that takes the
// lock, kills it with SIGKILL and takes the lock over.
func TestLockOfKilledProcessIsTakenOver(t *testing.T) {
	if dir := os.Getenv("STATE_TEST_HOLD_LOCK"); dir != "" {
		if _, err := Open(dir, "holder"); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println("LOCKED")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockOfKilledProcessIsTakenOver$")
	cmd.Env = append(os.Environ(), "STATE_TEST_HOLD_LOCK="+dir)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := io.ReadAtLeast(out, buf, 6)
	if !strings.Contains(string(buf[:n]), "LOCKED") {
		cmd.Process.Kill()
		t.Fatalf("holder said %q", buf[:n])
	}
	var le *LockedError
	if _, err := Open(dir, "second"); !errors.As(err, &le) || le.Holder.PID != cmd.Process.Pid {
		t.Errorf("while held: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	s, err := Open(dir, "third")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.lock.Stale == nil || s.lock.Stale.PID != cmd.Process.Pid || len(s.Notes) != 1 {
		t.Fatalf("stale holder not noted: %+v %v", s.lock.Stale, s.Notes)
	}
}

// FuzzParseJournal checks that any bytes parse without panicking, that an
// intact prefix is never longer than the input, and that re-parsing the
// intact prefix yields the same entries with no problem.
func FuzzParseJournal(f *testing.F) {
	e1, _ := encodeEntry(&Entry{Seq: 1, Type: EntryLane, Lane: "a", Key: "k", Runs: 2, Inputs: json.RawMessage(`{}`)})
	e2, _ := encodeEntry(&Entry{Seq: 2, Type: EntryRun, Lane: "a", Result: &RunRecord{Run: 1, RecordsPath: "runs/a/1.jsonl"}, RecordsSize: 3})
	f.Add(append(append([]byte{}, e1...), e2...))
	f.Add(append(append([]byte{}, e1...), e2[:10]...))
	f.Add([]byte("garbage\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		scan, err := ParseJournal(data)
		if err != nil {
			if !errors.Is(err, ErrJournalCorrupt) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if scan.GoodSize > int64(len(data)) {
			t.Fatalf("good size %d > %d", scan.GoodSize, len(data))
		}
		again, err := ParseJournal(data[:scan.GoodSize])
		if err != nil || again.TailProblem != "" || len(again.Entries) != len(scan.Entries) {
			t.Fatalf("intact prefix does not re-parse cleanly: %v %q", err, again.TailProblem)
		}
	})
}

// A rerun rewrites a run's records file; the superseded journal entry must
// not produce a "not counted" warning for the run that is counted.
func TestRedoneRunGivesNoStaleWarning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	s, err := Open(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StartLane("aa11", "scr/m/sh/g", 1, nil); err != nil {
		t.Fatal(err)
	}
	commit(t, s, "aa11", 1)
	if err := s.Drop("aa11", "rerun forced"); err != nil {
		t.Fatal(err)
	}
	if err := s.StartLane("aa11", "scr/m/sh/g", 1, nil); err != nil {
		t.Fatal(err)
	}
	err = s.CommitRun(RunRecord{Lane: "aa11", Run: 1, Summary: json.RawMessage(`{"requests":3}`)}, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "{\"index\":0}\n{\"index\":1}\n{\"index\":2}\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Warnings) != 0 {
		t.Errorf("warnings: %v", snap.Warnings)
	}
	if l := snap.Lanes["aa11"]; l == nil || fmt.Sprint(l.Completed) != "[1]" {
		t.Errorf("lane: %+v", l)
	}
}

// TestDeletedLockFileDoesNotFreeTheState deletes the lock file (and then
// the whole lock info) while the state is held: a second Open is still
// refused and names the holder, because the lock is an flock on the
// directory, and Held sees it without taking it.
func TestDeletedLockFileDoesNotFreeTheState(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "apply")
	if err != nil {
		t.Fatal(err)
	}
	if held, pid := Held(dir); !held || pid != os.Getpid() {
		t.Fatalf("Held while locked = %v, %d", held, pid)
	}
	if err := os.Remove(filepath.Join(dir, LockFile)); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, "apply")
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.PID != os.Getpid() {
		t.Fatalf("second Open after the lock file was deleted: want LockedError naming PID %d, got %v", os.Getpid(), err)
	}
	// The refused Open must not have written its own info.
	if _, err := os.Stat(filepath.Join(dir, LockFile)); err == nil {
		if info := readLockInfoPath(filepath.Join(dir, LockFile)); info != nil && info.PID != os.Getpid() {
			t.Fatalf("the refused Open rewrote the lock file: %+v", info)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if held, _ := Held(dir); held {
		t.Fatal("Held after Close")
	}
	s2, err := Open(dir, "apply")
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}

// TestRemovedStateDirStopsWrites removes the state directory while a store
// holds it: the next write fails and says so, rather than journaling into
// a directory nobody can see while a new apply locks a new one.
func TestRemovedStateDirStopsWrites(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	s, err := Open(dir, "apply")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.StartLane("aa11", "k", 1, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	err = s.StartLane("bb22", "k", 1, map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "removed or replaced") {
		t.Fatalf("write after the directory was removed: %v", err)
	}
}

// FuzzParseDeployments: any bytes parse without panicking, intact entries
// survive damage around them, and a deployment with a stopped entry is
// never live.
func FuzzParseDeployments(f *testing.F) {
	a, _ := encodeDeployment(&DeploymentEntry{Type: DeployStarting, Apply: "a1", Deployment: "d1", Executor: "local"})
	b, _ := encodeDeployment(&DeploymentEntry{Type: DeployStarted, Apply: "a1", Deployment: "d1", Server: json.RawMessage(`{"handle":"pgid:5"}`)})
	c, _ := encodeDeployment(&DeploymentEntry{Type: DeployStopped, Apply: "a1", Deployment: "d1"})
	f.Add(append(append([]byte{}, a...), b...))
	f.Add(append(append(append([]byte{}, a...), b[:7]...), c...))
	f.Add([]byte("garbage\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries := parseDeployments(data)
		live := liveDeployments(entries)
		stopped := map[string]bool{}
		for _, e := range entries {
			if e.Type == DeployStopped {
				stopped[e.Apply+"/"+e.Deployment] = true
			}
		}
		for _, l := range live {
			if stopped[l.Apply+"/"+l.Deployment] {
				// Only a start after the stop may make it live again.
				last := ""
				for _, e := range entries {
					if e.Apply == l.Apply && e.Deployment == l.Deployment {
						last = e.Type
					}
				}
				if last == DeployStopped {
					t.Fatalf("deployment %s/%s is live after its last entry stopped it", l.Apply, l.Deployment)
				}
			}
		}
		// An intact entry appended after any damage is read.
		extra, _ := encodeDeployment(&DeploymentEntry{Type: DeployStarting, Apply: "zz", Deployment: "zz"})
		glued := append(append(append([]byte{}, data...), '\n'), extra...)
		found := false
		for _, e := range parseDeployments(glued) {
			if e.Apply == "zz" {
				found = true
			}
		}
		if !found {
			t.Fatal("an intact entry after damaged bytes was lost")
		}
	})
}

// TestReplacedStateDirStopsEveryWrite replaces the state directory while a
// store holds it (another apply may lock the new one): every write of the
// store fails saying so, and the new directory stays empty (issue 25,
// defect 7; before, the applied plan and a run's records went into it).
func TestReplacedStateDirStopsEveryWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	s, err := Open(dir, "apply")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func() error{
		"SavePlan": func() error { return s.SavePlan([]byte("{}")) },
		"CommitRun": func() error {
			return s.CommitRun(RunRecord{Lane: "aa11", Run: 1}, func(w io.Writer) error { _, err := w.Write([]byte("{}\n")); return err })
		},
		"LogDir":    func() error { _, err := s.LogDir(); return err },
		"ReportDir": func() error { _, err := s.ReportDir(); return err },
		"Check":     s.Check,
		"StartLane": func() error { return s.StartLane("aa11", "k", 1, map[string]any{}) },
	} {
		if err := write(); err == nil || !strings.Contains(err.Error(), "removed or replaced") {
			t.Errorf("%s after the directory was replaced: %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the new directory holds %v", entries)
	}
}
