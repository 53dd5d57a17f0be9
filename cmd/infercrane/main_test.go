package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/plugins"
	"github.com/infercrane/infercrane/plugins/local"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"infercrane": func() { os.Exit(run(osEnv(testWiring(os.Getenv)), os.Args[1:])) },
		// The modal executor copies this test binary into the stand-in's
		// sandboxes as infercrane-loadgen (no real one is next to it); it
		// answers that binary's command lines (bench --config, probe) as
		// infercrane does.
		"infercrane-loadgen": func() { os.Exit(run(osEnv(testWiring(os.Getenv)), os.Args[1:])) },
		// An external executor plugin built on the local executor, as a
		// team wrapping its own launcher would write one; a script names it
		// infercrane-executor-TYPE in its INFERCRANE_PLUGIN_DIR.
		"localplugin": func() {
			plugins.Serve(func(_ string, cfg map[string]any) (executor.Executor, error) { return local.New(cfg) }, local.Schema())
		},
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
			"waiturl":      waitURL,
			"echoserver":   echoServer,
			"s3serve":      s3Serve,
			"s3requests":   s3Requests,
			"exitcode":     exitCode,
			"bashcomplete": bashComplete,
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

// exitCode is the testscript command `exitcode N PROG ARGS...`: it runs
// PROG like exec (stdout and stderr can be checked after it) and fails
// unless PROG exits with status N.
func exitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %q is not a number", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// TestEveryCommandHasHelp: every registered command answers -h with exit
// status 0 and a help text on stdout with its synopsis, its flags and at
// least two examples, and 'infercrane help COMMAND' prints the same.
func TestEveryCommandHasHelp(t *testing.T) {
	setupCommands()
	if len(commands) < 20 {
		t.Fatalf("only %d commands are registered; the test would check nothing", len(commands))
	}
	for name, c := range commands {
		if c.Hidden {
			continue
		}
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			if c.Synopsis == "" {
				t.Errorf("%s has no synopsis for 'infercrane help'", name)
			}
			var out, errOut bytes.Buffer
			env := &cliEnv{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
			if code := c.Run(env, []string{"-h"}); code != 0 {
				t.Errorf("%s -h exited %d, want 0; stderr:\n%s", name, code, errOut.String())
			}
			h := out.String()
			if !strings.HasPrefix(h, "Usage: infercrane "+name) {
				t.Errorf("%s -h does not start with its synopsis:\n%s", name, h)
			}
			if !strings.Contains(h, "\nFlags:\n") || !strings.Contains(h, "-no-color") {
				t.Errorf("%s -h lists no flags:\n%s", name, h)
			}
			_, ex, _ := strings.Cut(h, "\nExamples:\n")
			if n := strings.Count(ex, "\n  "); n < 1 || strings.Count(ex, "infercrane") < 2 {
				t.Errorf("%s -h has fewer than two examples:\n%s", name, h)
			}
			var viaHelp bytes.Buffer
			env.Stdout = &viaHelp
			if code := runHelp(env, strings.Fields(name)); code != 0 || viaHelp.String() != h {
				t.Errorf("'infercrane help %s' (exit %d) differs from '%s -h'", name, code, name)
			}
		})
	}
}

// echoServer is the testscript command `echoserver TARGET VAR`: it starts
// an HTTP server in the test process that forwards to TARGET (a simulated
// engine) but answers every third chat completion with an HTTP 500 whose
// body echoes the request's Authorization header (as sent, JSON-escaped
// with '\/' and, for Basic, decoded), as a careless server would; VAR is set to its host:port. It stops when the script ends.
func echoServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: echoserver TARGET VAR")
	}
	target, err := url.Parse(args[0])
	if err != nil {
		ts.Fatalf("%v", err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") && n.Add(1)%3 == 0 {
			// The header as sent, JSON-escaped by an encoder that writes
			// '/' as '\/', and the Basic credentials decoded.
			auth := r.Header.Get("Authorization")
			user, pass, _ := r.BasicAuth()
			http.Error(w, `{"error": "upstream rejected credentials `+auth+`", "detail": "`+strings.ReplaceAll(auth, "/", `\/`)+`", "basic": "`+user+":"+pass+`"}`, http.StatusInternalServerError)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[1], strings.TrimPrefix(srv.URL, "http://"))
}

// s3Serve is the testscript command `s3serve FILE BUCKET/KEY VAR`: it starts
// an S3 protocol server (gofakes3, in the test process) holding FILE as
// s3://BUCKET/KEY and sets VAR to its URL. It stops when the script ends.
func s3Serve(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: s3serve FILE BUCKET/KEY VAR")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	if err != nil {
		ts.Fatalf("%v", err)
	}
	bucket, key, ok := strings.Cut(args[1], "/")
	if !ok {
		ts.Fatalf("s3serve: %q is not BUCKET/KEY", args[1])
	}
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		ts.Fatalf("%v", err)
	}
	if _, err := backend.PutObject(bucket, key, map[string]string{}, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		ts.Fatalf("%v", err)
	}
	n := new(atomic.Int64)
	fake := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		fake.ServeHTTP(w, r)
	}))
	s3Counts.Store(srv.URL, n)
	ts.Defer(func() { srv.Close(); s3Counts.Delete(srv.URL) })
	ts.Setenv(args[2], srv.URL)
}

// s3Counts counts the requests each s3serve server received, by URL.
var s3Counts sync.Map

// s3Requests is the testscript command `s3requests URL N`: it fails unless
// the s3serve server at URL has received exactly N requests (with !: unless
// it has received some other number).
func s3Requests(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: s3requests URL N")
	}
	c, ok := s3Counts.Load(args[0])
	if !ok {
		ts.Fatalf("s3requests: no s3serve server at %s", args[0])
	}
	want, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil {
		ts.Fatalf("s3requests: %v", err)
	}
	got := c.(*atomic.Int64).Load()
	if (got == want) == neg {
		ts.Fatalf("s3requests: the server at %s received %d requests (want %s%d)", args[0], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
	ts.Logf("the server at %s received %d requests", args[0], got)
}
