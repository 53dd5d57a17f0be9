package report

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner/state"
)

// reportFiles reads every file of a reports directory by name.
func reportFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// checkOldOrNew fails unless every report in dir is byte for byte its old
// or its new version, and no temporary file is left (when noTemps).
func checkOldOrNew(t *testing.T, dir string, old, cur map[string][]byte, noTemps bool) (nOld, nNew int) {
	t.Helper()
	for name, b := range reportFiles(t, dir) {
		switch {
		case strings.HasSuffix(name, ".tmp"):
			if noTemps {
				t.Errorf("temporary file %s left behind", name)
			}
		case bytes.Equal(b, cur[name]):
			nNew++
		case bytes.Equal(b, old[name]):
			nOld++
		default:
			t.Errorf("%s is torn: %d bytes, neither the old (%d) nor the new (%d) report", name, len(b), len(old[name]), len(cur[name]))
		}
	}
	return nOld, nNew
}

// twoStates writes the fixture state with two runs per lane, generates its
// reports (the old ones), then completes the third run (so the new reports
// differ) and returns the state dir, reports dir and the old reports.
func twoStates(t *testing.T, out string) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	in := fixtureInput()
	third := map[string][]RunData{}
	for id, runs := range in.Runs {
		third[id] = runs[2:]
		in.Runs[id] = runs[:2]
	}
	writeStateFixtureOf(t, dir, in)
	if _, err := Generate(dir, Options{OutDir: out, Resamples: 200}); err != nil {
		t.Fatal(err)
	}
	old := reportFiles(t, out)
	st, err := state.Open(dir, "report test")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, l := range in.Plan.Lanes {
		for _, r := range third[l.ID] {
			recs := r.Records
			if err := st.CommitRun(state.RunRecord{Lane: l.ID, Run: r.Run, Deployment: l.Deployment, FinishedAt: r.FinishedAt},
				func(w io.Writer) error { return loadgen.WriteRecords(w, recs) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir, old
}

// newReports generates the reports of dir into a scratch directory.
func newReports(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	scratch := t.TempDir()
	if _, err := Generate(dir, Options{OutDir: scratch, Resamples: 200}); err != nil {
		t.Fatal(err)
	}
	return reportFiles(t, scratch)
}

// TestReportsFullDiskTmpfs fills a small tmpfs while the reports are
// rewritten: each report is the old one or the new one, never torn, and a
// repair once there is room writes what is missing. It needs root to mount
// the tmpfs and skips otherwise (TestReportsFullDiskSimulated covers the
// same at the writer).
func TestReportsFullDiskTmpfs(t *testing.T) {
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v); the simulated full disk test covers the writer", err)
	}
	defer syscall.Unmount(mnt, 0)
	out := filepath.Join(mnt, "reports")
	dir, old := twoStates(t, out)
	cur := newReports(t, dir)
	// Fill the disk, leaving less room than the new reports need.
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := filler.Write(chunk); err != nil {
			break
		}
	}
	filler.Sync()
	_, err = Generate(dir, Options{OutDir: out, Resamples: 200})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Generate on a full disk: %v, want ENOSPC", err)
	}
	if nOld, _ := checkOldOrNew(t, out, old, cur, true); nOld == 0 {
		t.Error("the full disk left no old report at all")
	}
	filler.Close()
	os.Remove(filler.Name())
	oc, err := Generate(dir, Options{OutDir: out, Resamples: 200, RepairOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(oc.Repaired) == 0 {
		t.Error("nothing repaired")
	}
	if nOld, _ := checkOldOrNew(t, out, old, cur, true); nOld != 0 {
		t.Errorf("%d old report(s) left after the repair", nOld)
	}
}

// TestReportsFullDiskSimulated makes the writer fail with ENOSPC half-way
// through the third report (where no tmpfs can be mounted, this is the
// full disk): old or new, never torn; the repair writes the rest.
func TestReportsFullDiskSimulated(t *testing.T) {
	out := t.TempDir()
	dir, old := twoStates(t, out)
	cur := newReports(t, dir)
	n := 0
	writeFile = func(path string, write func(io.Writer) error) (int64, string, error) {
		n++
		if n < 3 {
			return state.WriteFileAtomic(path, write)
		}
		return state.WriteFileAtomic(path, func(w io.Writer) error {
			var buf bytes.Buffer
			write(&buf)
			w.Write(buf.Bytes()[:buf.Len()/2])
			return syscall.ENOSPC
		})
	}
	defer func() { writeFile = state.WriteFileAtomic }()
	if _, err := Generate(dir, Options{OutDir: out, Resamples: 200}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("err %v, want ENOSPC", err)
	}
	nOld, nNew := checkOldOrNew(t, out, old, cur, true)
	if nOld == 0 || nNew != 2 {
		t.Errorf("%d old and %d new reports, want the first 2 new and the rest old", nOld, nNew)
	}
	writeFile = state.WriteFileAtomic
	oc, err := Generate(dir, Options{OutDir: out, Resamples: 200, RepairOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(oc.Repaired) != nOld {
		t.Errorf("repaired %v, want the %d old reports", oc.Repaired, nOld)
	}
	if nOld, _ := checkOldOrNew(t, out, old, cur, true); nOld != 0 {
		t.Errorf("%d old report(s) left after the repair", nOld)
	}
	// Nothing left to repair.
	if oc, _ := Generate(dir, Options{OutDir: out, Resamples: 200, RepairOnly: true}); len(oc.Repaired) != 0 {
		t.Errorf("a second repair rewrote %v", oc.Repaired)
	}
}

// TestReportsKilledMidWrite kills a real process (this test binary, re-run
// as a child) with SIGKILL while it writes the reports, at a moment its
// writer holds a half-written temporary file: every report is old or new,
// and a repair removes the temporary file and completes the set.
func TestReportsKilledMidWrite(t *testing.T) {
	if os.Getenv("INFERCRANE_REPORT_CHILD") != "" {
		reportChild(t)
		return
	}
	out := t.TempDir()
	dir, old := twoStates(t, out)
	cur := newReports(t, dir)
	cmd := exec.Command(os.Args[0], "-test.run=^TestReportsKilledMidWrite$")
	cmd.Env = append(os.Environ(), "INFERCRANE_REPORT_CHILD="+dir+"|"+out)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "child-mid-write")
	deadline := time.Now().Add(2 * time.Minute) // a hang, not a slow machine: the child builds two reports first
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child never reached its third report")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	temps, _ := filepath.Glob(filepath.Join(out, ".*.tmp"))
	if len(temps) != 1 {
		t.Fatalf("temporary files %v, want the one being written when killed", temps)
	}
	if nOld, nNew := checkOldOrNew(t, out, old, cur, false); nOld == 0 || nNew != 2 {
		t.Errorf("%d old and %d new reports, want 2 new and the rest old", nOld, nNew)
	}
	oc, err := Generate(dir, Options{OutDir: out, Resamples: 200, RepairOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(oc.Repaired) == 0 {
		t.Error("nothing repaired")
	}
	if nOld, _ := checkOldOrNew(t, out, old, cur, true); nOld != 0 {
		t.Errorf("%d old report(s) left after the repair", nOld)
	}
}

// reportChild writes the reports and stops for good half-way into the
// third one, after telling the parent it is there.
func reportChild(t *testing.T) {
	dir, out, _ := strings.Cut(os.Getenv("INFERCRANE_REPORT_CHILD"), "|")
	n := 0
	writeFile = func(path string, write func(io.Writer) error) (int64, string, error) {
		if n++; n < 3 {
			return state.WriteFileAtomic(path, write)
		}
		return state.WriteFileAtomic(path, func(w io.Writer) error {
			var buf bytes.Buffer
			write(&buf)
			w.Write(buf.Bytes()[:buf.Len()/2])
			os.WriteFile(filepath.Join(dir, "child-mid-write"), nil, 0o644)
			time.Sleep(time.Hour) // killed here
			return nil
		})
	}
	Generate(dir, Options{OutDir: out, Resamples: 200})
	t.Fatal("the child was not killed")
}

// TestGenerateChecksBeforeEachWrite: Options.Check (the state store's
// lock check) runs before each file, and its error stops Generate before
// the write: an apply whose state directory was replaced writes no report
// into the directory another apply holds (issue 25, defect 7).
func TestGenerateChecksBeforeEachWrite(t *testing.T) {
	dir := t.TempDir()
	writeStateFixtureOf(t, dir, fixtureInput())
	out := filepath.Join(t.TempDir(), "reports")
	calls := 0
	replaced := errors.New("the state directory was replaced")
	_, err := Generate(dir, Options{OutDir: out, Resamples: 200, Check: func() error {
		calls++
		if calls > 2 {
			return replaced
		}
		return nil
	}})
	if !errors.Is(err, replaced) {
		t.Fatalf("Generate: %v", err)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 1 {
		t.Errorf("%d files written, want the one written before the check failed: %v", len(entries), entries)
	}
}
