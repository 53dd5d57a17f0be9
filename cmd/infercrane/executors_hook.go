package main

import (
	"context"
	"os"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/plugins"
	// The modal executor registers itself as a built-in.
	_ "github.com/infercrane/infercrane/plugins/modal"
)

// init gives the spec language the executor schemas of the registry: the
// built-ins, and the external infercrane-executor-NAME plugins found in
// $INFERCRANE_PLUGIN_DIR and $PATH (each is started once to ask for its
// schema). Plugin processes themselves skip the external scan.
func init() {
	reg := &plugins.Registry{Dirs: plugins.DefaultDirs(os.Getenv)}
	if os.Getenv(plugins.Handshake.MagicCookieKey) != "" {
		reg.Dirs = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	schemas, _ := reg.Schemas(ctx)
	executorSchemas = map[string]lang.ExecutorSchema{}
	for name, s := range schemas {
		executorSchemas[name] = langSchema(s)
	}
}

// langSchema converts an executor schema to the spec language's form.
func langSchema(s executor.Schema) lang.ExecutorSchema {
	out := lang.ExecutorSchema{Attributes: map[string]lang.AttributeSpec{}}
	for _, a := range s.Attributes {
		var t cty.Type
		switch a.Type {
		case executor.AttrString, executor.AttrDuration:
			t = cty.String
		case executor.AttrNumber:
			t = cty.Number
		case executor.AttrBool:
			t = cty.Bool
		case executor.AttrStringList:
			t = cty.List(cty.String)
		case executor.AttrStringMap:
			t = cty.Map(cty.String)
		default:
			t = cty.DynamicPseudoType
		}
		out.Attributes[a.Name] = lang.AttributeSpec{Type: t, Required: a.Required}
	}
	return out
}
