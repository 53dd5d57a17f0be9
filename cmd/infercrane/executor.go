package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/plugins"
)

// addExecutorCommands registers the commands of this file (called by setupCommands).
func addExecutorCommands() {
	register(&command{
		Name:     "executor serve",
		Synopsis: "Serve a built-in executor as a plugin process (started by apply, not by hand)",
		Run:      runExecutorServe,
	})
	register(&command{
		Name:     "executor list",
		Synopsis: "List the executor types (built-in and external plugins) and their attributes",
		Run:      runExecutorList,
	})
}

func runExecutorServe(env *cliEnv, args []string) int {
	reg := env.registry(nil)
	fs := newFlags(env, "executor serve", usageDoc{
		Usage: "infercrane executor serve NAME",
		About: "Serves the built-in executor NAME (one of " + strings.Join(reg.BuiltinNames(), ", ") + ") over the go-plugin\n" +
			"protocol. 'infercrane apply' starts it (INFERCRANE_EXECUTOR_ISOLATION=process); it is not run by hand.",
		Examples: []string{
			"INFERCRANE_EXECUTOR_ISOLATION=process infercrane apply -auto-approve",
			"infercrane executor list",
		},
	})
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageError("give one executor NAME (one of %s)", strings.Join(reg.BuiltinNames(), ", "))
	}
	b, ok := reg.Builtin(pos[0])
	if !ok {
		return fs.usageError("no built-in executor %q; choose one of %s", pos[0], strings.Join(reg.BuiltinNames(), ", "))
	}
	if env.Getenv(plugins.Handshake.MagicCookieKey) != plugins.Handshake.MagicCookieValue {
		fmt.Fprintln(env.Stderr, "infercrane executor serve: this command speaks the plugin protocol and is started by 'infercrane apply'; it is not meant to be run by hand")
		return 1
	}
	plugins.Serve(func(typ string, cfg map[string]any) (executor.Executor, error) { return b.New(cfg) }, b.Schema())
	return 0
}

func runExecutorList(env *cliEnv, args []string) int {
	fs := newFlags(env, "executor list", usageDoc{
		Usage: "infercrane executor list [flags]",
		About: "Lists the executor types an executor block may name: the built-ins and the external\n" +
			"infercrane-executor-NAME plugins found in $INFERCRANE_PLUGIN_DIR and $PATH, with their attributes.",
		Examples: []string{
			"infercrane executor list",
			"INFERCRANE_PLUGIN_DIR=./plugins infercrane executor list",
		},
	})
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return fs.usageError("takes no arguments, got %q", pos[0])
	}
	reg := env.registry(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	schemas, errs := reg.Schemas(ctx)
	external := reg.Discover()
	names := make([]string, 0, len(schemas))
	for n := range schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		where := "built-in"
		if p, ok := external[n]; ok {
			where = "plugin " + p
		}
		fmt.Fprintf(env.Stdout, "%s (%s)\n", n, where)
		for _, a := range schemas[n].Attributes {
			req := ""
			if a.Required {
				req = ", required"
			}
			if c := a.Constraint(); c != "" {
				req += ", " + c
			}
			if d := a.DefaultText(); d != "" {
				req += ", " + d
			}
			fmt.Fprintf(env.Stdout, "  %-18s %s%s: %s\n", a.Name, a.Type, req, a.Doc)
		}
	}
	for _, err := range errs {
		fmt.Fprintf(env.Stderr, "Warning: %v\n", err)
	}
	return 0
}
