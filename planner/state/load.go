package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Load reads the state directory dir without locking or modifying it. A
// directory that does not exist is an empty state. A torn journal tail is
// reported in Snapshot.Warnings (the next apply truncates it); runs whose
// records file is missing or has the wrong size are not counted as complete.
func Load(dir string) (*Snapshot, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("state directory %s is a file; point -state at a directory", dir)
	}
	scan, err := ReadJournal(filepath.Join(dir, JournalFile))
	if err != nil {
		return nil, err
	}
	snap := replay(dir, scan.Entries)
	if live, _ := LiveDeployments(dir); len(live) > 0 {
		if held, _ := Held(dir); !held {
			snap.Warnings = append(snap.Warnings, LiveWarning(dir, live))
		}
	}
	if scan.TailProblem != "" {
		snap.Warnings = append([]string{fmt.Sprintf("the state journal %s has a damaged tail (%s); the runs it held are not counted and the next apply truncates it", filepath.Join(dir, JournalFile), scan.TailProblem)}, snap.Warnings...)
	}
	// The planner decodes the applied plan (and says when it cannot).
	if b, err := os.ReadFile(filepath.Join(dir, PlanFile)); err == nil {
		snap.Applied = b
	}
	return snap, nil
}

// LiveWarning says that deployments of applies that are no longer running
// may still be up, and what reaps them.
func LiveWarning(dir string, live []LiveDeployment) string {
	var names []string
	for _, l := range live {
		names = append(names, fmt.Sprintf("%s (executor %s, apply %s, PID %d)", l.Deployment, l.Executor, l.Apply, l.PID))
	}
	return fmt.Sprintf("%d deployment(s) started by an apply that is no longer running were never torn down and may still be up (and cost money): %s; the next apply reaps them, or run 'infercrane cleanup -state %s' now",
		len(live), strings.Join(names, ", "), dir)
}

// replay folds journal entries into a snapshot.
func replay(dir string, entries []*Entry) *Snapshot {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	snap := &Snapshot{Dir: abs, Lanes: map[string]*LaneRecord{}}
	results := map[string]map[int]*RunRecord{}
	sizes := map[*RunRecord]int64{}
	for _, e := range entries {
		switch e.Type {
		case EntryDrop:
			delete(snap.Lanes, e.Lane)
			delete(results, e.Lane)
		case EntryLane:
			l := snap.Lanes[e.Lane]
			if l == nil {
				l = &LaneRecord{ID: e.Lane}
				snap.Lanes[e.Lane] = l
			}
			l.Key, l.Runs = e.Key, e.Runs
			l.Inputs = nil
			if len(e.Inputs) > 0 {
				var in map[string]any
				if err := json.Unmarshal(e.Inputs, &in); err == nil {
					l.Inputs = in
				}
			}
		case EntryRunFailed:
			l := snap.Lanes[e.Lane]
			if l == nil {
				l = &LaneRecord{ID: e.Lane}
				snap.Lanes[e.Lane] = l
			}
			if l.Failed == nil {
				l.Failed = map[int]*RunFailure{}
			}
			f := *e.Failure
			l.Failed[f.Run] = &f
		case EntryRun:
			if snap.Lanes[e.Lane] == nil {
				snap.Lanes[e.Lane] = &LaneRecord{ID: e.Lane}
			}
			delete(snap.Lanes[e.Lane].Failed, e.Result.Run)
			r := *e.Result
			r.Lane = e.Lane
			rel := r.RecordsPath
			r.RecordsPath = filepath.Join(abs, filepath.FromSlash(rel))
			if results[e.Lane] == nil {
				results[e.Lane] = map[int]*RunRecord{}
			}
			results[e.Lane][r.Run] = &r
			sizes[&r] = e.RecordsSize
		}
	}
	// Only the entries still in force are checked: a run redone later (or a
	// lane dropped) rewrote or left the records file an older entry names.
	for _, id := range snap.LaneIDs() {
		l := snap.Lanes[id]
		m := results[id]
		l.Completed = l.Completed[:0]
		l.Results = nil
		for n := range m {
			l.Completed = append(l.Completed, n)
		}
		sort.Ints(l.Completed)
		kept := l.Completed[:0]
		for _, n := range l.Completed {
			if problem := checkRecords(m[n].RecordsPath, sizes[m[n]]); problem != "" {
				snap.Warnings = append(snap.Warnings, fmt.Sprintf("run %d of lane %s is not counted: %s; the next apply redoes it", n, id, problem))
				continue
			}
			kept = append(kept, n)
		}
		l.Completed = kept
		for _, n := range l.Completed {
			l.Results = append(l.Results, m[n])
		}
	}
	return snap
}

// checkRecords returns why a run's records file cannot be trusted, or "".
func checkRecords(path string, size int64) string {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "its records file " + path + " is missing"
	case err != nil:
		return err.Error()
	case fi.Size() != size:
		return fmt.Sprintf("its records file %s has %d bytes, the journal says %d", path, fi.Size(), size)
	}
	return ""
}

// LoadPlan returns the plan JSON the last apply saved in dir (plan.json), so
// reports can be made from a state directory alone.
func LoadPlan(dir string) (json.RawMessage, error) {
	data, err := os.ReadFile(filepath.Join(dir, PlanFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s: %w", dir, PlanFile, ErrNoState)
	}
	if err != nil {
		return nil, err
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("%s is not valid JSON: %w", filepath.Join(dir, PlanFile), ErrNoState)
	}
	return data, nil
}
