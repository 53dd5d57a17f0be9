// Package plugins connects executors to the runner: the go-plugin gRPC
// protocol (see executorpb), the host side that launches plugin processes,
// Serve for plugin binaries (and `infercrane executor serve NAME`), and the
// Registry of built-in executors (sim, endpoint, local, modal) and external
// `infercrane-executor-NAME` binaries.
package plugins
