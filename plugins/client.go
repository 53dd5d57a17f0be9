package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/plugins/executorpb"
)

// Client is an executor running in a plugin process. It implements
// executor.Executor, executor.Describer (after Launch) and io.Closer.
type Client struct {
	// Name is the executor type, Path the plugin binary.
	Name string
	Path string

	newCmd       func() *exec.Cmd
	typ          string
	cfg          []byte
	logOut       io.Writer
	schema       executor.Schema
	startTimeout time.Duration

	mu   sync.Mutex
	pc   *plugin.Client
	rpc  executorpb.ExecutorClient
	pgid int // the plugin process's group (its PID), see ownGroup
}

// DefaultStartTimeout is how long a plugin process has to answer go-plugin's
// handshake when Registry.StartTimeout is not set.
const DefaultStartTimeout = 30 * time.Second

// killWait is how long stopping a plugin waits for go-plugin's Kill (which
// itself waits up to 2 s for a graceful exit) before it kills the plugin's
// process group, and then again for the pipes to close.
const killWait = 3 * time.Second

// Launch starts the plugin process newCmd makes, checks the handshake,
// fetches its schema and configures an executor of type typ from cfg.
// Plugin logs (hclog) go to logOut (nil: discarded).
// The handshake must come within DefaultStartTimeout (and before ctx
// ends); otherwise the plugin process and every process in its group are
// killed and the error names the binary.
func Launch(ctx context.Context, name string, newCmd func() *exec.Cmd, typ string, cfg map[string]any, logOut io.Writer) (*Client, error) {
	return launchWith(ctx, name, newCmd, typ, cfg, logOut, 0)
}

// launchWith is Launch with a start timeout (0: DefaultStartTimeout).
func launchWith(ctx context.Context, name string, newCmd func() *exec.Cmd, typ string, cfg map[string]any, logOut io.Writer, startTimeout time.Duration) (*Client, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode the config of executor %s: %w", name, err)
	}
	if logOut == nil {
		logOut = io.Discard
	}
	c := &Client{Name: name, Path: newCmd().Path, newCmd: newCmd, typ: typ, cfg: raw, logOut: logOut, startTimeout: startTimeout}
	if err := c.start(ctx, true); err != nil {
		return nil, err
	}
	return c, nil
}

// launchUnconfigured starts a plugin only to read its schema.
func launchUnconfigured(ctx context.Context, name string, newCmd func() *exec.Cmd, logOut io.Writer, startTimeout time.Duration) (*Client, error) {
	if logOut == nil {
		logOut = io.Discard
	}
	c := &Client{Name: name, Path: newCmd().Path, newCmd: newCmd, logOut: logOut, startTimeout: startTimeout}
	if err := c.start(ctx, false); err != nil {
		return nil, err
	}
	return c, nil
}

// start launches the process and, when configure is set, configures the executor.
func (c *Client) start(ctx context.Context, configure bool) error {
	cmd := c.newCmd()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	// The plugin watches for this PID to stop being its parent, even if
	// the host dies before the plugin process is running.
	cmd.Env = append(cmd.Env, HostPIDEnv+"="+strconv.Itoa(os.Getpid()))
	ownGroup(cmd)
	timeout := c.startTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          pluginSet(&grpcPlugin{}),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin." + c.Name, Output: c.logOut, Level: hclog.Info}),
		StartTimeout:     timeout,
		Managed:          true,
		Stderr:           c.logOut,
		SyncStdout:       c.logOut,
		SyncStderr:       c.logOut,
	})
	proto, err := c.handshake(ctx, pc, cmd, timeout)
	if err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	raw, err := proto.Dispense(pluginName)
	if err != nil {
		c.stop(pc, pgid, false)
		return fmt.Errorf("executor plugin %s (%s) does not serve an executor: %w", c.Name, c.Path, err)
	}
	rpc := raw.(executorpb.ExecutorClient)
	sr, err := rpc.Schema(ctx, &executorpb.SchemaRequest{})
	if err == nil {
		err = json.Unmarshal(sr.SchemaJson, &c.schema)
	}
	if err == nil && configure {
		_, err = rpc.Configure(ctx, &executorpb.ConfigureRequest{Type: c.typ, ConfigJson: c.cfg})
	}
	if err != nil {
		c.stop(pc, pgid, false)
		return fmt.Errorf("executor plugin %s: %s", c.Name, message(err))
	}
	c.mu.Lock()
	c.pc, c.rpc, c.pgid = pc, rpc, pgid
	c.mu.Unlock()
	return nil
}

// handshake waits for the plugin process to answer go-plugin's handshake,
// up to timeout and while ctx lasts. When it does not, the plugin's whole
// process group is killed first (a shell script's child holding the
// plugin's stdout would keep go-plugin's Kill waiting forever), then
// go-plugin is stopped, and the error names the binary.
func (c *Client) handshake(ctx context.Context, pc *plugin.Client, cmd *exec.Cmd, timeout time.Duration) (plugin.ClientProtocol, error) {
	type answer struct {
		proto plugin.ClientProtocol
		err   error
	}
	ch := make(chan answer, 1)
	start := time.Now()
	go func() {
		proto, err := pc.Client()
		ch <- answer{proto, err}
	}()
	var err error
	answered := false
	select {
	case a := <-ch:
		if a.err == nil {
			return a.proto, nil
		}
		err, answered = a.err, true
	case <-ctx.Done():
		err = ctx.Err()
	}
	pgid := 0
	if cmd.Process != nil {
		pgid = cmd.Process.Pid
	}
	// Kill the tree before anything waits on it: go-plugin's Start (which
	// holds the client's lock) and Kill both wait for the plugin's stdout
	// to close.
	killGroup(pgid)
	if !answered {
		select {
		case <-ch:
		case <-time.After(killWait):
		}
	}
	left := c.stop(pc, pgid, false)
	hint := fmt.Sprintf("check that it is an InferCrane executor plugin built for protocol %d: its first line on stdout must be go-plugin's handshake", Handshake.ProtocolVersion)
	switch {
	case ctx.Err() != nil:
		err = fmt.Errorf("executor plugin %s (%s) did not answer the handshake before the command's deadline (%v, after %s); it and the processes it started were killed; %s", c.Name, c.Path, ctx.Err(), time.Since(start).Round(time.Millisecond), hint)
	case time.Since(start) >= timeout:
		err = fmt.Errorf("executor plugin %s (%s) did not answer the handshake within %s; it and the processes it started were killed; %s", c.Name, c.Path, timeout, hint)
	default:
		err = fmt.Errorf("start executor plugin %s (%s): %w; %s", c.Name, c.Path, err, hint)
	}
	return nil, errors.Join(err, left)
}

// stop ends a plugin process: go-plugin's Kill (gracefully when graceful,
// then by force), and SIGKILL to the plugin's process group when that
// does not return within killWait (a process the plugin started keeps its
// output open) and in any case afterwards, so that nothing the plugin left
// in its group keeps running. It returns an error only when go-plugin
// still waits on the plugin's output after that: a process that left the
// group holds it.
func (c *Client) stop(pc *plugin.Client, pgid int, graceful bool) error {
	if !graceful {
		killGroup(pgid)
	}
	done := make(chan struct{})
	go func() {
		pc.Kill()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(killWait):
		killGroup(pgid)
		select {
		case <-done:
		case <-time.After(killWait):
			return fmt.Errorf("executor plugin %s (%s, process group %d) did not exit: a process it started outside its process group still holds its output; find it with `ps -o pid,pgid,args` and stop it", c.Name, c.Path, pgid)
		}
	}
	killGroup(pgid)
	return nil
}

func (c *Client) conn() (executorpb.ExecutorClient, *plugin.Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rpc, c.pc
}

// Schema returns the schema the plugin published.
func (c *Client) Schema() executor.Schema { return c.schema }

// wrap turns an RPC error into one that names the plugin, and says so
// when the plugin process died.
func (c *Client) wrap(op string, err error, pc *plugin.Client) error {
	if err == nil {
		return nil
	}
	if pc != nil && (pc.Exited() || status.Code(err) == codes.Unavailable) {
		// Give the process a moment to be reaped so Exited is accurate.
		time.Sleep(100 * time.Millisecond)
		return &PluginExitedError{Name: c.Name, Path: c.Path, Op: op, Err: errors.New(message(err))}
	}
	return errors.New(message(err))
}

// PluginExitedError says an executor plugin process died during an operation.
type PluginExitedError struct {
	Name, Path, Op string
	Err            error
}

func (e *PluginExitedError) Error() string {
	return fmt.Sprintf("executor plugin %s (%s) exited unexpectedly during %s (%v); completed runs are journaled, re-run apply to resume", e.Name, e.Path, e.Op, e.Err)
}

func (e *PluginExitedError) Unwrap() error { return e.Err }

// message is the executor's own error text of a gRPC error.
func message(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}

// Deploy implements executor.Executor. What the plugin reports started
// before its server is healthy reaches executor.ReportStarted (so the
// runner journals it); a plugin built before DeployStream existed is
// deployed with the plain Deploy call.
func (c *Client) Deploy(ctx context.Context, d executor.Deployment) (*executor.Server, error) {
	rpc, pc := c.conn()
	data, err := json.Marshal(deploymentWire{Deployment: d, Redact: d.Redact})
	if err != nil {
		return nil, err
	}
	req := &executorpb.DeployRequest{DeploymentJson: data}
	stream, err := rpc.DeployStream(ctx, req)
	for err == nil {
		var ev *executorpb.DeployEvent
		if ev, err = stream.Recv(); err != nil {
			break
		}
		switch e := ev.Event.(type) {
		case *executorpb.DeployEvent_StartedJson:
			if s, jerr := decodeJSON[executor.Server](e.StartedJson); jerr == nil {
				executor.ReportStarted(ctx, s)
			}
		case *executorpb.DeployEvent_ServerJson:
			return decodeJSON[executor.Server](e.ServerJson)
		}
	}
	if err == io.EOF {
		return nil, &PluginExitedError{Name: c.Name, Path: c.Path, Op: "Deploy", Err: errors.New("the deploy stream ended without a server")}
	}
	if status.Code(err) != codes.Unimplemented {
		return nil, c.wrap("Deploy", err, pc)
	}
	resp, err := rpc.Deploy(ctx, req)
	if err != nil {
		return nil, c.wrap("Deploy", err, pc)
	}
	return decodeJSON[executor.Server](resp.ServerJson)
}

// Run implements executor.Executor; progress the plugin streams reaches
// executor.ReportProgress.
func (c *Client) Run(ctx context.Context, s *executor.Server, r executor.RunSpec) (*executor.RunResult, error) {
	rpc, pc := c.conn()
	sj, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	rj, err := json.Marshal(runWire{RunSpec: r, Redact: r.Load.Redact})
	if err != nil {
		return nil, err
	}
	stream, err := rpc.Run(ctx, &executorpb.RunRequest{ServerJson: sj, RunJson: rj})
	if err != nil {
		return nil, c.wrap("Run", err, pc)
	}
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			return nil, &PluginExitedError{Name: c.Name, Path: c.Path, Op: "Run", Err: errors.New("the result stream ended without a result")}
		}
		if err != nil {
			return nil, c.wrap("Run", err, pc)
		}
		switch e := ev.Event.(type) {
		case *executorpb.RunEvent_Progress:
			executor.ReportProgress(ctx, executor.Progress{Done: int(e.Progress.Done), Failed: int(e.Progress.Failed), Total: int(e.Progress.Total), OutputTokens: e.Progress.OutputTokens})
		case *executorpb.RunEvent_ResultJson:
			return decodeJSON[executor.RunResult](e.ResultJson)
		}
	}
}

// Teardown implements executor.Executor. When the plugin process has died,
// a fresh one is started to tear down what the dead one deployed (the
// server's Handle identifies it), so a crashed plugin leaks nothing its
// executor can find again.
func (c *Client) Teardown(ctx context.Context, s *executor.Server) error {
	rpc, pc := c.conn()
	if pc == nil || pc.Exited() {
		if err := c.start(ctx, true); err != nil {
			return fmt.Errorf("executor plugin %s died and could not be restarted to tear down deployment %s: %w", c.Name, s.DeploymentID, err)
		}
		rpc, pc = c.conn()
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = rpc.Teardown(ctx, &executorpb.TeardownRequest{ServerJson: data})
	return c.wrap("Teardown", err, pc)
}

// Close ends the plugin process (gracefully, then by force) and every
// process left in its process group.
func (c *Client) Close() error {
	c.mu.Lock()
	pc, pgid := c.pc, c.pgid
	c.mu.Unlock()
	if pc == nil {
		return nil
	}
	return c.stop(pc, pgid, true)
}
