//go:build !unix

// InferCrane's state lock is an flock(2) on the state directory, which the
// kernel releases however its holder dies, and the local executor manages
// its server as a Unix process group; neither has a port to systems
// without them. This declaration makes a build there say what to do
// beside the "undefined" errors.

package state

var _ int = "InferCrane builds for Unix systems (Linux, macOS, the BSDs); on Windows, build and run it in WSL2"
