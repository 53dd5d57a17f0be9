//go:build unix

package state

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// Lock is a held state lock: an flock(2) on the state directory itself
// (its open file descriptor), so the kernel releases it when its holder
// dies, however it dies, and no file a person can delete holds it. The lock
// file inside the directory only says who holds it; deleting it changes
// nothing about who may write the state.
type Lock struct {
	dir *os.File // the state directory, flocked
	ino fileID   // the directory's identity when it was locked
	// Stale is the previous holder's info when it died without releasing
	// the lock (its PID is no longer running), nil otherwise.
	Stale *LockInfo
}

// fileID identifies a file independently of its path.
type fileID struct{ dev, ino uint64 }

func statID(fi os.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}
	}
	return fileID{}
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
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open the state directory: %w; choose a readable directory with -state", err)
	}
	fi, err := d.Stat()
	if err != nil || !fi.IsDir() {
		d.Close()
		return nil, fmt.Errorf("state directory %s is not a directory; point -state at a directory", dir)
	}
	path := filepath.Join(dir, LockFile)
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		d.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Dir: dir, Holder: holderOf(dir, path)}
		}
		return nil, fmt.Errorf("lock the state directory %s: %w", dir, err)
	}
	l := &Lock{dir: d, ino: statID(fi)}
	if prev := readLockInfoPath(path); prev != nil && prev.PID != 0 {
		l.Stale = prev
	}
	host, _ := os.Hostname()
	info := LockInfo{PID: os.Getpid(), Host: host, StartedAt: time.Now().UTC().Format(time.RFC3339), Command: command}
	data, _ := json.Marshal(info)
	if _, _, err := writeFileSynced(path, func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	}); err != nil {
		l.Release()
		return nil, fmt.Errorf("write the state lock: %w; free disk space or choose another directory with -state", err)
	}
	return l, nil
}

// holderOf says who holds the lock of dir: the lock file's info when it
// names the process that holds the flock, else what the kernel says
// (/proc/locks), so a deleted lock file still names the holder.
func holderOf(dir, path string) LockInfo {
	info := readLockInfoPath(path)
	if pid := flockHolder(dir); pid > 0 && (info == nil || info.PID != pid) {
		host, _ := os.Hostname()
		return LockInfo{PID: pid, Host: host, StartedAt: "?"}
	}
	if info == nil {
		return LockInfo{Host: "?", StartedAt: "?"}
	}
	return *info
}

// Held reports whether a live process holds the lock of state directory
// dir, and which (0 when unknown). It never takes the lock, so it cannot
// make a starting apply fail.
func Held(dir string) (bool, int) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return false, 0
	}
	if pid, known := flockHolderID(statID(fi)); known {
		return pid > 0, pid
	}
	// No /proc/locks (not Linux): a shared try-lock, released at once.
	d, err := os.Open(dir)
	if err != nil {
		return false, 0
	}
	defer d.Close()
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		if info := readLockInfoPath(filepath.Join(dir, LockFile)); info != nil {
			return true, info.PID
		}
		return true, 0
	}
	syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
	return false, 0
}

// flockHolder is the PID holding an flock on dir, 0 when none or unknown.
func flockHolder(dir string) int {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0
	}
	pid, _ := flockHolderID(statID(fi))
	return pid
}

// flockHolderID reads /proc/locks for an FLOCK on the file id; known is
// false when /proc/locks cannot be read.
func flockHolderID(id fileID) (pid int, known bool) {
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[0] == "->" {
			continue
		}
		parts := strings.Split(fields[5], ":")
		if len(parts) != 3 {
			continue
		}
		ino, err := strconv.ParseUint(parts[2], 10, 64)
		if err != nil || ino != id.ino {
			continue
		}
		maj, err1 := strconv.ParseUint(parts[0], 16, 32)
		mnr, err2 := strconv.ParseUint(parts[1], 16, 32)
		if err1 != nil || err2 != nil || mkdev(maj, mnr) != id.dev {
			continue
		}
		p, _ := strconv.Atoi(fields[4])
		return p, true
	}
	return 0, true
}

// mkdev is Linux's encoding of a device number (as stat's st_dev holds it).
func mkdev(major, minor uint64) uint64 {
	return (minor & 0xff) | ((major & 0xfff) << 8) | ((minor &^ 0xff) << 12) | ((major &^ 0xfff) << 32)
}

func readLockInfoPath(path string) *LockInfo {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
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

// check fails when the locked directory is no longer at path: it was
// removed or replaced while locked, so writes would go where no reader
// looks and another apply could lock the new directory.
func (l *Lock) check(path string) error {
	fi, err := os.Stat(path)
	if err != nil || statID(fi) != l.ino {
		return fmt.Errorf("the state directory %s was removed or replaced during the apply; nothing more is written to it: stop, restore it (or start over) and re-run apply", path)
	}
	return nil
}

// Release empties the lock file and releases the lock. The lock file is
// kept, empty, so that the next holder does not take it for a stale one.
func (l *Lock) Release() error {
	if l == nil || l.dir == nil {
		return nil
	}
	var terr error
	if l.check(l.dir.Name()) == nil {
		// (A replaced directory's lock file is another holder's.)
		terr = os.Truncate(filepath.Join(l.dir.Name(), LockFile), 0)
		if errors.Is(terr, os.ErrNotExist) {
			terr = nil
		}
	}
	uerr := syscall.Flock(int(l.dir.Fd()), syscall.LOCK_UN)
	cerr := l.dir.Close()
	l.dir = nil
	return errors.Join(terr, uerr, cerr)
}
