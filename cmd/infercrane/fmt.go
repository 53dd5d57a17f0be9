package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/infercrane/infercrane/lang"
	"github.com/rogpeppe/go-internal/diff"
)

// addFmtCommands registers the commands of this file (called by setupCommands).
func addFmtCommands() {
	register(&command{
		Name:     "fmt",
		Synopsis: "Rewrite spec files in canonical layout",
		Run:      runFmt,
	})
}

func runFmt(env *cliEnv, args []string) int {
	fs := newFlags(env, "fmt", usageDoc{
		Usage: "infercrane fmt [flags] [PATH...]",
		About: "Rewrites the *.hcl files of each PATH (a directory or a file; default .) in canonical\n" +
			"layout. PATH - reads standard input and writes the result to standard output. With -check,\n" +
			"exit status 1 when a file needs formatting or when there is no .hcl file to check.",
		Examples: []string{
			"infercrane fmt",
			"infercrane fmt -check -recursive .",
			"infercrane fmt -diff examples/quickstart/main.hcl",
		},
	})
	check := fs.Bool("check", false, "change nothing; list files that are not formatted and exit 1 if any (or if there are no .hcl files)")
	showDiff := fs.Bool("diff", false, "print a unified diff of the changes")
	recursive := fs.Bool("recursive", false, "also format the .hcl files in subdirectories (hidden ones and .infercrane state skipped)")
	paths, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(paths) == 0 {
		paths = []string{"."}
	}
	if len(paths) == 1 && paths[0] == "-" {
		return fmtStdin(env)
	}
	files, err := hclFiles(paths, *recursive)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane fmt: %v\n", hinted(err))
		return 1
	}
	if len(files) == 0 {
		hint := ""
		if !*recursive {
			hint = " (add -recursive to look in subdirectories)"
		}
		fmt.Fprintf(env.Stderr, "infercrane fmt: no .hcl files in %s%s; nothing was checked\n", strings.Join(paths, ", "), hint)
		return 1
	}
	status := 0
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintf(env.Stderr, "infercrane fmt: %v\n", hinted(err))
			status = 1
			continue
		}
		out, diags := lang.Format(name, src)
		if diags.HasErrors() {
			printDiags(env, diags, map[string][]byte{name: src})
			status = 1
			continue
		}
		if bytes.Equal(src, out) {
			continue
		}
		fmt.Fprintln(env.Stdout, name)
		if *showDiff {
			env.Stdout.Write(diff.Diff(name, src, name+" (formatted)", out))
		}
		if *check {
			status = 1
			continue
		}
		if err := writeFileKeepMode(name, out); err != nil {
			fmt.Fprintf(env.Stderr, "infercrane fmt: %v\n", hinted(err))
			status = 1
		}
	}
	return status
}

// fmtStdin formats standard input to standard output.
func fmtStdin(env *cliEnv) int {
	src, err := io.ReadAll(env.Stdin)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane fmt: reading stdin: %v\n", err)
		return 1
	}
	out, diags := lang.Format("<stdin>", src)
	if diags.HasErrors() {
		printDiags(env, diags, map[string][]byte{"<stdin>": src})
		return 1
	}
	env.Stdout.Write(out)
	return 0
}

// hclFiles expands paths: a directory gives its *.hcl files (and, with
// recursive, those of its subdirectories but hidden ones), a file gives
// itself.
func hclFiles(paths []string, recursive bool) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%v; pass a directory of *.hcl files or a .hcl file", err)
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		if recursive {
			var names []string
			err := filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				hidden := path != p && strings.HasPrefix(d.Name(), ".")
				switch {
				case d.IsDir() && hidden:
					return filepath.SkipDir
				case !d.IsDir() && !hidden && strings.HasSuffix(d.Name(), ".hcl"):
					names = append(names, path)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			sort.Strings(names)
			out = append(out, names...)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".hcl") && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, filepath.Join(p, e.Name()))
			}
		}
		sort.Strings(names)
		out = append(out, names...)
	}
	return out, nil
}

// writeFileKeepMode replaces a file's content, keeping its permissions.
func writeFileKeepMode(name string, data []byte) error {
	mode := os.FileMode(0o644)
	if info, err := os.Stat(name); err == nil {
		mode = info.Mode().Perm()
	}
	return os.WriteFile(name, data, mode)
}
