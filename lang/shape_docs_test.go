package lang

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/lang/setting"
	"github.com/infercrane/infercrane/lang/shape"
)

// TestShapeDocsFollowTheDeclaration: docs/language/shape.md has a row for
// every attribute lang/shape declares, whose type column says its kind
// and lower bound and whose default column its declared default, so a new
// setting is documented where the shape block is, and a changed bound or
// default cannot leave the page behind.
func TestShapeDocsFollowTheDeclaration(t *testing.T) {
	docsFollowDeclaration(t, "../docs/language/shape.md", "shape", shape.Attributes())
}

// TestRuntimeDocsFollowTheDeclaration: the same for docs/language/runtime.md
// and the runtime settings lang/engine declares.
func TestRuntimeDocsFollowTheDeclaration(t *testing.T) {
	docsFollowDeclaration(t, "../docs/language/runtime.md", "runtime", engine.Fields())
}

// docsFollowDeclaration checks a block's reference page against the
// settings its declaration gives the block.
func docsFollowDeclaration(t *testing.T, page, block string, fields []setting.Field) {
	t.Helper()
	doc, err := os.ReadFile(page)
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
	kinds := map[setting.Kind]string{setting.Whole: "number (whole", setting.Number: "number", setting.String: "string", setting.Bool: "bool", setting.Strings: "list(string)"}
	for _, f := range fields {
		row, ok := rows[f.Name]
		if !ok {
			t.Errorf("%s has no row for the %s attribute `%s`", page, block, f.Name)
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
			bound := op + strconv.FormatFloat(f.Min.Value, 'f', -1, 64)
			if f.Max > 0 && f.Max <= 1 {
				bound = rangeText(*f.Min, f.Max)
			}
			if !strings.Contains(typ, bound) {
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
