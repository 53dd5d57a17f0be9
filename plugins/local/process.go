//go:build unix

package local

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// live holds the process groups this process started and has not yet
// stopped, so a forced exit can kill them (KillAll).
var live sync.Map // pgid -> struct{}

// setProcAttrs puts the server in its own process group (so a terminal's
// Ctrl-C does not reach it and the whole group can be signalled) and, on
// Linux, kills it if this process dies.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = procAttrs()
}

// groupAlive reports whether any process of group pgid still exists.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// stopGroup sends SIGTERM to the group, waits up to grace for it to be
// gone, then sends SIGKILL to whatever is left and waits for it to vanish.
// When this process is the leader's parent, something must be waiting for
// the leader (cmd.Wait) so that it is reaped and not left a zombie.
func stopGroup(pgid int, grace time.Duration) error {
	defer live.Delete(pgid)
	if !groupAlive(pgid) {
		return nil
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !groupAlive(pgid) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for i := 0; i < 100 && groupAlive(pgid); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if groupAlive(pgid) {
		return errors.New("process group still alive after SIGKILL")
	}
	return nil
}

// KillAll sends SIGKILL to every server process group this process started
// and has not stopped. It is for a forced exit (a third Ctrl-C).
func KillAll() {
	live.Range(func(k, _ any) bool {
		_ = syscall.Kill(-k.(int), syscall.SIGKILL)
		live.Delete(k)
		return true
	})
}
