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
	"github.com/infercrane/infercrane/plugins"
	"github.com/infercrane/infercrane/plugins/sim"
)

func main() {
	schema := sim.Schema()
	plugins.Serve(func(typ string, cfg map[string]any) (executor.Executor, error) {
		c := map[string]any{"timing": "constant"}
		for k, v := range cfg {
			c[k] = v
		}
		return sim.New(c)
	}, schema)
}
