package lang

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang/shape"
)

// TestShapeDocsFollowTheDeclaration: docs/language/shape.md has a row for
// every attribute lang/shape declares, whose type column says its kind
// and lower bound and whose default column its declared default, so a new
// setting is documented where the shape block is, and a changed bound or
// default cannot leave the page behind.
func TestShapeDocsFollowTheDeclaration(t *testing.T) {
	doc, err := os.ReadFile("../docs/language/shape.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if _, seen := rows[name]; !seen {
			rows[name] = cells[2:]
		}
	}
	kinds := map[shape.Kind]string{shape.Whole: "number (whole", shape.Number: "number", shape.String: "string", shape.Bool: "bool"}
	for _, f := range shape.Attributes() {
		row, ok := rows[f.Name]
		if !ok {
			t.Errorf("docs/language/shape.md has no row for the shape attribute `%s`", f.Name)
			continue
		}
		typ, def := row[0], row[1]
		if !strings.Contains(typ, kinds[f.Kind]) {
			t.Errorf("`%s`: the type column %q does not say %q", f.Name, typ, kinds[f.Kind])
		}
		if f.Min != nil {
			op := ">= "
			if f.Min.Strict {
				op = "> "
			}
			if bound := op + strconv.FormatFloat(f.Min.Value, 'f', -1, 64); !strings.Contains(typ, bound) {
				t.Errorf("`%s`: the type column %q does not say %q", f.Name, typ, bound)
			}
		}
		switch {
		case f.Required && !strings.Contains(def, "required"):
			t.Errorf("`%s` is required; the default column says %q", f.Name, def)
		case f.Default != "" && !strings.Contains(def, "`"+f.Default+"`"):
			t.Errorf("`%s` defaults to %s; the default column says %q", f.Name, f.Default, def)
		}
	}
}
