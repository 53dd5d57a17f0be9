//go:build unix

package plugins

import (
	"os/exec"
	"syscall"
)

// ownGroup makes the plugin process the leader of a new process group, so
// that it and everything it starts (a shell script's children) can be
// stopped together, and a terminal's Ctrl-C reaches the host, not it.
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// killGroup sends SIGKILL to the process group pgid (a plugin's, see
// ownGroup). Nothing happens for pgid <= 0 (no process was started) or a
// group that is gone; the kernel does not reuse a number that still names
// a group, so nothing else is hit.
func killGroup(pgid int) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}
