package lang

import (
	"bytes"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// Format returns src in canonical HCL layout (aligned equals signs, two-space
// indentation, normalized spacing), as infercrane fmt writes it. Formatting
// is idempotent: Format of Format's output returns it unchanged. Source with
// syntax errors is returned as is, with the errors.
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
	if len(bytes.TrimSpace(out)) == 0 {
		return []byte{}, nil
	}
	return out, nil
}
