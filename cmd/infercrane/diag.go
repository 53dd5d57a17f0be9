package main

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
)

// printDiags renders diagnostics for people on stderr.
func printDiags(env *cliEnv, diags hcl.Diagnostics, files map[string][]byte) {
	if len(diags) == 0 {
		return
	}
	lang.WriteDiagnostics(env.Stderr, diags, files)
	fmt.Fprintln(env.Stderr)
}

// plural renders "1 model" or "2 models".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
