package lang

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
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
	return typoFirst(diags)
}

var (
	suggestedName  = regexp.MustCompile(`Did you mean "([^"]+)"\?`)
	missingArgName = regexp.MustCompile(`^The argument "([^"]+)" is required`)
)

// typoFirst leaves out the "Missing required argument" of an argument that
// an "Unsupported argument" suggests (a misspelt required argument is one
// mistake, and the suggestion is its fix), saying in the suggestion that
// the argument is required.
func typoFirst(diags hcl.Diagnostics) hcl.Diagnostics {
	suggested := map[string]*hcl.Diagnostic{}
	for _, d := range diags {
		if m := suggestedName.FindStringSubmatch(d.Detail); d.Summary == "Unsupported argument" && m != nil {
			suggested[m[1]] = d
		}
	}
	if len(suggested) == 0 {
		return diags
	}
	out := diags[:0:0]
	for _, d := range diags {
		if m := missingArgName.FindStringSubmatch(d.Detail); d.Summary == "Missing required argument" && m != nil && suggested[m[1]] != nil {
			t := suggested[m[1]]
			t.Detail = addSentence(t.Detail, fmt.Sprintf("(%q is required, and the block has no other definition of it.)", m[1]))
			continue
		}
		out = append(out, d)
	}
	return out
}

func addSentence(detail, s string) string {
	if s == "" {
		return detail
	}
	if detail == "" {
		return s
	}
	return detail + " " + s
}

// Explain adds suggestions to HCL's evaluation diagnostics: the closest
// attribute (and the full list) for an unsupported attribute of an object,
// such as lane.ttft_p59_ms, and the closest function for an unknown one.
// Load applies it to its own diagnostics; code that evaluates spec
// expressions itself (gate conditions) can apply it too.
func Explain(diags hcl.Diagnostics) hcl.Diagnostics {
	for _, d := range diags {
		switch d.Summary {
		case "Unsupported attribute":
			if names, missing, ok := attributeChoices(d); ok {
				d.Detail = addSentence(addSentence(d.Detail, strings.TrimSpace(didYouMean(missing, names))),
					fmt.Sprintf("It has: %s.", strings.Join(names, ", ")))
			}
		case "Call to unknown function":
			if call, ok := d.Expression.(*hclsyntax.FunctionCallExpr); ok {
				d.Detail = addSentence(addSentence(d.Detail, strings.TrimSpace(didYouMean(call.Name, sortedKeys(Functions())))),
					"The spec language reference lists every function.")
			}
		}
	}
	return diags
}

// attributeChoices finds, for an "Unsupported attribute" diagnostic on a
// reference such as model.qwen06.maxcontext, the attributes the object does
// have and the name that was asked for.
func attributeChoices(d *hcl.Diagnostic) ([]string, string, bool) {
	expr, ok := d.Expression.(*hclsyntax.ScopeTraversalExpr)
	if !ok || d.EvalContext == nil || d.Subject == nil {
		return nil, "", false
	}
	t := expr.Traversal
	for i := 1; i < len(t); i++ {
		step, ok := t[i].(hcl.TraverseAttr)
		if !ok || step.SrcRange != *d.Subject {
			continue
		}
		v, diags := t[:i].TraverseAbs(d.EvalContext)
		if diags.HasErrors() || !v.IsKnown() || v.IsNull() || !v.Type().IsObjectType() {
			return nil, "", false
		}
		var names []string
		for n := range v.Type().AttributeTypes() {
			names = append(names, n)
		}
		return sortedStrings(names), step.Name, len(names) > 0
	}
	return nil, "", false
}
