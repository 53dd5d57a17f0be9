package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	// outs are the output flags parse prepares (see outFile).
	outs []outFlag
}

// outFlag is a flag naming where a command writes: a file, or a
// directory (dir true).
type outFlag struct {
	name  string
	value *string
	dir   bool
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
		for _, o := range c.outs {
			if err := prepareOut(*o.value, o.dir); err != nil {
				return nil, c.usageError("-%s %s: %v", o.name, *o.value, err), false
			}
		}
		return pos, exitOK, true
	case errors.Is(err, flag.ErrHelp):
		c.writeHelp(c.env.Stdout)
		return nil, exitOK, false
	default:
		fmt.Fprintf(c.env.Stderr, "infercrane %s: %v\n", c.name, hinted(err))
		if g := misplacedGlobal(err); g != "" {
			fmt.Fprintf(c.env.Stderr, "%s is a global flag: put it before the command, as in 'infercrane %s %s ...'.\n", g, g, c.name)
		}
		fmt.Fprintln(c.env.Stderr)
		c.writeHelp(c.env.Stderr)
		return nil, exitUsage, false
	}
}

// misplacedGlobal names the global flag (-chdir, -version) that err says a
// command does not define: given after the command instead of before it.
func misplacedGlobal(err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		return ""
	}
	switch base, _, _ := strings.Cut(strings.TrimLeft(name, "-"), "="); base {
	case "chdir", "version", "v":
		return "-" + base
	}
	return ""
}

// outFile defines a string flag naming a file the command writes. parse
// creates the file's directory and checks that it can write there, so a
// command fails before its work (a trace scan, a fit), not after it, and
// "-out profiles/x.json" works in a directory without profiles/.
func (c *cmdFlags) outFile(name, def, usage string) *string {
	v := new(string)
	c.outFileVar(v, name, def, usage)
	return v
}

// outFileVar is outFile storing the flag's value in p.
func (c *cmdFlags) outFileVar(p *string, name, def, usage string) {
	c.StringVar(p, name, def, usage)
	c.outs = append(c.outs, outFlag{name: name, value: p})
}

// outDir is outFile for a flag naming a directory the command writes into.
func (c *cmdFlags) outDir(name, def, usage string) *string {
	v := c.String(name, def, usage)
	c.outs = append(c.outs, outFlag{name: name, value: v, dir: true})
	return v
}

// prepareOut creates path's directory (path itself when dir) and checks
// that a file can be created in it; an empty path, and "-" (stdout), need
// nothing.
func prepareOut(path string, dir bool) error {
	if path == "" || path == "-" {
		return nil
	}
	d := path
	if !dir {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return fmt.Errorf("is a directory; give a file name")
		}
		d = filepath.Dir(path)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("cannot create its directory: %w", err)
	}
	f, err := os.CreateTemp(d, ".infercrane-write-check-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w; choose a writable location", d, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// flagRule is one range rule of a numeric flag: ok is whether the value
// given keeps it, and problem says what is wrong and what to give instead.
type flagRule struct {
	ok      bool
	problem string
}

// checkFlags reports the first broken rule as a usage error (exit 2), so
// that a flag's value out of range never silently means a default.
func (c *cmdFlags) checkFlags(rules ...flagRule) (int, bool) {
	for _, r := range rules {
		if !r.ok {
			return c.usageError("%s", r.problem), false
		}
	}
	return exitOK, true
}

// isSet reports whether the command line gave the flag name.
func (c *cmdFlags) isSet(name string) bool {
	set := false
	c.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
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
