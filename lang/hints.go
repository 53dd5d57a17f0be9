package lang

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// withHints appends to HCL's structural diagnostics about a block body what
// the block accepts, so that the message says how to fix it.
func withHints(diags hcl.Diagnostics, what string, schema *hcl.BodySchema) hcl.Diagnostics {
	for _, d := range diags {
		switch d.Summary {
		case "Unsupported argument":
			var names []string
			for _, a := range schema.Attributes {
				names = append(names, a.Name)
			}
			d.Detail = addSentence(d.Detail, fmt.Sprintf("%s accepts: %s.", what, strings.Join(names, ", ")))
		case "Unsupported block type":
			var names []string
			for _, b := range schema.Blocks {
				names = append(names, b.Type)
			}
			if len(names) == 0 {
				d.Detail = addSentence(d.Detail, what+" has no nested blocks.")
			} else {
				d.Detail = addSentence(d.Detail, fmt.Sprintf("%s accepts the blocks: %s.", what, strings.Join(names, ", ")))
			}
		case "Missing required argument":
			d.Detail = addSentence(d.Detail, "Add it to the block.")
		}
	}
	return diags
}

func addSentence(detail, s string) string {
	if detail == "" {
		return s
	}
	return detail + " " + s
}
