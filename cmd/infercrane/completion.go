package main

import (
	"github.com/infercrane/infercrane/planner/state"

	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// addCompletionCommands registers the commands of this file (called by setupCommands).
func addCompletionCommands() {
	register(&command{
		Name:     "completion",
		Synopsis: "Print a shell completion script (bash or zsh) for commands and flags",
		Run:      runCompletion,
	})
	register(&command{
		Name:     "__complete",
		Synopsis: "List completions of a partial command line (used by the completion scripts)",
		Run:      runComplete,
		Hidden:   true,
	})
}

const bashCompletion = `# bash completion for infercrane; load it with:
#   source <(infercrane completion bash)
# bash splits words at COMP_WORDBREAKS ("=" and ":" among them), so the
# line is split here at blanks only, as infercrane reads it, and what the
# current bash word does not cover ("-target" of "-target=s/a") is taken
# off each completion.
_infercrane() {
  local IFS=$'\n' line="${COMP_LINE:0:COMP_POINT}" cur="${COMP_WORDS[COMP_CWORD]}"
  local -a words
  IFS=$' \t' read -ra words <<< "$line"
  [[ -z $line || $line == *[[:blank:]] ]] && words+=("")
  local word="${words[${#words[@]}-1]}"
  local pre="${word%"$cur"}"
  COMPREPLY=( $(infercrane __complete "${words[@]:1}" 2>/dev/null) )
  COMPREPLY=( "${COMPREPLY[@]#"$pre"}" )
}
complete -o default -F _infercrane infercrane
`

const zshCompletion = `#compdef infercrane
# zsh completion for infercrane; load it with:
#   source <(infercrane completion zsh)
_infercrane() {
  local -a c
  c=("${(@f)$(infercrane __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  if (( ${#c} )) && [[ -n ${c[1]} ]]; then
    compadd -a c
  else
    _files
  fi
}
if (( $+functions[compdef] )); then
  compdef _infercrane infercrane
fi
`

func runCompletion(env *cliEnv, args []string) int {
	fs := newFlags(env, "completion", usageDoc{
		Usage: "infercrane completion bash|zsh",
		About: "Prints a completion script for the shell: it completes command names, subcommands and\n" +
			"each command's flags, and file names for arguments.",
		Examples: []string{
			"source <(infercrane completion bash)",
			"infercrane completion bash > /etc/bash_completion.d/infercrane",
			"infercrane completion zsh > \"${fpath[1]}/_infercrane\"",
		},
	})
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageError("name the shell: bash or zsh")
	}
	switch pos[0] {
	case "bash":
		fmt.Fprint(env.Stdout, bashCompletion)
	case "zsh":
		fmt.Fprint(env.Stdout, zshCompletion)
	default:
		return fs.usageError("no completion for shell %q; choose bash or zsh", pos[0])
	}
	return exitOK
}

// runComplete prints the completions of the last word of args, one a line:
// command names while no command is complete, then the command's flags
// when the word starts with "-". Nothing (the shell completes file names)
// otherwise.
func runComplete(env *cliEnv, args []string) int {
	if len(args) == 0 {
		args = []string{""}
	}
	cur, words := args[len(args)-1], args[:len(args)-1]
	for len(words) > 0 && strings.HasPrefix(words[0], "-") { // global flags
		if words[0] == "-chdir" && len(words) > 1 {
			words = words[1:]
		}
		words = words[1:]
	}
	var out []string
	c, _ := lookup(words)
	switch {
	case c == nil && strings.HasPrefix(cur, "-") && len(words) == 0:
		out = []string{"-chdir=", "-help", "-no-color", "-version"}
	case c == nil:
		prefix := strings.Join(append(append([]string{}, words...), ""), " ")
		seen := map[string]bool{}
		for name, cmd := range commands {
			if cmd.Hidden || !strings.HasPrefix(name, prefix) {
				continue
			}
			word, _, _ := strings.Cut(strings.TrimPrefix(name, prefix), " ")
			if strings.HasPrefix(word, cur) && !seen[word] {
				seen[word] = true
				out = append(out, word)
			}
		}
		if len(words) == 0 && strings.HasPrefix("help", cur) {
			out = append(out, "help")
		}
	case laneArg(c, words, cur):
		prefix := cur
		if t := strings.TrimLeft(cur, "-"); strings.HasPrefix(t, "target=") || strings.HasPrefix(t, "replace=") {
			_, prefix, _ = strings.Cut(t, "=")
		}
		out = completeLanes(words, prefix, cur)
	case strings.HasPrefix(cur, "-"):
		out = commandFlags(env, c, cur)
	}
	sort.Strings(out)
	for _, o := range out {
		fmt.Fprintln(env.Stdout, o)
	}
	return exitOK
}

// laneArg reports whether cur names a lane: the value of -target or
// -replace (as the next word or after "="), or an argument of state show
// and state rm.
func laneArg(c *command, words []string, cur string) bool {
	if len(words) > 0 {
		if prev := strings.TrimLeft(words[len(words)-1], "-"); prev == "target" || prev == "replace" {
			return true
		}
	}
	t := strings.TrimLeft(cur, "-")
	if strings.HasPrefix(t, "target=") || strings.HasPrefix(t, "replace=") {
		return true
	}
	return (c.Name == "state show" || c.Name == "state rm") && !strings.HasPrefix(cur, "-")
}

// completeLanes lists the lane IDs and keys of the state (the -state the
// words give, else .infercrane here) that start with prefix, each written
// as cur would continue it ("-target=" kept).
func completeLanes(words []string, prefix, cur string) []string {
	dir := ".infercrane"
	for i, w := range words {
		if t := strings.TrimLeft(w, "-"); t == "state" && i+1 < len(words) {
			dir = words[i+1]
		} else if v, ok := strings.CutPrefix(t, "state="); ok {
			dir = v
		}
	}
	snap, err := state.Load(dir)
	if err != nil {
		return nil
	}
	lead := strings.TrimSuffix(cur, prefix)
	var out []string
	for id, l := range snap.Lanes {
		for _, name := range []string{id, l.Key} {
			if name != "" && strings.HasPrefix(name, prefix) {
				out = append(out, lead+name)
			}
		}
	}
	return out
}

// commandFlags lists the flags of c that start with prefix, by running c's
// -h with output thrown away and looking at the flag set it made.
func commandFlags(env *cliEnv, c *command, prefix string) []string {
	var fs *cmdFlags
	quiet := &cliEnv{Stdin: env.Stdin, Stdout: io.Discard, Stderr: io.Discard, Getenv: env.Getenv, Environ: env.Environ,
		onFlags: func(f *cmdFlags) {
			if fs == nil {
				fs = f
			}
		}}
	c.Run(quiet, []string{"-h"})
	if fs == nil {
		return nil
	}
	dashes := "-"
	if strings.HasPrefix(prefix, "--") {
		dashes = "--"
	}
	var out []string
	fs.VisitAll(func(f *flag.Flag) {
		if name := dashes + f.Name; strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	})
	return out
}
