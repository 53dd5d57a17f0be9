//go:build unix

package local

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MarkEnv is the environment variable every local server is started with:
// its value is unique per deployment start, and every process of the
// server's tree inherits it, so the tree can be found again (by this apply
// or a later one) even where a wrapper command (`sh -c`, `bash -lc`,
// `conda run`) or a daemonising server left the process group.
const MarkEnv = "INFERCRANE_DEPLOYMENT_MARK"

// tree is what a local server's process tree is known by. Its handle form
// ("pgid:N;start:T;cgroup:DIR;mark:M") is the server's Handle, journaled
// before the server is waited for, so a later process can stop it.
type tree struct {
	pgid  int
	start uint64 // the leader's start time (clock ticks after boot), 0 unknown
	// cgroup is a cgroup v2 directory that holds the whole tree ("" when
	// the machine gives none: then the group and the mark find it).
	cgroup string
	mark   string
}

func (t tree) handle() string {
	h := "pgid:" + strconv.Itoa(t.pgid)
	if t.start != 0 {
		h += ";start:" + strconv.FormatUint(t.start, 10)
	}
	if t.cgroup != "" {
		h += ";cgroup:" + t.cgroup
	}
	if t.mark != "" {
		h += ";mark:" + t.mark
	}
	return h
}

// parseHandle reads a handle; ok is false when it is not a local one.
// "pgid:N" alone (older handles) is accepted.
func parseHandle(h string) (tree, bool) {
	var t tree
	for _, part := range strings.Split(h, ";") {
		k, v, _ := strings.Cut(part, ":")
		switch k {
		case "pgid":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 1 {
				return tree{}, false
			}
			t.pgid = n
		case "start":
			t.start, _ = strconv.ParseUint(v, 10, 64)
		case "cgroup":
			// Only a cgroup this executor makes: a journal edited to name
			// another would otherwise have it killed.
			if strings.HasPrefix(filepath.Base(v), "infercrane-") && !strings.Contains(v, "..") {
				t.cgroup = v
			}
		case "mark":
			t.mark = v
		}
	}
	return t, t.pgid > 1
}

// newMark is a fresh mark for deployment dep of apply.
func newMark(apply, dep string) string {
	var b [6]byte
	rand.Read(b[:])
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
				return r
			}
			return '-'
		}, s)
	}
	return fmt.Sprintf("%s.%s.%s", clean(apply), clean(dep), hex.EncodeToString(b[:]))
}

// live holds the trees this process started and has not yet stopped, so a
// forced exit can kill them (KillAll).
var live sync.Map // pgid -> tree

// startTree starts cmd as the leader of a new process group with mark in
// its environment, inside a new cgroup when the machine allows it.
func startTree(cmd *exec.Cmd, mark string) (tree, error) {
	cmd.Env = append(cmd.Env, MarkEnv+"="+mark)
	cmd.SysProcAttr = procAttrs()
	t := tree{mark: mark}
	cg, closeFD, ok := newCgroup(mark, cmd.SysProcAttr)
	err := cmd.Start()
	closeFD()
	if err != nil && ok {
		// The kernel refused the cgroup (permissions, a v1-only machine):
		// start without it.
		removeCgroup(cg)
		ok = false
		cmd.SysProcAttr = procAttrs()
		cmd.Process, cmd.ProcessState = nil, nil
		err = cmd.Start()
	}
	if err != nil {
		return tree{}, err
	}
	if ok {
		t.cgroup = cg
	}
	t.pgid = cmd.Process.Pid
	t.start = procStart(t.pgid)
	live.Store(t.pgid, t)
	return t, nil
}

// members lists the live (not zombie) processes of t: those in its cgroup,
// those in its process group that carry its mark (or are its leader, by
// start time), and any process anywhere that carries its mark.
func (t tree) members() []int {
	seen := map[int]bool{}
	var out []int
	add := func(pid int) {
		if pid > 1 && pid != os.Getpid() && !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	for _, pid := range cgroupProcs(t.cgroup) {
		if p, ok := readProc(pid); ok && !p.zombie {
			add(pid)
		}
	}
	for _, p := range allProcs() {
		if p.zombie {
			continue
		}
		switch {
		case t.mark != "" && p.hasMark(t.mark):
			add(p.pid)
		case p.pid == t.pgid && t.start != 0 && p.start == t.start:
			add(p.pid)
		case p.pgrp == t.pgid && t.mark == "" && t.start != 0 && p.start >= t.start && leaderIs(t):
			// An old handle without a mark: the group of a leader that is
			// verifiably still the one started.
			add(p.pid)
		}
	}
	return out
}

// leaderIs reports whether t's leader is alive and is the process started.
func leaderIs(t tree) bool {
	p, ok := readProc(t.pgid)
	return ok && !p.zombie && p.start == t.start
}

// signal sends sig to every member of t, and to its whole group when
// owned (this process started the leader and has not reaped it, so the
// group id cannot have been reused).
func (t tree) signal(sig syscall.Signal, owned bool) {
	if owned {
		_ = syscall.Kill(-t.pgid, sig)
	}
	if sig == syscall.SIGKILL && cgroupKill(t.cgroup) {
		// cgroup.kill reached every process of the cgroup at once.
	}
	for _, pid := range t.members() {
		_ = syscall.Kill(pid, sig)
	}
}

// alive reports whether any process of t is left (zombies hold nothing).
func (t tree) alive(owned bool) bool {
	if owned && groupAlive(t.pgid) {
		return true
	}
	return len(t.members()) > 0
}

// groupAlive reports whether any process of group pgid still exists, not
// counting zombies where /proc says which they are: a zombie another
// process has yet to reap (a subreaper's adopted child) holds nothing.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	procs := allProcs()
	if procs == nil {
		return true // no /proc: the signal's word
	}
	for _, p := range procs {
		if p.pgrp == pgid && !p.zombie {
			return true
		}
	}
	return false
}

// stopTree sends SIGTERM to the tree, waits up to grace for it to be
// gone, then SIGKILLs whatever is left and waits for it to vanish; then it
// removes the tree's cgroup. owned says this process is the leader's
// parent (something must then be waiting for the leader, cmd.Wait, so
// that the group does not stay a zombie); processes this process adopted
// as a subreaper are reaped here.
func stopTree(t tree, grace time.Duration, owned bool) error {
	defer live.Delete(t.pgid)
	defer reapAdopted(t)
	if !t.alive(owned) {
		removeCgroup(t.cgroup)
		return nil
	}
	t.signal(syscall.SIGTERM, owned)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		reapAdopted(t)
		if !t.alive(owned) {
			removeCgroup(t.cgroup)
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; i < 100; i++ {
		t.signal(syscall.SIGKILL, owned)
		reapAdopted(t)
		if !t.alive(owned) {
			removeCgroup(t.cgroup)
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("processes %v of the server's tree are still alive after SIGKILL", t.members())
}

// KillAll sends SIGKILL to every server tree this process started and has
// not stopped. It is for a forced exit (a third Ctrl-C).
func KillAll() {
	live.Range(func(k, v any) bool {
		v.(tree).signal(syscall.SIGKILL, true)
		live.Delete(k)
		return true
	})
}
