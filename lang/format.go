package lang

import (
	"bytes"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// Format returns src in canonical HCL layout (aligned equals signs, two-space
// indentation, normalized spacing), as infercrane fmt writes it. Formatting
// is idempotent: Format of Format's output returns it unchanged. Source with
// syntax errors is returned as is, with the errors; so is source whose
// formatted form would not parse (hclwrite joins tokens that only a space
// keeps apart, e.g. `0.0 .0` becomes `0.0.0`): Format never writes a file
// it cannot read back.
func Format(filename string, src []byte) ([]byte, hcl.Diagnostics) {
	_, diags := hclwrite.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return src, diags
	}
	// Formatted with its final newline: without one, hclwrite keeps the
	// spaces that end the file, and would drop them on the next pass.
	out := hclwrite.Format(append(src[:len(src):len(src)], '\n'))
	// Files end with exactly one newline.
	out = append(bytes.TrimRight(out, "\n"), '\n')
	if _, d := hclwrite.ParseConfig(out, filename, hcl.InitialPos); d.HasErrors() {
		return src, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Formatting would break this file",
			Detail: fmt.Sprintf("Formatted, the file would no longer parse (%s), so it is left as it is. "+
				"The formatter joins tokens that only a space keeps apart, such as a number followed by an attribute access (0.0 .0); write that expression another way.", d.Errs()[0]),
			Subject: d[0].Subject,
		}}
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return []byte{}, nil
	}
	return out, nil
}
