package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// DeploymentsFile is the journal of what applies started (deployments.jsonl).
const DeploymentsFile = "deployments.jsonl"

// Deployment journal entry types.
const (
	// DeployStarting is written before an executor's Deploy is called.
	DeployStarting = "starting"
	// DeployStarted records what the executor reported it started (again
	// when the deployment became healthy, with the final server).
	DeployStarted = "started"
	// DeployStopped records that the deployment is gone: torn down by its
	// apply, or reaped by a later one.
	DeployStopped = "stopped"
)

// DeploymentEntry is one line of the deployments journal. An apply writes
// starting and started entries for each deployment and a stopped entry when
// its teardown succeeded; a deployment with no stopped entry may still be
// running, and the next apply (or `infercrane cleanup`) reaps it.
type DeploymentEntry struct {
	Type       string `json:"type"`
	At         string `json:"at"`
	Apply      string `json:"apply"`
	Deployment string `json:"deployment"`
	// Executor and Config say how to reach the executor that started it
	// (the lane's resolved executor settings, as the plan shows them; an
	// apply before plan format 2 journaled the block's attributes).
	Executor string         `json:"executor,omitempty"`
	Config   map[string]any `json:"config,omitempty"`
	// Server is the executor's own description of what it started
	// (executor.Server as JSON: its Handle is what Teardown needs).
	Server json.RawMessage `json:"server,omitempty"`
	// PID is the apply's process.
	PID int `json:"pid,omitempty"`
	// How says how a stopped deployment stopped ("torn down", "reaped by
	// apply X", ...).
	How string `json:"how,omitempty"`
}

// LiveDeployment is a deployment the journal does not record as stopped.
type LiveDeployment struct {
	Apply, Deployment, Executor string
	Config                      map[string]any
	// Server is the last server reported (nil: none was, Deploy had only
	// been called).
	Server    json.RawMessage
	PID       int
	StartedAt string
}

func encodeDeployment(e *DeploymentEntry) ([]byte, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode deployment entry: %w", err)
	}
	line, err := json.Marshal(journalLine{CRC: fmt.Sprintf("%08x", crc32.Checksum(raw, castagnoli)), Entry: raw})
	if err != nil {
		return nil, err
	}
	return append(line, '\n'), nil
}

// readDeployments reads the deployments journal of dir; a damaged line (a
// torn tail) is skipped, so that a crash mid-write never hides the entries
// before it.
func readDeployments(dir string) ([]*DeploymentEntry, error) {
	data, err := os.ReadFile(filepath.Join(dir, DeploymentsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the deployments journal: %w", err)
	}
	return parseDeployments(data), nil
}

// parseDeployments reads deployments journal bytes, skipping damaged lines.
func parseDeployments(data []byte) []*DeploymentEntry {
	var out []*DeploymentEntry
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		var jl journalLine
		if json.Unmarshal(line, &jl) != nil || fmt.Sprintf("%08x", crc32.Checksum(jl.Entry, castagnoli)) != jl.CRC {
			continue
		}
		var e DeploymentEntry
		if json.Unmarshal(jl.Entry, &e) != nil || e.Deployment == "" {
			continue
		}
		out = append(out, &e)
	}
	return out
}

// liveDeployments folds entries into the deployments not stopped, oldest
// first.
func liveDeployments(entries []*DeploymentEntry) []LiveDeployment {
	type key struct{ apply, dep string }
	live := map[key]*LiveDeployment{}
	var order []key
	for _, e := range entries {
		k := key{e.Apply, e.Deployment}
		switch e.Type {
		case DeployStarting, DeployStarted:
			l := live[k]
			if l == nil {
				l = &LiveDeployment{Apply: e.Apply, Deployment: e.Deployment, StartedAt: e.At}
				live[k] = l
				order = append(order, k)
			}
			if e.Executor != "" {
				l.Executor, l.Config = e.Executor, e.Config
			}
			if len(e.Server) > 0 {
				l.Server = e.Server
			}
			if e.PID != 0 {
				l.PID = e.PID
			}
		case DeployStopped:
			delete(live, k)
		}
	}
	out := []LiveDeployment{}
	for _, k := range order {
		if l := live[k]; l != nil {
			out = append(out, *l)
			delete(live, k)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt < out[j].StartedAt })
	return out
}

// LiveDeployments lists the deployments of state directory dir that no
// entry records as stopped, without locking it. While an apply holds the
// lock, its own deployments are among them.
func LiveDeployments(dir string) ([]LiveDeployment, error) {
	entries, err := readDeployments(dir)
	if err != nil {
		return nil, err
	}
	return liveDeployments(entries), nil
}

// LiveDeployments lists the deployments not recorded as stopped.
func (s *Store) LiveDeployments() ([]LiveDeployment, error) { return LiveDeployments(s.dir) }

// RecordDeployment appends e to the deployments journal and fsyncs it; At
// and PID are filled in.
func (s *Store) RecordDeployment(e DeploymentEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.lock.check(s.dir); err != nil {
		return err
	}
	e.At = time.Now().UTC().Format(time.RFC3339Nano)
	if e.PID == 0 {
		e.PID = os.Getpid()
	}
	line, err := encodeDeployment(&e)
	if err != nil {
		return err
	}
	if s.replica != nil {
		if err := s.replica.AppendDeployment(line); err != nil {
			return fmt.Errorf("store the deployments entry in the backend: %w", err)
		}
	}
	path := filepath.Join(s.dir, DeploymentsFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open the deployments journal: %w; make %s writable", err, s.dir)
	}
	// A crash mid-write may have left a line without its newline: end it,
	// so this entry is not glued to it (and skipped with it).
	if fi, serr := f.Stat(); serr == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if r, oerr := os.Open(path); oerr == nil {
			if _, rerr := r.ReadAt(last, fi.Size()-1); rerr == nil && last[0] != '\n' {
				line = append([]byte{'\n'}, line...)
			}
			r.Close()
		}
	}
	_, err = f.Write(line)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write the deployments journal %s: %w; free disk space or make the directory writable", path, err)
	}
	return nil
}
