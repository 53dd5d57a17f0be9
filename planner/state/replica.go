package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Replica is where a state directory is kept when the spec names a backend;
// the local directory is then a cache that a pull rebuilds from it and
// that is never the source of truth. A Store with a replica writes every
// journal entry, deployments entry and file to it before it counts
// locally, so a run is durable in the replica before the next step, and a
// crash anywhere leaves a replica the next apply (on any machine) resumes.
type Replica interface {
	// AppendJournal stores journal entry seq (its encoded line). It fails
	// when another writer already stored a different entry under seq.
	AppendJournal(seq int64, line []byte) error
	// AppendDeployment stores one deployments-journal line.
	AppendDeployment(line []byte) error
	// PutFile stores the file at path as rel (slash-separated, relative to
	// the state directory).
	PutFile(rel, path string) error
	// Held reports an error when the replica's lock is no longer this
	// apply's (renewal failed, or someone forced it open).
	Held() error
	// Close releases the replica's lock.
	Close() error
}

// OpenReplicated is Open for a state directory that caches replica: every
// write goes to the replica first. The caller has already taken the
// replica's lock and pulled its state into dir.
func OpenReplicated(dir, command string, r Replica) (*Store, error) {
	s, err := Open(dir, command)
	if err != nil {
		return nil, err
	}
	s.replica = r
	return s, nil
}

// publish stores the file at rel in the replica, if there is one.
func (s *Store) publish(rel string) error {
	if s.replica == nil {
		return nil
	}
	if err := s.replica.PutFile(rel, filepath.Join(s.dir, filepath.FromSlash(rel))); err != nil {
		return fmt.Errorf("store %s in the backend: %w", rel, err)
	}
	return nil
}

// PublishReports stores every file of the reports directory in the
// replica (a no-op without one). Apply calls it after writing the reports.
func (s *Store) PublishReports() error {
	if s.replica == nil {
		return nil
	}
	root := filepath.Join(s.dir, ReportsDir)
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || filepath.Ext(p) == ".tmp" {
			return nil
		}
		rel, err := filepath.Rel(s.dir, p)
		if err != nil {
			return err
		}
		return s.publish(filepath.ToSlash(rel))
	})
}

// BackendFile is the file in a state directory that says it caches a
// backend (BackendRecord as JSON); commands given only the directory read
// it to find the backend.
const BackendFile = "backend.json"

// BackendRecord is what a cache directory records of its backend: where
// the state lives, never how to authenticate.
type BackendRecord struct {
	Type     string `json:"type"`
	Bucket   string `json:"bucket"`
	Prefix   string `json:"prefix"`
	Region   string `json:"region,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	// UsePathStyle addresses the bucket in the URL's path.
	UsePathStyle bool   `json:"use_path_style,omitempty"`
	Profile      string `json:"profile,omitempty"`
}

// ReadBackend returns the backend that state directory dir caches, or nil
// when it is a plain local state directory.
func ReadBackend(dir string) (*BackendRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, BackendFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r BackendRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, BackendFile), err)
	}
	if r.Type == "" || r.Bucket == "" {
		return nil, fmt.Errorf("%s names no backend", filepath.Join(dir, BackendFile))
	}
	return &r, nil
}

// WriteBackend records in dir that it caches backend r; nil removes the
// record (the directory is plain local state again).
func WriteBackend(dir string, r *BackendRecord) error {
	path := filepath.Join(dir, BackendFile)
	if r == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, _, err = WriteFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
	return err
}
