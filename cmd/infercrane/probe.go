package main

import (
	"context"
	"fmt"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
)

// addProbeCommands registers the commands of this file (called by setupCommands).
func addProbeCommands() {
	register(&command{
		Name:     "probe",
		Synopsis: "Exit 0 when a URL answers 2xx (the modal executor's health check)",
		Run:      runProbe,
	})
}

func runProbe(env *cliEnv, args []string) int {
	fs := newFlags(env, "probe", usageDoc{
		Usage: "infercrane probe [flags] URL",
		About: "Exits 0 when URL answers 2xx within -timeout, 1 otherwise (the modal executor runs it inside\n" +
			"the sandbox as the server's health check).",
		Examples: []string{
			"infercrane probe http://127.0.0.1:8000/health",
			"infercrane probe -timeout 30s http://127.0.0.1:8000/v1/models",
		},
	})
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageError("give exactly one URL, got %d", len(pos))
	}
	if err := loadgen.Probe(context.Background(), pos[0], *timeout); err != nil {
		fmt.Fprintf(env.Stderr, "infercrane probe: %v\n", hinted(err))
		return 1
	}
	fmt.Fprintln(env.Stdout, "ok")
	return 0
}
