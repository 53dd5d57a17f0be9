package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/infercrane/infercrane/plugins/modal"
)

func init() {
	register(&command{
		Name:     "probe",
		Synopsis: "Exit 0 when a URL answers 2xx (the modal executor's health check)",
		Run:      runProbe,
	})
}

func runProbe(env *cliEnv, args []string) int {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "Usage: infercrane probe [-timeout D] URL")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return flagErrorCode(err, 2)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	if err := modal.Probe(context.Background(), fs.Arg(0), *timeout); err != nil {
		fmt.Fprintf(env.Stderr, "infercrane probe: %v\n", err)
		return 1
	}
	fmt.Fprintln(env.Stdout, "ok")
	return 0
}
