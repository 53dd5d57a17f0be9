package local

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// osProc is one /proc entry.
type osProc struct {
	pid, ppid, pgrp int
	start           uint64
	zombie          bool
}

// hasMark reports whether the process was started with MarkEnv=mark.
func (p osProc) hasMark(mark string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/environ")
	if err != nil {
		return false
	}
	return bytes.Contains(append([]byte{0}, env...), []byte("\x00"+MarkEnv+"="+mark+"\x00"))
}

// readProc reads /proc/PID/stat.
func readProc(pid int) (osProc, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return osProc{}, false
	}
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime ...
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return osProc{}, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return osProc{}, false
	}
	p := osProc{pid: pid, zombie: f[0] == "Z" || f[0] == "X"}
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgrp, _ = strconv.Atoi(f[2])
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	return p, true
}

// procStart is the start time of pid (0 when it is gone).
func procStart(pid int) uint64 {
	p, _ := readProc(pid)
	return p.start
}

// allProcs lists every process.
func allProcs() []osProc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]osProc, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// Subreap makes this process a child subreaper (PR_SET_CHILD_SUBREAPER):
// the servers' orphaned descendants (a wrapper command's server once the
// wrapper exits, a daemon that double-forks) are re-parented to it instead
// of init while it runs, so they stay in its tree, and stopTree reaps
// them. apply calls it once at start.
func Subreap() error {
	const prSetChildSubreaper = 36
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	if errno != 0 {
		return errno
	}
	subreaping.Do(func() { go reapAdoptedForever() })
	return nil
}

var subreaping sync.Once

// reapAdoptedForever reaps, twice a second, the zombies this subreaper
// adopted, whoever started them (a plugin process's server, for one). An
// adopted zombie is a child that is neither in this process's group (the
// plugin processes and helpers it starts itself) nor a group leader (the
// servers it starts itself, each leading its own group and reaped by
// cmd.Wait), so os/exec's own waits are never stolen.
func reapAdoptedForever() {
	self, group := os.Getpid(), syscall.Getpgrp()
	for {
		for _, p := range allProcs() {
			if p.ppid == self && p.zombie && p.pgrp != group && p.pid != p.pgrp {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// reapAdopted waits for (reaps) the zombies among t's processes that are
// this process's children only by adoption (as a subreaper): the leader
// of a tree started here is left to cmd.Wait.
func reapAdopted(t tree) {
	self := os.Getpid()
	leader, owned := live.Load(t.pgid)
	for _, p := range allProcs() {
		if p.ppid != self || !p.zombie {
			continue
		}
		if owned && leader.(tree).pgid == p.pid {
			continue
		}
		// A zombie's environ is gone: adopted zombies of t are known by
		// group or cgroup.
		if p.pgrp != t.pgid && !inCgroup(t.cgroup, p.pid) {
			continue
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
	}
}

// cgroup2Root is where the cgroup v2 hierarchy is mounted and this
// process's cgroup in it ("" when there is none).
var cgroup2Root = sync.OnceValue(func() string {
	mounts, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer mounts.Close()
	mnt := ""
	sc := bufio.NewScanner(mounts)
	for sc.Scan() {
		// id parent maj:min root mountpoint options ... - fstype source opts
		f := strings.Fields(sc.Text())
		for i, x := range f {
			if x == "-" && i+1 < len(f) && f[i+1] == "cgroup2" && len(f) > 4 {
				mnt = f[4]
			}
		}
		if mnt != "" {
			break
		}
	}
	if mnt == "" {
		return ""
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(mnt, filepath.FromSlash(rest))
		}
	}
	return ""
})

// newCgroup makes a cgroup v2 directory for a server tree next to this
// process's own (as its child) and sets attrs to start the leader in it
// (clone3 CLONE_INTO_CGROUP), so that every descendant is in it from the
// first instruction and none can leave it without privileges. ok is false
// when the machine gives no writable cgroup v2; closeFD must be called
// once the process started.
func newCgroup(mark string, attrs *syscall.SysProcAttr) (dir string, closeFD func(), ok bool) {
	root := cgroup2Root()
	if root == "" || os.Getenv("INFERCRANE_NO_CGROUP") != "" {
		return "", func() {}, false
	}
	dir = filepath.Join(root, "infercrane-"+mark)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", func() {}, false
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return "", func() {}, false
	}
	attrs.UseCgroupFD, attrs.CgroupFD = true, fd
	return dir, func() { syscall.Close(fd) }, true
}

// cgroupProcs lists the processes in cgroup dir and its descendants.
func cgroupProcs(dir string) []int {
	if dir == "" {
		return nil
	}
	var out []int
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
		return nil
	})
	return out
}

func inCgroup(dir string, pid int) bool {
	for _, p := range cgroupProcs(dir) {
		if p == pid {
			return true
		}
	}
	return false
}

// cgroupKill SIGKILLs every process of cgroup dir at once (cgroup.kill,
// Linux 5.14+); false when it could not.
func cgroupKill(dir string) bool {
	if dir == "" {
		return false
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) == nil
}

// removeCgroup removes an empty cgroup directory (and its children).
func removeCgroup(dir string) {
	if dir == "" || !strings.Contains(filepath.Base(dir), "infercrane-") {
		return
	}
	var dirs []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
			return
		}
	}
}
