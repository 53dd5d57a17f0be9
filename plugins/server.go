package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/redact"
	"github.com/infercrane/infercrane/plugins/executorpb"
)

// Serve serves executors made by factory as a plugin process and returns
// when the host ends it. A plugin binary's main is one call:
//
//	func main() { plugins.Serve(myexec.New, myexec.Schema()) }
//
// If the host dies without ending the plugin, the plugin tears down every
// server it deployed and exits; when the host ends it, it tears down what
// the host left deployed before it exits.
func Serve(factory Factory, schema executor.Schema) {
	// The host reads this process's stdout and stderr through pipes: once
	// it is gone, a write there must fail (EPIPE), not kill the process by
	// SIGPIPE before it has torn down.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	// The watcher must see the very instance gRPC serves: it holds what
	// was deployed.
	srv := &server{factory: factory, schema: schema}
	host := os.Getppid()
	if pid, err := strconv.Atoi(os.Getenv(HostPIDEnv)); err == nil && pid > 1 {
		// The host that started this process: if it is already gone (it
		// died while this process started), the first check sees it.
		host = pid
	}
	go srv.watchParent(host, time.Second)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         pluginSet(&grpcPlugin{srv: srv}),
		GRPCServer:      plugin.DefaultGRPCServer,
		Logger:          hclog.New(&hclog.LoggerOptions{Name: "executor", Output: os.Stderr, JSONFormat: true}),
	})
	// The host ended this process (apply's exit): a server it never tore
	// down (a deploy cut short by an interrupt before the server reached
	// the host) must not outlive the plugin.
	srv.teardownAll()
}

// server implements the gRPC service over one executor instance.
type server struct {
	executorpb.UnimplementedExecutorServer
	factory Factory
	schema  executor.Schema

	mu       sync.Mutex
	exec     executor.Executor
	deployed map[string]*executor.Server // deployment ID -> server, for teardown on host death
}

func (s *server) instance() (executor.Executor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exec == nil {
		return nil, status.Error(codes.FailedPrecondition, "Configure was not called")
	}
	return s.exec, nil
}

func (s *server) Schema(context.Context, *executorpb.SchemaRequest) (*executorpb.SchemaResponse, error) {
	data, err := json.Marshal(s.schema)
	if err != nil {
		return nil, err
	}
	return &executorpb.SchemaResponse{SchemaJson: data}, nil
}

func (s *server) Configure(_ context.Context, req *executorpb.ConfigureRequest) (*executorpb.ConfigureResponse, error) {
	cfg := map[string]any{}
	if len(req.ConfigJson) > 0 {
		if err := json.Unmarshal(req.ConfigJson, &cfg); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "config: %v", err)
		}
	}
	x, err := s.factory(req.Type, cfg)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s.mu.Lock()
	s.exec = x
	s.mu.Unlock()
	return &executorpb.ConfigureResponse{}, nil
}

func (s *server) Deploy(ctx context.Context, req *executorpb.DeployRequest) (*executorpb.DeployResponse, error) {
	x, err := s.instance()
	if err != nil {
		return nil, err
	}
	d, red, err := decodeDeployment(req.DeploymentJson)
	if err != nil {
		return nil, err
	}
	ctx = executor.WithStarted(ctx, s.remember)
	srv, err := x.Deploy(ctx, d)
	if err != nil {
		return nil, status.Error(codes.Unknown, red.String(err.Error()))
	}
	s.remember(srv)
	data, err := json.Marshal(srv)
	if err != nil {
		return nil, err
	}
	return &executorpb.DeployResponse{ServerJson: data}, nil
}

// DeployStream is Deploy that streams what the executor reports started
// (executor.ReportStarted) before the healthy server.
func (s *server) DeployStream(req *executorpb.DeployRequest, stream executorpb.Executor_DeployStreamServer) error {
	x, err := s.instance()
	if err != nil {
		return err
	}
	d, red, err := decodeDeployment(req.DeploymentJson)
	if err != nil {
		return err
	}
	var sendMu sync.Mutex
	ctx := executor.WithStarted(stream.Context(), func(srv *executor.Server) {
		s.remember(srv)
		data, err := json.Marshal(srv)
		if err != nil {
			return
		}
		sendMu.Lock()
		defer sendMu.Unlock()
		_ = stream.Send(&executorpb.DeployEvent{Event: &executorpb.DeployEvent_StartedJson{StartedJson: data}})
	})
	srv, err := x.Deploy(ctx, d)
	if err != nil {
		return status.Error(codes.Unknown, red.String(err.Error()))
	}
	s.remember(srv)
	data, err := json.Marshal(srv)
	if err != nil {
		return err
	}
	sendMu.Lock()
	defer sendMu.Unlock()
	return stream.Send(&executorpb.DeployEvent{Event: &executorpb.DeployEvent_ServerJson{ServerJson: data}})
}

// decodeDeployment reads a DeployRequest's deployment and its secrets
// (deploymentWire), and the set that removes them from the errors the
// plugin returns.
func decodeDeployment(data []byte) (executor.Deployment, *redact.Set, error) {
	w, err := decodeJSON[deploymentWire](data)
	if err != nil {
		return executor.Deployment{}, nil, status.Errorf(codes.InvalidArgument, "deployment: %v", err)
	}
	w.Deployment.Redact = w.Redact
	return w.Deployment, redact.New(w.Redact...), nil
}

// remember records a server for teardown on host death; a deployment's
// later report replaces its earlier ones.
func (s *server) remember(srv *executor.Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deployed == nil {
		s.deployed = map[string]*executor.Server{}
	}
	s.deployed[srv.DeploymentID] = srv
}

func (s *server) Run(req *executorpb.RunRequest, stream executorpb.Executor_RunServer) error {
	x, err := s.instance()
	if err != nil {
		return err
	}
	srv, err := decodeJSON[executor.Server](req.ServerJson)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "server: %v", err)
	}
	w, err := decodeJSON[runWire](req.RunJson)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "run: %v", err)
	}
	spec := &w.RunSpec
	spec.Load.Redact = w.Redact
	red := redact.New(w.Redact...)
	var sendMu sync.Mutex
	ctx := executor.WithProgress(stream.Context(), func(p executor.Progress) {
		sendMu.Lock()
		defer sendMu.Unlock()
		_ = stream.Send(&executorpb.RunEvent{Event: &executorpb.RunEvent_Progress{Progress: &executorpb.Progress{
			Done: int64(p.Done), Failed: int64(p.Failed), Total: int64(p.Total), OutputTokens: p.OutputTokens}}})
	})
	res, err := x.Run(ctx, srv, *spec)
	if err != nil {
		return status.Error(codes.Unknown, red.String(err.Error()))
	}
	data, err := json.Marshal(res)
	if err != nil {
		return err
	}
	// What the run recorded (error bodies a server echoed) loses the
	// secrets before it leaves the plugin.
	data = red.Bytes(data)
	sendMu.Lock()
	defer sendMu.Unlock()
	return stream.Send(&executorpb.RunEvent{Event: &executorpb.RunEvent_ResultJson{ResultJson: data}})
}

func (s *server) Teardown(ctx context.Context, req *executorpb.TeardownRequest) (*executorpb.TeardownResponse, error) {
	x, err := s.instance()
	if err != nil {
		return nil, err
	}
	srv, err := decodeJSON[executor.Server](req.ServerJson)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "server: %v", err)
	}
	if err := x.Teardown(ctx, srv); err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	s.mu.Lock()
	delete(s.deployed, srv.DeploymentID)
	s.mu.Unlock()
	return &executorpb.TeardownResponse{}, nil
}

// HostPIDEnv carries the host's PID to a plugin process it starts.
const HostPIDEnv = "INFERCRANE_PLUGIN_HOST_PID"

// watchParent tears down what this plugin deployed and exits when the host
// process that started it is gone (the plugin was re-parented).
func (s *server) watchParent(ppid int, every time.Duration) {
	for {
		if os.Getppid() == ppid {
			time.Sleep(every)
			continue
		}
		s.teardownAll()
		fmt.Fprintln(os.Stderr, "infercrane executor plugin: the host process is gone; tore down and exiting")
		os.Exit(2)
	}
}

func (s *server) teardownAll() {
	s.mu.Lock()
	x, servers := s.exec, s.deployed
	s.deployed = nil
	s.mu.Unlock()
	if x == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, srv := range servers {
		_ = x.Teardown(ctx, srv)
	}
}
