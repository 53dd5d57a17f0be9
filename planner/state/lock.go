//go:build unix

package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// LockInfo is the content of the lock file: who holds the state.
type LockInfo struct {
	PID       int    `json:"pid"`
	Host      string `json:"host"`
	StartedAt string `json:"started_at"`
	Command   string `json:"command,omitempty"`
}

// Lock is a held state lock. It is an flock(2) on the lock file, so the
// kernel releases it when its holder dies, however it dies.
type Lock struct {
	f *os.File
	// Stale is the previous holder's info when it died without releasing
	// the lock (its PID is no longer running), nil otherwise.
	Stale *LockInfo
}

// LockedError is returned when another live process holds the state.
type LockedError struct {
	Dir    string
	Holder LockInfo
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("state directory %s is locked by PID %d on %s (started %s): wait for that apply to finish or stop it; a second apply on the same state is refused",
		e.Dir, e.Holder.PID, e.Holder.Host, e.Holder.StartedAt)
}

// AcquireLock takes the lock of state directory dir without waiting. It
// fails fast with a *LockedError naming the holder when another process
// holds it; a lock left by a dead process is taken over (Lock.Stale).
func AcquireLock(dir, command string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the state directory: %w; choose a writable directory with -state", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the state lock: %w; choose a writable directory with -state", err)
	}
	prev := readLockInfo(f)
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if prev == nil {
				// The holder has not written its info yet.
				time.Sleep(50 * time.Millisecond)
				if g, err := os.Open(path); err == nil {
					prev = readLockInfo(g)
					g.Close()
				}
			}
			if prev == nil {
				prev = &LockInfo{Host: "?", StartedAt: "?"}
			}
			return nil, &LockedError{Dir: dir, Holder: *prev}
		}
		return nil, fmt.Errorf("lock the state directory %s: %w", dir, err)
	}
	// We hold the lock: re-read what a previous holder left (it may have
	// changed between the read and the flock).
	l := &Lock{f: f}
	if prev = readLockInfo(f); prev != nil && prev.PID != 0 {
		l.Stale = prev
	}
	host, _ := os.Hostname()
	info := LockInfo{PID: os.Getpid(), Host: host, StartedAt: time.Now().UTC().Format(time.RFC3339), Command: command}
	data, _ := json.Marshal(info)
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt(append(data, '\n'), 0)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			l.Release()
			return nil, fmt.Errorf("write the state lock: %w; free disk space or choose another directory with -state", err)
		}
	} else {
		l.Release()
		return nil, fmt.Errorf("write the state lock: %w", err)
	}
	return l, nil
}

func readLockInfo(f *os.File) *LockInfo {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil || len(data) == 0 {
		return nil
	}
	var li LockInfo
	if json.Unmarshal(data, &li) != nil {
		return nil
	}
	return &li
}

// Release empties the lock file and releases the lock. The file itself is
// kept: removing it would let two later applies lock different inodes.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	terr := l.f.Truncate(0)
	uerr := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	cerr := l.f.Close()
	l.f = nil
	return errors.Join(terr, uerr, cerr)
}
