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

	newCmd func() *exec.Cmd
	typ    string
	cfg    []byte
	logOut io.Writer
	schema executor.Schema

	mu  sync.Mutex
	pc  *plugin.Client
	rpc executorpb.ExecutorClient
}

// Launch starts the plugin process newCmd makes, checks the handshake,
// fetches its schema and configures an executor of type typ from cfg.
// Plugin logs (hclog) go to logOut (nil: discarded).
func Launch(ctx context.Context, name string, newCmd func() *exec.Cmd, typ string, cfg map[string]any, logOut io.Writer) (*Client, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode the config of executor %s: %w", name, err)
	}
	if logOut == nil {
		logOut = io.Discard
	}
	c := &Client{Name: name, Path: newCmd().Path, newCmd: newCmd, typ: typ, cfg: raw, logOut: logOut}
	if err := c.start(ctx, true); err != nil {
		return nil, err
	}
	return c, nil
}

// launchUnconfigured starts a plugin only to read its schema.
func launchUnconfigured(ctx context.Context, name string, newCmd func() *exec.Cmd, logOut io.Writer) (*Client, error) {
	if logOut == nil {
		logOut = io.Discard
	}
	c := &Client{Name: name, Path: newCmd().Path, newCmd: newCmd, logOut: logOut}
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
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          pluginSet(&grpcPlugin{}),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin." + c.Name, Output: c.logOut, Level: hclog.Info}),
		StartTimeout:     30 * time.Second,
		Managed:          true,
		Stderr:           c.logOut,
		SyncStdout:       c.logOut,
		SyncStderr:       c.logOut,
	})
	proto, err := pc.Client()
	if err != nil {
		pc.Kill()
		return fmt.Errorf("start executor plugin %s (%s): %w; check that it is an InferCrane executor plugin built for protocol %d", c.Name, c.Path, err, Handshake.ProtocolVersion)
	}
	raw, err := proto.Dispense(pluginName)
	if err != nil {
		pc.Kill()
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
		pc.Kill()
		return fmt.Errorf("executor plugin %s: %s", c.Name, message(err))
	}
	c.mu.Lock()
	c.pc, c.rpc = pc, rpc
	c.mu.Unlock()
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
	data, err := json.Marshal(d)
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
	rj, err := json.Marshal(r)
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

// Close ends the plugin process (gracefully, then by force).
func (c *Client) Close() error {
	_, pc := c.conn()
	if pc != nil {
		pc.Kill()
	}
	return nil
}
