// Command infercrane plans, runs and reports declarative LLM-serving screens.
//
// This package only parses flags, calls the packages that do the work and
// renders their results. Each subcommand lives in its own file; wiring.go
// is the composition root that assembles the commands, the executors and
// the spec language's options in one place (nothing registers itself from
// init or a blank import).
package main

import (
	"github.com/infercrane/infercrane/executor/redact"
	"github.com/infercrane/infercrane/lang"

	"fmt"
	"io"
	"log/slog"
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
	// Hidden commands (the completion helper) are left out of the list.
	Hidden bool
}

// cliEnv is what a command may touch of the outside world.
type cliEnv struct {
	// verbosePlan is -verbose of plan, apply and show: the plan's text
	// says how the estimates are made.
	verbosePlan bool

	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads an environment variable.
	Getenv func(string) string
	// Environ lists the environment as KEY=VALUE pairs.
	Environ func() []string
	// NoColor is set by -no-color (global or a command's) and NO_COLOR.
	NoColor bool
	// onFlags, when set, sees every flag set a command makes (shell
	// completion lists a command's flags with it).
	onFlags func(*cmdFlags)
	// Wire is what the commands are assembled from (see wiring.go).
	Wire wiring
	// secrets are removed from Stdout and Stderr (see redactStreams).
	secrets *redact.Set
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
	os.Exit(run(osEnv(productionWiring()), os.Args[1:]))
}

// osEnv is the process's own environment, with the given wiring.
func osEnv(w wiring) *cliEnv {
	return &cliEnv{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Environ: os.Environ,
		NoColor: os.Getenv("NO_COLOR") != "", Wire: w}
}

// globalDoc documents the flags that come before the command.
const globalDoc = `Global flags (before the command):
  -chdir=DIR   switch to DIR before running the command (paths are then relative to DIR)
  -no-color    print no colour escape codes (also: NO_COLOR=1; FORCE_COLOR=1 forces colour)
  -version     print the version, like 'infercrane version'
  -help        print this list

Environment:
  INFERCRANE_LOG=debug|info|warn|error   log to stderr at that level
  INFERCRANE_LOG_PATH=FILE               append the log to FILE instead (level debug unless INFERCRANE_LOG says)

Run 'infercrane help COMMAND' or 'infercrane COMMAND -h' for a command's flags and examples.`

// run dispatches to the subcommand named by the longest matching prefix of
// args, after the global flags.
func run(env *cliEnv, args []string) int {
	setupCommands()
	redactStreams(env)
	args, code, ok := globalFlags(env, args)
	if !ok {
		return code
	}
	closeLog, err := setupLog(env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane: %v\n", hinted(err))
		return exitError
	}
	defer closeLog()
	if len(args) == 0 {
		usage(env.Stderr)
		return exitUsage
	}
	slog.Debug("command", "args", strings.Join(loggableArgs(args), " "))
	return dispatch(env, args)
}

// dispatch runs the command args name.
func dispatch(env *cliEnv, args []string) int {
	if args[0] == "help" {
		return runHelp(env, args[1:])
	}
	if c, rest := lookup(args); c != nil {
		return c.Run(env, rest)
	}
	if subs := subcommands(args[0]); len(subs) > 0 {
		if len(args) > 1 && isHelpFlag(args[1]) {
			groupUsage(env.Stdout, args[0], subs)
			return exitOK
		}
		if len(args) > 1 {
			fmt.Fprintf(env.Stderr, "infercrane %s: unknown subcommand %q\n\n", args[0], args[1])
		}
		groupUsage(env.Stderr, args[0], subs)
		return exitUsage
	}
	fmt.Fprintf(env.Stderr, "infercrane: unknown command %q.%s Run 'infercrane help' for the list.\n", args[0], lang.DidYouMean(args[0], commandWords()))
	return exitUsage
}

// commandWords are the first words of the commands, which a mistyped one
// is compared with.
func commandWords() []string {
	seen := map[string]bool{"help": true}
	out := []string{"help"}
	for name := range commands {
		w, _, _ := strings.Cut(name, " ")
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}

// lookup finds the command named by the longest prefix of args.
func lookup(args []string) (*command, []string) {
	for n := min(len(args), 3); n >= 1; n-- {
		if c, ok := commands[strings.Join(args[:n], " ")]; ok {
			return c, args[n:]
		}
	}
	return nil, nil
}

func isHelpFlag(a string) bool {
	return a == "-h" || a == "-help" || a == "--help"
}

// globalFlags consumes the flags before the command. ok is false when the
// process should exit with code (after -version, -help or a bad flag).
func globalFlags(env *cliEnv, args []string) (rest []string, code int, ok bool) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := args[0]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case isHelpFlag(a):
			usage(env.Stdout)
			return nil, exitOK, false
		case name == "version" || name == "v":
			printVersion(env)
			return nil, exitOK, false
		case name == "no-color" && !hasVal:
			env.NoColor = true
		case name == "chdir":
			if !hasVal {
				if len(args) < 2 {
					fmt.Fprintln(env.Stderr, "infercrane: -chdir needs a directory: -chdir=DIR")
					return nil, exitUsage, false
				}
				val, args = args[1], args[1:]
			}
			if err := os.Chdir(val); err != nil {
				fmt.Fprintf(env.Stderr, "infercrane: -chdir: %v; give an existing directory\n", err)
				return nil, exitUsage, false
			}
		default:
			fmt.Fprintf(env.Stderr, "infercrane: unknown global flag %s\n\n%s\n", a, globalDoc)
			return nil, exitUsage, false
		}
		args = args[1:]
	}
	return args, exitOK, true
}

// runHelp is 'infercrane help [COMMAND]'.
func runHelp(env *cliEnv, args []string) int {
	if len(args) == 0 || (len(args) == 1 && isHelpFlag(args[0])) {
		usage(env.Stdout)
		return exitOK
	}
	if c, rest := lookup(args); c != nil && len(rest) == 0 {
		return c.Run(env, []string{"-h"})
	}
	if subs := subcommands(args[0]); len(subs) > 0 && len(args) == 1 {
		groupUsage(env.Stdout, args[0], subs)
		return exitOK
	}
	fmt.Fprintf(env.Stderr, "infercrane help: no command %q.%s Run 'infercrane help' for the list.\n", strings.Join(args, " "), lang.DidYouMean(args[0], commandWords()))
	return exitUsage
}

// subcommands lists the commands under group ("profile": "profile trace", ...).
func subcommands(group string) []string {
	var out []string
	for n, c := range commands {
		if strings.HasPrefix(n, group+" ") && !c.Hidden {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func groupUsage(w io.Writer, group string, subs []string) {
	fmt.Fprintf(w, "Usage: infercrane %s SUBCOMMAND [flags] [args]\n\nSubcommands:\n", group)
	for _, n := range subs {
		fmt.Fprintf(w, "  %-18s %s\n", n, commands[n].Synopsis)
	}
	fmt.Fprintf(w, "\nRun 'infercrane %s -h' for a subcommand's flags and examples.\n", subs[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: infercrane [global flags] COMMAND [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.Hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-18s %s\n", n, commands[n].Synopsis)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, globalDoc)
}

func printVersion(env *cliEnv) {
	fmt.Fprintf(env.Stdout, "infercrane v%s\n", Version)
}

// addVersionCommands registers the commands of this file (called by setupCommands).
func addVersionCommands() {
	register(&command{
		Name:     "version",
		Synopsis: "Print the infercrane version",
		Run: func(env *cliEnv, args []string) int {
			fs := newFlags(env, "version", usageDoc{
				Usage:    "infercrane version",
				About:    "Prints the infercrane version (the one stamped into plans and evidence).",
				Examples: []string{"infercrane version", "infercrane -version"},
			})
			pos, code, ok := fs.parse(args)
			if !ok {
				return code
			}
			if len(pos) > 0 {
				return fs.usageError("takes no arguments, got %q", pos[0])
			}
			printVersion(env)
			return exitOK
		},
	})
}
