package main

import (
	"bufio"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeCommand is an infercrane command line the README shows.
type readmeCommand struct {
	line int
	text string
}

// readmeCommands extracts the infercrane command lines of README.md: the
// lines of its code blocks that run infercrane (also after "$ ", "&&", "|"
// or "go run ./cmd/infercrane"), and the first column of its command table.
func readmeCommands(t *testing.T) []readmeCommand {
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeCommand
	inCode, inShell, inTable := false, false, false
	sc := bufio.NewScanner(f)
	tableCell := regexp.MustCompile("^\\| `([^`]+)`")
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if fence := strings.TrimSpace(line); strings.HasPrefix(fence, "```") {
			if inCode {
				inCode, inShell = false, false
			} else {
				lang := strings.TrimPrefix(fence, "```")
				inCode, inShell = true, lang == "" || lang == "sh" || lang == "bash" || lang == "console" || lang == "shell"
			}
			continue
		}
		if inCode && !inShell {
			continue
		}
		if !inCode {
			switch {
			case strings.HasPrefix(line, "| command |"):
				inTable = true
			case !strings.HasPrefix(line, "|"):
				inTable = false
			}
			if m := tableCell.FindStringSubmatch(line); m != nil && inTable {
				for _, part := range strings.Split(strings.ReplaceAll(m[1], `\|`, "|"), "`, `") {
					out = append(out, readmeCommand{n, "infercrane " + part})
				}
			}
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		line = strings.ReplaceAll(line, "go run ./cmd/infercrane", "infercrane")
		for _, seg := range regexp.MustCompile(`&&|\|\||;|\|`).Split(line, -1) {
			seg = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(seg), "$ "))
			for strings.Contains(seg, "=") && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=\S*\s`).MatchString(seg) {
				seg = seg[strings.IndexByte(seg, ' ')+1:] // VAR=value infercrane ...
			}
			if strings.HasPrefix(seg, "infercrane ") {
				out = append(out, readmeCommand{n, seg})
			}
		}
	}
	return out
}

// TestREADMECommandsExist: every infercrane command line the README shows
// names a command that exists, and every flag it passes is one that
// command (or the global flags before it) accepts.
func TestREADMECommandsExist(t *testing.T) {
	setupCommands()
	cmds := readmeCommands(t)
	if len(cmds) < 40 {
		t.Fatalf("found only %d infercrane command lines in README.md; the extraction is broken", len(cmds))
	}
	env := &cliEnv{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }, Wire: testWiring(os.Getenv)}
	for _, c := range cmds {
		for _, p := range commandLineProblems(env, c.text) {
			t.Errorf("README.md:%d: %q: %s", c.line, c.text, p)
		}
	}
	// The checker itself catches what it is for.
	for _, bad := range []string{"infercrane plan -bogus .", "infercrane frobnicate", "infercrane -nocolor plan", "infercrane state rm --dry-rn x"} {
		if len(commandLineProblems(env, bad)) == 0 {
			t.Errorf("the README checker accepts %q", bad)
		}
	}
}

// commandLineProblems says what is wrong with an infercrane command line:
// an unknown command, global flag or flag of the command.
func commandLineProblems(env *cliEnv, text string) []string {
	var out []string
	global := map[string]bool{"chdir": true, "no-color": true, "version": true, "v": true, "help": true, "h": true}
	words := strings.Fields(text)[1:]
	for len(words) > 0 && strings.HasPrefix(words[0], "-") {
		name, _, hasVal := strings.Cut(strings.TrimLeft(words[0], "-"), "=")
		if !global[name] {
			out = append(out, "unknown global flag "+words[0])
		}
		if name == "chdir" && !hasVal && len(words) > 1 {
			words = words[1:]
		}
		words = words[1:]
	}
	if len(words) == 0 || words[0] == "COMMAND" || words[0] == "help" {
		return out
	}
	if c := words[0][0]; c < 'a' || c > 'z' {
		return out // not a command line: a row of a figures table ("infercrane  201.46 ...")
	}
	cmd, rest := lookup(words)
	if cmd == nil {
		return append(out, "no command "+words[0])
	}
	flags := map[string]bool{}
	for _, f := range commandFlags(env, cmd, "-") {
		flags[strings.TrimLeft(f, "-")] = true
	}
	for _, w := range rest {
		w = strings.Trim(w, "[]()\"'.,")
		if !strings.HasPrefix(w, "-") || w == "-" || w == "--" || strings.HasPrefix(w, "-<") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if name == "" || strings.ContainsAny(name[:1], "0123456789") {
			continue // a negative number or a range such as 10%..90%
		}
		if !flags[name] {
			out = append(out, "'infercrane "+cmd.Name+"' has no flag -"+name)
		}
	}
	return out
}
