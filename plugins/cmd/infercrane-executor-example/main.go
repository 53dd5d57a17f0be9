// Command infercrane-executor-example is a minimal external executor
// plugin, the template for writing one: it serves the simulated engine in
// constant timing under the executor type "example". Build it onto
// $INFERCRANE_PLUGIN_DIR or $PATH and use it in a spec with
//
//	executor "ext" { type = "example" }
//
// An external plugin is any program whose main calls plugins.Serve with a
// factory and a schema; infercrane starts it, checks the handshake and
// speaks the executor protocol (plugins/executorpb/executor.proto) to it.
package main

import (
	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/sim"
	"github.com/infercrane/infercrane/plugins"
)

func main() {
	// The plugin's defaults live in the schema it serves: infercrane
	// resolves every lane's settings from it at plan time and Configure
	// receives them complete, so the factory applies none.
	schema := sim.Schema()
	for i := range schema.Attributes {
		if schema.Attributes[i].Name == "timing" {
			schema.Attributes[i].Default = "constant"
		}
	}
	plugins.Serve(func(typ string, settings map[string]any) (executor.Executor, error) {
		return sim.New(settings)
	}, schema)
}
