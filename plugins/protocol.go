package plugins

import (
	"context"
	"encoding/json"
	"errors"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/plugins/executorpb"
)

// Handshake is the go-plugin handshake of executor plugins. ProtocolVersion
// changes only with an incompatible change of executor.proto.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "INFERCRANE_PLUGIN",
	MagicCookieValue: "executor",
}

// pluginName is the name of the one plugin an executor plugin process serves.
const pluginName = "executor"

// Factory makes an executor of type typ from an executor block's attributes.
type Factory func(typ string, cfg map[string]any) (executor.Executor, error)

// grpcPlugin is the go-plugin glue: on the plugin side it serves srv (the
// one instance Serve also watches the host with), on the host side it
// hands out an executorpb client.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	srv *server
}

func (p *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.srv == nil {
		return errors.New("executor plugin: no executor to serve")
	}
	executorpb.RegisterExecutorServer(s, p.srv)
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return executorpb.NewExecutorClient(c), nil
}

// pluginSet is the plugin map both sides use.
func pluginSet(p *grpcPlugin) plugin.PluginSet { return plugin.PluginSet{pluginName: p} }

// deploymentWire is executor.Deployment as DeployRequest.deployment_json
// carries it: the deployment's own JSON and, under "redact", its secrets,
// which the Go type keeps out of its JSON so that nothing the host writes
// holds them. The plugin needs them to redact what it writes (server logs,
// the command line it starts, errors); they travel only over the plugin's
// private gRPC connection, never in its environment or arguments.
type deploymentWire struct {
	executor.Deployment
	Redact []string `json:"redact,omitempty"`
}

// runWire is executor.RunSpec as RunRequest.run_json carries it: the
// spec's JSON and, under "redact", its load's secrets (loadgen.Config.Redact,
// kept out of the Go type's JSON alike).
type runWire struct {
	executor.RunSpec
	Redact []string `json:"redact,omitempty"`
}

func decodeJSON[T any](data []byte) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(data, v); err != nil {
		return nil, err
	}
	return v, nil
}
