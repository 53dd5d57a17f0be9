package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"infercrane": func() { os.Exit(run(os.Args[1:])) },
	})
}

// TestScripts runs the CLI scenarios in testdata/script/*.txtar.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "../../testdata/script",
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("INFERCRANE_TEST", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waiturl": waitURL,
		},
	})
}

var urlInFile = regexp.MustCompile(`http://[0-9.]+:[0-9]+`)

// waitURL is the testscript command `waiturl FILE VAR`: it waits up to 30 s
// for a background server to write its URL (e.g. `listening on
// http://127.0.0.1:PORT` from `sim serve --port 0`) into FILE and sets VAR
// to it, so scripts never hard-code ports.
func waitURL(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waiturl FILE VAR")
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			if u := urlInFile.Find(b); u != nil {
				ts.Setenv(args[1], string(u))
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("no URL appeared in %s within 30s", filepath.Base(path))
}
