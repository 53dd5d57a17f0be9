package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// cliCommand matches advice to run a command of the CLI in a message:
// the command quoted ("'infercrane plan -out FILE'", "`infercrane
// cleanup`") or after run, with, use or try ("write it with infercrane
// calibrate"), not a mention ("an infercrane plan", "after infercrane
// calibrate wrote it").
func cliCommand() *regexp.Regexp {
	setupCommands()
	var names []string
	for name := range commands {
		first, _, _ := strings.Cut(name, " ")
		names = append(names, regexp.QuoteMeta(first))
	}
	return regexp.MustCompile("(['`\"]|\\b(run|with|use|try)\\s+)infercrane (" + strings.Join(names, "|") + `)\b`)
}

// libraryErrorsNamingCommands returns, per file, the errors made in the
// non-test Go files below root outside cmd/ directories (fmt.Errorf or
// errors.New with a literal message) whose message names a command of
// the CLI.
func libraryErrorsNamingCommands(root string) (map[string][]string, error) {
	command := cliCommand()
	found := map[string][]string{}
	err := walkGoFiles(root, func(_, name string) bool { return name == "cmd" }, func(rel string, fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok || !(pkg.Name == "fmt" && sel.Sel.Name == "Errorf" || pkg.Name == "errors" && sel.Sel.Name == "New") {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if msg, err := strconv.Unquote(lit.Value); err == nil && command.MatchString(msg) {
				found[rel] = append(found[rel], fmt.Sprintf("%s:%d: %s", rel, fset.Position(lit.Pos()).Line, msg))
			}
			return true
		})
	})
	return found, err
}

// TestLibraryErrorsNameNoCommands holds the rule "plain errors in
// libraries, with CLI hints added in cmd/": no error a package outside
// cmd/ makes tells the user to run an infercrane command. The library
// says what is wrong, with a kind of error (errors.Is) where there is
// something to run about it, and hinted (hints.go) adds the command.
func TestLibraryErrorsNameNoCommands(t *testing.T) {
	found, err := libraryErrorsNamingCommands(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for file, msgs := range found {
		t.Errorf("%s: an error names a command of the CLI; return a kind of error (a var ErrX = errors.New(...) wrapped with %%w) and add the command to hints in cmd/infercrane/hints.go:\n\t%s", file, strings.Join(msgs, "\n\t"))
	}
}

// TestLibraryErrorsNameNoCommandsCatchesOne: the scan finds an error that
// names a command, and not one in a cmd/ directory or a plain message.
func TestLibraryErrorsNameNoCommandsCatchesOne(t *testing.T) {
	root := writeTree(t, map[string]string{
		"planner/x.go": "package planner\nimport (\"errors\"; \"fmt\")\n" +
			"func a() error { return fmt.Errorf(\"%s is stale; run 'infercrane plan' again\", \"x\") }\n" +
			"func b() error { return errors.New(\"run `infercrane cleanup`\") }\n" +
			"func c() error { return errors.New(\"the plan is stale\") }\n" +
			"func e() error { return errors.New(\"x is not an infercrane plan: it was edited after infercrane plan wrote it\") }\n" +
			"func g() error { return errors.New(\"write it with infercrane calibrate\") }\n",
		"plugins/cmd/tool/main.go": "package main\nimport \"errors\"\nfunc d() error { return errors.New(\"run 'infercrane plan'\") }\n",
	})
	found, err := libraryErrorsNamingCommands(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || len(found["planner/x.go"]) != 3 {
		t.Fatalf("found %v, want the three errors of planner/x.go that say to run a command", found)
	}
}

// TestHintedAddsTheCommand: each kind of error hints knows is followed by
// its command however deep it is wrapped; others are left as they are.
func TestHintedAddsTheCommand(t *testing.T) {
	for _, h := range hints {
		err := fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", h.kind))
		if got := hinted(err).Error(); !strings.HasSuffix(got, "; "+h.hint) || !strings.HasPrefix(got, "outer: inner: ") {
			t.Errorf("hinted(%q) = %q, want it followed by %q", err, got, h.hint)
		}
		if !errors.Is(hinted(err), h.kind) {
			t.Errorf("hinted(%q) is no longer %v", err, h.kind)
		}
	}
	plain := errors.New("plain")
	if hinted(plain) != plain || hinted(nil) != nil {
		t.Error("hinted changed an error without a hint")
	}
}
