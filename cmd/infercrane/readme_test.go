package main

import (
	"bufio"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeCommand is an infercrane command line a documentation page shows.
type readmeCommand struct {
	file string
	line int
	text string
}

// docFiles lists the documentation: README.md, every Markdown file under
// docs/ and the examples' READMEs, as paths relative to the repository
// root.
func docFiles(t *testing.T) []string {
	files := []string{"README.md"}
	err := filepath.WalkDir("../../docs", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, strings.TrimPrefix(filepath.ToSlash(p), "../../"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob("../../examples/*/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range examples {
		files = append(files, strings.TrimPrefix(filepath.ToSlash(e), "../../"))
	}
	return files
}

// docCommands extracts the infercrane command lines of the documentation:
// the lines of its shell code blocks that run infercrane (also after "$ ",
// "&&", "|" or "go run ./cmd/infercrane"), and the first column of its
// command tables.
func docCommands(t *testing.T) []readmeCommand {
	var out []readmeCommand
	for _, f := range docFiles(t) {
		out = append(out, fileCommands(t, f)...)
	}
	return out
}

// fileCommands extracts the infercrane command lines of one page (a path
// relative to the repository root).
func fileCommands(t *testing.T, name string) []readmeCommand {
	f, err := os.Open("../../" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeCommand
	inCode, inShell, inTable := false, false, false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	tableCell := regexp.MustCompile(`^\| ([^|]+) \|`) // the first cell of a row
	codeSpan := regexp.MustCompile("`([^`]+)`")
	// a command in running text: `infercrane plan -out FILE`
	inlineCommand := regexp.MustCompile("`(?:go run \\./cmd/)?infercrane ([^`|>]+)")
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
			// an example in a command's help (docs/commands.md) or output
			if strings.HasPrefix(strings.TrimSpace(line), "infercrane ") {
				for _, c := range shellCommands(line) {
					out = append(out, readmeCommand{name, n, c})
				}
			}
			continue
		}
		if !inCode {
			switch {
			case strings.HasPrefix(line, "| command |"):
				inTable = true
			case !strings.HasPrefix(line, "|"):
				inTable = false
			}
			if m := tableCell.FindStringSubmatch(strings.ReplaceAll(line, `\|`, "\x00")); m != nil && inTable {
				for _, span := range codeSpan.FindAllStringSubmatch(m[1], -1) {
					out = append(out, readmeCommand{name, n, "infercrane " + strings.ReplaceAll(span[1], "\x00", "|")})
				}
				continue
			}
			for _, m := range inlineCommand.FindAllStringSubmatch(line, -1) {
				out = append(out, readmeCommand{name, n, "infercrane " + m[1]})
			}
			continue
		}
		for _, c := range shellCommands(line) {
			out = append(out, readmeCommand{name, n, c})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out
}

// shellCommands returns the infercrane commands of a shell line: after
// "$ ", "&&", "||", ";" or "|", after VAR=value, and "go run
// ./cmd/infercrane" or "./infercrane" as infercrane; a "#" comment is cut.
func shellCommands(line string) []string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	line = strings.ReplaceAll(line, "go run ./cmd/infercrane", "infercrane")
	line = strings.ReplaceAll(line, "./infercrane ", "infercrane ")
	var out []string
	for _, seg := range shellSeparator.Split(line, -1) {
		seg = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(seg), "$ "))
		for envAssignment.MatchString(seg) {
			seg = seg[strings.IndexByte(seg, ' ')+1:] // VAR=value infercrane ...
		}
		if strings.HasPrefix(seg, "infercrane ") {
			out = append(out, seg)
		}
	}
	return out
}

var (
	shellSeparator = regexp.MustCompile(`&&|\|\||;|\|`)
	envAssignment  = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=\S*\s`)
)

// TestREADMECommandsExist: every infercrane command line the README and
// the pages under docs/ show names a command that exists, and every flag
// it passes is one that command (or the global flags before it) accepts.
func TestREADMECommandsExist(t *testing.T) {
	setupCommands()
	cmds := docCommands(t)
	if len(cmds) < 40 {
		t.Fatalf("found only %d infercrane command lines in README.md and docs/; the extraction is broken", len(cmds))
	}
	if n := len(fileCommands(t, "README.md")); n < 5 {
		t.Fatalf("found only %d infercrane command lines in README.md; the extraction is broken", n)
	}
	t.Logf("%d infercrane command lines in README.md, docs/ and the examples", len(cmds))
	env := &cliEnv{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }, Wire: testWiring(os.Getenv)}
	for _, c := range cmds {
		for _, p := range commandLineProblems(env, c.text) {
			t.Errorf("%s:%d: %q: %s", c.file, c.line, c.text, p)
		}
	}
	// The checker itself catches what it is for.
	for _, bad := range []string{"infercrane plan -bogus .", "infercrane frobnicate", "infercrane -nocolor plan", "infercrane state rm --dry-rn x", "infercrane profile bogus"} {
		if len(commandLineProblems(env, bad)) == 0 {
			t.Errorf("the documentation checker accepts %q", bad)
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
	if strings.HasSuffix(words[0], ":") {
		return out // not a command line: a log line ("infercrane sim: stopped")
	}
	cmd, rest := lookup(words)
	if cmd == nil && len(words) == 1 && len(subcommands(words[0])) > 0 {
		return out // a group: "infercrane profile" lists its subcommands
	}
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

// TestREADMEMainJob runs the README's main job as it says, on a copy of
// the example: `apply -auto-approve examples/quickstart` exits 0 (the
// gate passes), runs 3 runs, writes the four reports the README names,
// and a second apply has nothing to do.
func TestREADMEMainJob(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const reports = "examples/quickstart/.infercrane/reports/quickstart.{evidence.json,md,html,records.parquet}"
	for _, claim := range []string{"apply -auto-approve examples/quickstart", reports, "Run it again and it says there is nothing to do"} {
		if !strings.Contains(string(readme), claim) {
			t.Fatalf("README.md no longer says %q; update this test with it", claim)
		}
	}
	src, err := os.ReadFile("../../examples/quickstart/main.hcl")
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(t.TempDir(), "quickstart")
	if err := os.MkdirAll(spec, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(spec, "main.hcl"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "apply", "-auto-approve", spec)
	if code != 0 || !strings.Contains(out, "3 run(s) completed, 0 failed") || !strings.Contains(out, "1 gate(s) pass, 0 fail") {
		t.Fatalf("apply exited %d, want 0 with 3 runs and the gate passing:\n%s\n%s", code, out, errOut)
	}
	for _, ext := range []string{"evidence.json", "md", "html", "records.parquet"} {
		if st, err := os.Stat(filepath.Join(spec, ".infercrane", "reports", "quickstart."+ext)); err != nil || st.Size() == 0 {
			t.Errorf("report quickstart.%s: %v", ext, err)
		}
	}
	code, out, errOut = runCLI(t, "apply", "-auto-approve", spec)
	if code != 0 || !strings.Contains(out, "No changes: every lane is complete in the state. Nothing to run.") {
		t.Errorf("second apply exited %d, want 0 and nothing to do:\n%s\n%s", code, out, errOut)
	}
}
