package main

import (
	"fmt"
	"io"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
)

// printDiags renders diagnostics for people on stderr.
func printDiags(env *cliEnv, diags hcl.Diagnostics, files map[string][]byte) {
	if len(diags) == 0 {
		return
	}
	w := env.colored(env.Stderr)
	lang.WriteDiagnostics(w, diags, files)
	fmt.Fprintln(w)
	flushColor(w)
}

// flushColor writes what a colour writer holds of an unfinished line.
func flushColor(w io.Writer) {
	if cw, ok := w.(*colorWriter); ok {
		cw.Flush()
	}
}

// plural renders "1 model" or "2 models".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
