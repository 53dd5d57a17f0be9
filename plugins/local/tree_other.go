//go:build unix && !linux

package local

import "syscall"

// Without /proc and cgroups (not Linux) a server tree is its process
// group: wrapper commands whose server leaves the group are not found.

type osProc struct {
	pid, ppid, pgrp int
	start           uint64
	zombie          bool
}

func (p osProc) hasMark(string) bool { return false }

func readProc(pid int) (osProc, bool) {
	if syscall.Kill(pid, 0) != nil {
		return osProc{}, false
	}
	return osProc{pid: pid, pgrp: pid}, true
}

func procStart(int) uint64 { return 0 }
func allProcs() []osProc   { return nil }

// Subreap is a no-op where the kernel has no child subreaper.
func Subreap() error { return nil }

func reapAdopted(tree) {}

func newCgroup(string, *syscall.SysProcAttr) (string, func(), bool) { return "", func() {}, false }
func cgroupProcs(string) []int                                      { return nil }
func cgroupKill(string) bool                                        { return false }
func removeCgroup(string)                                           {}
