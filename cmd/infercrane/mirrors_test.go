package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// updateMirrors rewrites testdata/setting-files.txt from the tree.
var updateMirrors = flag.Bool("update-mirrors", false, "rewrite testdata/setting-files.txt from the tree")

// settingFilesPath is the checked-in list of where each setting may be named.
const settingFilesPath = "testdata/setting-files.txt"

// settingFiles is, per setting, its spellings and the non-test Go files of
// the module that name it.
type settingFiles struct {
	name      string   // the setting's HCL name, e.g. "burstiness"
	spellings []string // identifiers and string words that name it
	files     []string // paths inside the module, sorted
}

// readSettingFiles parses the list: a "setting NAME: SPELLING ..." line
// opens a setting, each indented line below it is a file; # starts a
// comment.
func readSettingFiles(path string) ([]settingFiles, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []settingFiles
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		case strings.HasPrefix(line, "setting "):
			name, spell, ok := strings.Cut(strings.TrimPrefix(line, "setting "), ":")
			if !ok {
				return nil, fmt.Errorf("%s:%d: want \"setting NAME: SPELLING ...\"", path, n)
			}
			out = append(out, settingFiles{name: strings.TrimSpace(name), spellings: strings.Fields(spell)})
		case len(out) > 0 && (strings.HasPrefix(line, "\t") || strings.HasPrefix(line, " ")):
			out[len(out)-1].files = append(out[len(out)-1].files, trimmed)
		default:
			return nil, fmt.Errorf("%s:%d: a file line must be indented below a setting line", path, n)
		}
	}
	return out, sc.Err()
}

// writeSettingFiles writes the list in the format readSettingFiles reads.
func writeSettingFiles(path string, settings []settingFiles) error {
	var b strings.Builder
	b.WriteString(settingFilesHeader)
	for _, s := range settings {
		fmt.Fprintf(&b, "\nsetting %s: %s\n", s.name, strings.Join(s.spellings, " "))
		for _, f := range s.files {
			fmt.Fprintf(&b, "\t%s\n", f)
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

const settingFilesHeader = `# Where each setting may be named: the non-test Go files of the module whose
# identifiers or string literals spell it (comments do not count).
# TestSettingMirrors fails when a file not listed here names a setting (a new
# mirror: derive the value from the setting's one declaration instead) and
# when a listed file no longer does (the list only shrinks by hand). A file
# that must name the setting is added with
#   go test ./cmd/infercrane -run TestSettingMirrors -update-mirrors
# and the growth shows in review.
`

// namingFiles lists the non-test Go files under root (paths inside it)
// whose identifiers or string literals spell one of spellings: an
// identifier equal to a spelling, or a string literal with a spelling as a
// whole word.
func namingFiles(root string, spellings []string) ([]string, error) {
	var words []string
	for _, s := range spellings {
		words = append(words, regexp.QuoteMeta(s))
	}
	inString := regexp.MustCompile(`(^|[^A-Za-z0-9_-])(` + strings.Join(words, "|") + `)($|[^A-Za-z0-9_-])`)
	var out []string
	err := goFiles(root, nil, func(rel, path string) error {
		if strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if names(src, spellings, inString) {
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// names reports whether the Go source src spells the setting in an
// identifier or a string literal.
func names(src []byte, spellings []string, inString *regexp.Regexp) bool {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	for {
		_, tok, lit := s.Scan()
		switch tok {
		case token.EOF:
			return false
		case token.IDENT:
			if slices.Contains(spellings, lit) {
				return true
			}
		case token.STRING:
			if v, err := strconv.Unquote(lit); err == nil && inString.MatchString(v) {
				return true
			}
		}
	}
}

// settingMirrorProblems compares the list at listPath with the tree at root.
func settingMirrorProblems(root, listPath string) ([]string, error) {
	settings, err := readSettingFiles(listPath)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, s := range settings {
		got, err := namingFiles(root, s.spellings)
		if err != nil {
			return nil, err
		}
		for _, f := range got {
			if !slices.Contains(s.files, f) {
				problems = append(problems, fmt.Sprintf("%s names the setting %s (%s) and is not in %s: a new mirror; derive it from the setting's declaration, or add the file with -update-mirrors if it must name it", f, s.name, strings.Join(s.spellings, ", "), settingFilesPath))
			}
		}
		for _, f := range s.files {
			if !slices.Contains(got, f) {
				problems = append(problems, fmt.Sprintf("%s no longer names the setting %s: remove it from %s", f, s.name, settingFilesPath))
			}
		}
	}
	return problems, nil
}

// TestSettingMirrors is the change-cost check: where each setting may be
// named is checked in (testdata/setting-files.txt), and a file that starts
// naming one (a new mirror of the setting, one more place a change must
// reach) fails here, as does a listed file that stopped.
func TestSettingMirrors(t *testing.T) {
	root := repoRoot(t)
	if *updateMirrors {
		settings, err := readSettingFiles(settingFilesPath)
		if err != nil {
			t.Fatal(err)
		}
		for i := range settings {
			if settings[i].files, err = namingFiles(root, settings[i].spellings); err != nil {
				t.Fatal(err)
			}
		}
		if err := writeSettingFiles(settingFilesPath, settings); err != nil {
			t.Fatal(err)
		}
	}
	problems, err := settingMirrorProblems(root, settingFilesPath)
	if err != nil {
		t.Fatal(err)
	}
	settings, _ := readSettingFiles(settingFilesPath)
	if len(settings) < 5 {
		t.Fatalf("only %d settings read from %s; the list is broken", len(settings), settingFilesPath)
	}
	for _, s := range settings {
		pkgs := map[string]bool{}
		for _, f := range s.files {
			pkgs[filepath.Dir(f)] = true
		}
		t.Logf("%s: %d files in %d packages", s.name, len(s.files), len(pkgs))
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestSettingMirrorsCatchesANewMirror makes sure the check can fail: in a
// tree whose list matches, a new file with a field spelled like the
// setting, a string naming it, and a listed file that dropped it are all
// named, and a comment or a longer word is not.
func TestSettingMirrorsCatchesANewMirror(t *testing.T) {
	root := writeTree(t, map[string]string{
		"lang/shape.go":        "package lang\n\nvar attrs = []string{\"burstiness\"}\n",
		"planner/inputs.go":    "package planner\n\ntype In struct{ Burstiness float64 }\n",
		"executor/spec.go":     "package executor\n\n// Burstiness is mentioned in a comment only.\nvar s = \"burstiness_extra\"\n",
		"executor/mirror.go":   "package executor\n\ntype Mirror struct{ Burstiness float64 }\n",
		"executor/report/r.go": "package report\n\nvar k = \"workload.burstiness\"\n",
		"lang/shape_test.go":   "package lang\n\nvar t = \"burstiness\"\n",
	})
	list := filepath.Join(t.TempDir(), "list.txt")
	if err := writeSettingFiles(list, []settingFiles{{name: "burstiness", spellings: []string{"burstiness", "Burstiness"},
		files: []string{"executor/spec.go", "lang/shape.go", "planner/inputs.go"}}}); err != nil {
		t.Fatal(err)
	}
	problems, err := settingMirrorProblems(root, list)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, strings.SplitN(p, ":", 2)[0])
	}
	want := []string{
		"executor/mirror.go names the setting burstiness (burstiness, Burstiness) and is not in testdata/setting-files.txt",
		"executor/report/r.go names the setting burstiness (burstiness, Burstiness) and is not in testdata/setting-files.txt",
		"executor/spec.go no longer names the setting burstiness",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
