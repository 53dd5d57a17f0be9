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

func init() {
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
	if len(args) != 1 {
		fmt.Fprintf(env.Stderr, "Usage: infercrane executor serve NAME (one of %s)\n", strings.Join(plugins.BuiltinNames(), ", "))
		return 1
	}
	b, ok := plugins.LookupBuiltin(args[0])
	if !ok {
		fmt.Fprintf(env.Stderr, "infercrane executor serve: no built-in executor %q; choose one of %s\n", args[0], strings.Join(plugins.BuiltinNames(), ", "))
		return 1
	}
	if env.Getenv(plugins.Handshake.MagicCookieKey) != plugins.Handshake.MagicCookieValue {
		fmt.Fprintln(env.Stderr, "infercrane executor serve: this command speaks the plugin protocol and is started by 'infercrane apply'; it is not meant to be run by hand")
		return 1
	}
	plugins.Serve(func(typ string, cfg map[string]any) (executor.Executor, error) { return b.New(cfg) }, b.Schema())
	return 0
}

func runExecutorList(env *cliEnv, args []string) int {
	if len(args) != 0 {
		fmt.Fprintln(env.Stderr, "Usage: infercrane executor list")
		return 1
	}
	reg := &plugins.Registry{Dirs: plugins.DefaultDirs(env.Getenv)}
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
			fmt.Fprintf(env.Stdout, "  %-18s %s%s: %s\n", a.Name, a.Type, req, a.Doc)
		}
	}
	for _, err := range errs {
		fmt.Fprintf(env.Stderr, "Warning: %v\n", err)
	}
	return 0
}
