//go:build !unix

package plugins

import "os/exec"

// ownGroup does nothing where there are no process groups.
func ownGroup(*exec.Cmd) {}

// killGroup does nothing where there are no process groups: go-plugin
// kills the plugin process itself.
func killGroup(int) {}
