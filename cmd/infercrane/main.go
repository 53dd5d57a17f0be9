// Command infercrane plans, runs and reports declarative LLM-serving screens.
//
// This package only parses flags, calls the packages that do the work and
// renders their results. Each subcommand lives in its own file and registers
// itself with register in an init function.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Version is the infercrane release; it is stamped into plans and evidence.
var Version = "0.1.0"

// command is one infercrane subcommand.
type command struct {
	// Name is the word that selects the command ("plan", "sim serve", ...).
	Name string
	// Synopsis is the one-line help shown by `infercrane help`.
	Synopsis string
	// Run executes the command with the arguments after its name and
	// returns the process exit code.
	Run func(env *cliEnv, args []string) int
}

// cliEnv is what a command may touch of the outside world.
type cliEnv struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads an environment variable.
	Getenv func(string) string
	// Environ lists the environment as KEY=VALUE pairs.
	Environ func() []string
}

var commands = map[string]*command{}

// register adds a subcommand; names with a space ("sim serve") are nested.
func register(c *command) {
	if _, dup := commands[c.Name]; dup {
		panic("infercrane: command registered twice: " + c.Name)
	}
	commands[c.Name] = c
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run dispatches to the subcommand named by the longest matching prefix of args.
func run(args []string) int {
	env := &cliEnv{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Environ: os.Environ}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		usage(env.Stdout)
		if len(args) == 0 {
			return 1
		}
		return 0
	}
	for n := min(len(args), 3); n >= 1; n-- {
		if c, ok := commands[strings.Join(args[:n], " ")]; ok {
			return c.Run(env, args[n:])
		}
	}
	fmt.Fprintf(env.Stderr, "infercrane: unknown command %q; run 'infercrane help' for the list\n", args[0])
	return 1
}

// flagErrorCode is a command's exit code after parsing its flags failed: 0
// when the user asked for -h (the flag package printed the usage), otherwise
// code (the flag package already said what was wrong).
func flagErrorCode(err error, code int) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return code
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: infercrane COMMAND [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-18s %s\n", n, commands[n].Synopsis)
	}
}

func init() {
	register(&command{
		Name:     "version",
		Synopsis: "Print the infercrane version",
		Run: func(env *cliEnv, args []string) int {
			fmt.Fprintf(env.Stdout, "infercrane v%s\n", Version)
			return 0
		},
	})
}
