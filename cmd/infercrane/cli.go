package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes shared by every command.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed
	exitUsage = 2 // the command line was wrong; nothing was done
)

// usageDoc documents a command for its -h and 'infercrane help COMMAND'.
type usageDoc struct {
	// Usage is the synopsis after "Usage: ", e.g.
	// "infercrane plan [flags] [PATH]".
	Usage string
	// About says what the command does, in one or more lines.
	About string
	// Examples are two or three command lines a user can copy.
	Examples []string
}

// cmdFlags is a command's flag set together with its documentation. Flags
// may come before, between or after the positional arguments.
type cmdFlags struct {
	*flag.FlagSet
	env  *cliEnv
	name string
	doc  usageDoc
}

// newFlags returns the flag set of the command called name ("plan",
// "state rm"). Every command accepts -no-color.
func newFlags(env *cliEnv, name string, doc usageDoc) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.BoolVar(&env.NoColor, "no-color", env.NoColor, "print no colour escape codes (also: the NO_COLOR environment variable)")
	c := &cmdFlags{FlagSet: fs, env: env, name: name, doc: doc}
	if env.onFlags != nil {
		env.onFlags(c)
	}
	return c
}

// parse parses args. On -h it prints the help on stdout and returns
// (nil, 0, false); on a bad flag it prints the problem and the usage on
// stderr and returns (nil, 2, false).
func (c *cmdFlags) parse(args []string) (pos []string, code int, ok bool) {
	pos, err := parseInterspersed(c.FlagSet, args)
	switch {
	case err == nil:
		return pos, exitOK, true
	case errors.Is(err, flag.ErrHelp):
		c.writeHelp(c.env.Stdout)
		return nil, exitOK, false
	default:
		fmt.Fprintf(c.env.Stderr, "infercrane %s: %v\n\n", c.name, err)
		c.writeHelp(c.env.Stderr)
		return nil, exitUsage, false
	}
}

// usageError says what is wrong with the command line and returns the
// usage exit code.
func (c *cmdFlags) usageError(format string, a ...any) int {
	fmt.Fprintf(c.env.Stderr, "infercrane %s: %s; run 'infercrane %s -h'\n", c.name, fmt.Sprintf(format, a...), c.name)
	return exitUsage
}

// writeHelp renders the synopsis, the description, the flags and the
// examples.
func (c *cmdFlags) writeHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n", c.doc.Usage)
	if c.doc.About != "" {
		fmt.Fprintln(w)
		for _, line := range strings.Split(strings.TrimRight(c.doc.About, "\n"), "\n") {
			fmt.Fprintln(w, strings.TrimRight("  "+line, " "))
		}
	}
	fmt.Fprintln(w, "\nFlags:")
	c.SetOutput(w)
	c.PrintDefaults()
	c.SetOutput(io.Discard)
	if len(c.doc.Examples) > 0 {
		fmt.Fprintln(w, "\nExamples:")
		for _, e := range c.doc.Examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// parseInterspersed parses flags that may come before, between or after
// positional arguments ("plan DIR -json") and returns the positionals.
// "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// oneOptional returns the single optional positional argument, def when
// there is none, or ok false after a usage error (code set).
func (c *cmdFlags) oneOptional(pos []string, what, def string) (arg string, code int, ok bool) {
	switch len(pos) {
	case 0:
		return def, exitOK, true
	case 1:
		return pos[0], exitOK, true
	default:
		return "", c.usageError("one %s at most, got %d (%s)", what, len(pos), strings.Join(pos, " ")), false
	}
}
