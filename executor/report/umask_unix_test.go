//go:build unix

package report

import "syscall"

// syscallUmask sets the process umask and returns the old one.
func syscallUmask(m int) int { return syscall.Umask(m) }
