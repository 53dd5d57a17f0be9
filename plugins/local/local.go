// Package local is the built-in "local" executor: each deployment is a
// server process on this machine (`vllm serve ...` by default, or the
// spec's command), in its own process group, with its log in the state
// directory. Teardown stops the whole group (SIGTERM, then SIGKILL).
package local

import (
	"github.com/infercrane/infercrane/executor/redact"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/lang"
)

// Type is the executor type name.
const Type = "local"

// Capabilities are what this executor does, declared where it registers
// (its Schema): see lang.Capabilities.
var Capabilities = lang.Capabilities{Tokenizes: true, OwnServerSetting: "command"}

// Schema describes the local executor block; its defaults are the only
// ones the local executor has (the planner applies them).
func Schema() executor.Schema {
	return executor.Schema{Attributes: []executor.Attribute{
		{Name: "command", Type: executor.AttrStringList, Doc: "server command instead of `vllm serve MODEL ...`; placeholders: " + placeholderDoc},
		{Name: "host", Type: executor.AttrString, Default: "127.0.0.1", Doc: "address the server listens on"},
		{Name: "port", Type: executor.AttrNumber, Whole: true, Min: executor.Bound(1), Max: executor.Bound(65535), Doc: "port for the server, 1 to 65535 (unset: a free port at deploy)"},
		{Name: "health_timeout", Type: executor.AttrDuration, Min: executor.Seconds(10 * time.Millisecond), Max: executor.Seconds(24 * time.Hour), Default: "20m", Doc: "how long to wait for GET /health to answer 200"},
		{Name: "stop_timeout", Type: executor.AttrDuration, Min: executor.Seconds(0), Max: executor.Seconds(time.Hour), Default: "30s", Doc: "how long SIGTERM may take before SIGKILL"},
		{Name: "env", Type: executor.AttrStringMap, Doc: "extra environment variables for the server"},
		{Name: "served_model_name", Type: executor.AttrString, Doc: "model name to request (unset: the lane's model id)"},
	}, Capabilities: Capabilities}
}

// Settings are a lane's resolved local executor settings, as the plan
// carries them.
type Settings struct {
	Command         []string          `json:"command"`
	Host            string            `json:"host"`
	Port            int               `json:"port"`
	HealthTimeout   time.Duration     `json:"health_timeout"`
	StopTimeout     time.Duration     `json:"stop_timeout"`
	Env             map[string]string `json:"env"`
	ServedModelName string            `json:"served_model_name"`
}

// Executor starts server processes on this machine.
type Executor struct {
	settings Settings

	mu    sync.Mutex
	procs map[int]*proc // pgid -> process

	// pickPort picks a free port on a host for a server without a port
	// setting (freePort; a test hands out a taken one).
	pickPort func(host string) (int, error)
}

// Settings returns the settings the executor runs with.
func (x *Executor) Settings() Settings { return x.settings }

// proc is a started server.
type proc struct {
	cmd    *exec.Cmd
	pgid   int
	tree   tree
	log    string
	exited chan struct{} // closed once the leader is reaped
	err    error         // the leader's exit status, after exited
	logF   *os.File
}

// New makes a local executor from a lane's resolved executor settings.
func New(settings map[string]any) (executor.Executor, error) {
	x := &Executor{procs: map[int]*proc{}, pickPort: freePort}
	if err := executor.DecodeSettings(Type, Schema(), settings, &x.settings); err != nil {
		return nil, err
	}
	if _, ok := settings["command"]; ok && len(x.settings.Command) == 0 {
		return nil, &executor.AttrError{Name: "command", Err: errors.New(`executor "local": command must name a program, e.g. ["vllm", "serve", "{model}", "--port", "{port}"]`)}
	}
	if _, err := expand(x.settings.Command, executor.Deployment{}, x.settings.Host, 1); err != nil {
		return nil, &executor.AttrError{Name: "command", Err: err}
	}
	return x, nil
}

func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", host, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// portTries bounds how often Deploy picks another port for a server that
// found the port it was given taken.
const portTries = 3

// portTaken reports whether something else now listens on host:port (or
// holds it otherwise): a bind fails with "address in use".
func portTaken(host string, port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return errors.Is(err, syscall.EADDRINUSE)
	}
	ln.Close()
	return false
}

// Deploy starts the server and waits until GET /health answers 200. On any
// failure (timeout, early exit, cancellation) the process group is stopped
// before Deploy returns.
//
// Without a port setting the port is one the kernel picked free and
// released for the server to take, and something else (any process's
// listener or outgoing connection) may take it first. A server that then
// exits before it became healthy while its port is taken by another is
// started again on a newly picked port, up to portTries times; an exit
// for any other reason, or on the configured port, is the error.
func (x *Executor) Deploy(ctx context.Context, d executor.Deployment) (*executor.Server, error) {
	for try := 1; ; try++ {
		port := x.settings.Port
		if port == 0 {
			var err error
			if port, err = x.pickPort(x.settings.Host); err != nil {
				return nil, err
			}
		}
		s, err := x.deployOn(ctx, d, port)
		var early *earlyExitError
		if err == nil || x.settings.Port != 0 || try == portTries || !errors.As(err, &early) || !portTaken(x.settings.Host, port) {
			return s, err
		}
		if f, ferr := os.OpenFile(early.log, os.O_WRONLY|os.O_APPEND, 0o644); ferr == nil {
			fmt.Fprintf(f, "# %s infercrane: port %d was taken by another process before the server bound it; starting it again on another port\n", time.Now().UTC().Format(time.RFC3339), port)
			f.Close()
		}
	}
}

// earlyExitError is a server that exited before it became healthy; log
// is its log file.
type earlyExitError struct{ msg, log string }

func (e *earlyExitError) Error() string { return e.msg }

// deployOn starts the server on port and waits until it is healthy.
func (x *Executor) deployOn(ctx context.Context, d executor.Deployment, port int) (*executor.Server, error) {
	argv := vllmCommand(d, x.settings.Host, port)
	if len(x.settings.Command) > 0 {
		var err error
		if argv, err = expand(x.settings.Command, d, x.settings.Host, port); err != nil {
			return nil, err
		}
	}
	logDir := d.LogDir
	if logDir == "" {
		logDir = os.TempDir()
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, "server-"+d.ID+".log")
	logF, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the server log: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	var out io.Writer = logF
	var redacting io.WriteCloser
	if len(d.Redact) > 0 {
		// The server may print its arguments and environment: its output
		// reaches the log through a writer that removes the secrets.
		redacting = redact.New(d.Redact...).LineWriter(logF)
		out = redacting
		cmd.WaitDelay = 5 * time.Second
	}
	fmt.Fprintf(out, "# %s infercrane: starting %s\n", time.Now().UTC().Format(time.RFC3339), strings.Join(argv, " "))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = os.Environ()
	for k, v := range x.settings.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	t, err := startTree(cmd, newMark(d.ApplyID, d.ID))
	if err != nil {
		logF.Close()
		return nil, fmt.Errorf("start the server %q: %w; install it or set command in the executor block", argv[0], err)
	}
	if t.cgroup != "" {
		fmt.Fprintf(logF, "# %s infercrane: server tree in cgroup %s, process group %d\n", time.Now().UTC().Format(time.RFC3339), t.cgroup, t.pgid)
	} else {
		fmt.Fprintf(logF, "# %s infercrane: server tree in process group %d, marked %s=%s (no writable cgroup v2 here)\n", time.Now().UTC().Format(time.RFC3339), t.pgid, MarkEnv, t.mark)
	}
	p := &proc{cmd: cmd, pgid: t.pgid, tree: t, log: logPath, exited: make(chan struct{}), logF: logF}
	go func() {
		p.err = cmd.Wait()
		if redacting != nil {
			redacting.Close()
		}
		close(p.exited)
	}()
	x.mu.Lock()
	x.procs[p.pgid] = p
	x.mu.Unlock()

	base := "http://" + net.JoinHostPort(x.settings.Host, strconv.Itoa(port))
	executor.ReportStarted(ctx, &executor.Server{DeploymentID: d.ID, BaseURL: base, Handle: t.handle(), Info: map[string]string{"log": logPath}})
	if err := x.waitHealthy(ctx, p, base); err != nil {
		x.stop(p)
		return nil, err
	}
	model := x.settings.ServedModelName
	if model == "" {
		model = d.ModelID
	}
	info := map[string]string{"runtime": argv[0], "log": logPath}
	if v := serverVersion(ctx, base, argv[0]); v != "" {
		info["runtime_version"] = v
	}
	return &executor.Server{DeploymentID: d.ID, BaseURL: base, Model: model, Handle: t.handle(), Info: info}, nil
}

// waitHealthy polls /health until it answers 200, the process exits, the
// timeout passes or ctx ends.
func (x *Executor) waitHealthy(ctx context.Context, p *proc, base string) error {
	deadline := time.NewTimer(x.settings.HealthTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
			return &earlyExitError{msg: fmt.Sprintf("the server exited before becoming healthy (%v); see its log %s:\n%s", p.err, p.log, tail(p.log, 10)), log: p.log}
		case <-deadline.C:
			return fmt.Errorf("the server did not answer GET %s/health with 200 within %s; see its log %s, or raise health_timeout:\n%s", base, x.settings.HealthTimeout, p.log, tail(p.log, 10))
		case <-tick.C:
		}
	}
}

// serverVersion asks GET /version, then `vllm --version` for vllm.
func serverVersion(ctx context.Context, base, program string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/version", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		defer resp.Body.Close()
		var v struct {
			Version string `json:"version"`
		}
		if resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&v) == nil && v.Version != "" {
			return v.Version
		}
	}
	if filepath.Base(program) == "vllm" {
		if out, err := exec.CommandContext(ctx, program, "--version").Output(); err == nil {
			return strings.TrimSpace(string(out))
		}
	}
	return ""
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + string(bytes.Join(lines, []byte("\n  ")))
}

func (x *Executor) lookup(s *executor.Server) (*proc, tree) {
	t, ok := parseHandle(s.Handle)
	if !ok {
		return nil, tree{}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.procs[t.pgid], t
}

// Run drives one run with the built-in load generator; if the server
// process exits during the run, the run is cut short with an error naming
// the exit and the log.
func (x *Executor) Run(ctx context.Context, s *executor.Server, r executor.RunSpec) (*executor.RunResult, error) {
	p, _ := x.lookup(s)
	if p == nil {
		return nil, fmt.Errorf("server %s is not running (handle %q)", s.BaseURL, s.Handle)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-p.exited:
			cancel(fmt.Errorf("the server process exited during the run (%v); see its log %s", p.err, p.log))
		case <-ctx.Done():
		}
	}()
	res, err := executor.RunLoad(ctx, s, r, "")
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return nil, cause
	}
	if err != nil {
		return nil, err
	}
	// A crash can end the run (its requests fail) before the exit is seen:
	// a run counts only if the server is still healthy after it.
	if herr := healthy(ctx, s.BaseURL); herr != nil {
		select {
		case <-p.exited:
		case <-time.After(2 * time.Second):
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("the server process exited during the run (%v); see its log %s:\n%s", p.err, p.log, tail(p.log, 10))
		default:
			return nil, fmt.Errorf("the server stopped answering GET /health during the run (%v); see its log %s", herr, p.log)
		}
	}
	return res, nil
}

// healthy asks GET /health once.
func healthy(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// Teardown stops the server's whole process tree: SIGTERM, then SIGKILL
// after stop_timeout, to its cgroup (when the machine gave one), its
// process group and every process carrying its mark. It also works from
// another process than the one that started the server (a later apply
// reaping what a killed one left): the handle names the cgroup, the group,
// the leader's start time (so a reused PID is never signalled) and the
// mark. Stopping a stopped server is a no-op.
func (x *Executor) Teardown(ctx context.Context, s *executor.Server) error {
	p, t := x.lookup(s)
	if p != nil {
		return x.stop(p)
	}
	if t.pgid > 0 {
		if err := stopTree(t, x.settings.StopTimeout, false); err != nil {
			return fmt.Errorf("stop server process group %d: %w", t.pgid, err)
		}
	}
	return nil
}

func (x *Executor) stop(p *proc) error {
	err := stopTree(p.tree, x.settings.StopTimeout, true)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
	}
	x.mu.Lock()
	delete(x.procs, p.pgid)
	x.mu.Unlock()
	fmt.Fprintf(p.logF, "# %s infercrane: server stopped\n", time.Now().UTC().Format(time.RFC3339))
	p.logF.Close()
	if err != nil {
		return fmt.Errorf("stop server process group %d: %w", p.pgid, err)
	}
	return nil
}

// Schema implements executor.Describer.
func (x *Executor) Schema() executor.Schema { return Schema() }

// Validate checks an executor block's attributes as New reads them,
// starting nothing.
func Validate(cfg map[string]any) error {
	_, err := New(cfg)
	return err
}
