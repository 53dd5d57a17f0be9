package lang

import (
	"fmt"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

var infercraneBlockSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "infercrane"}},
}

var infercraneAttrSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "required_version"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "backend", LabelNames: []string{"type"}}},
}

// checkVersion reads every infercrane block and checks required_version
// against the running release. When the constraint fails it returns only
// that error.
func (l *loader) checkVersion(files []*hcl.File) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var first *hcl.Block
	for _, f := range files {
		content, _, _ := f.Body.PartialContent(infercraneBlockSchema)
		if content == nil {
			continue
		}
		for _, b := range content.Blocks {
			if first != nil {
				l.diags = append(l.diags, errorf(b.DefRange, "Duplicate infercrane block",
					"An infercrane block was already declared at %s. Merge the two into one.", first.DefRange))
				continue
			}
			first = b
			c, d := b.Body.Content(infercraneAttrSchema)
			l.diags = append(l.diags, withHints(d, "The infercrane block", infercraneAttrSchema)...)
			for _, bb := range c.Blocks {
				l.decodeBackend(bb)
			}
			attr, ok := c.Attributes["required_version"]
			if !ok {
				continue
			}
			v, d := attr.Expr.Value(nil)
			if d.HasErrors() || v.Type() != cty.String || !v.IsKnown() || v.IsNull() {
				l.diags = append(l.diags, errorf(attr.Expr.Range(), "Invalid required_version",
					`required_version must be a literal string such as ">= 0.1".`))
				continue
			}
			l.cfg.RequiredVersion = v.AsString()
			cons, err := version.NewConstraint(v.AsString())
			if err != nil {
				l.diags = append(l.diags, errorf(attr.Expr.Range(), "Invalid required_version",
					`%q is not a version constraint: %v. Write constraints such as ">= 0.1" or "~> 0.1, != 0.1.3".`, v.AsString(), err))
				continue
			}
			if l.opts.Version == "" {
				continue
			}
			running, err := version.NewVersion(l.opts.Version)
			if err != nil {
				continue
			}
			if !cons.Check(running) {
				diags = append(diags, errorf(attr.Expr.Range(), "Unsupported infercrane version",
					"This spec requires infercrane %s, but this is infercrane v%s. Install a release that satisfies the constraint, or relax required_version if the spec works with this one.",
					v.AsString(), fmt.Sprint(running)))
			}
		}
	}
	return diags
}
