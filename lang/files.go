package lang

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// source is one file's name and content.
type source struct {
	name string
	src  []byte
}

// isVarsFile reports whether name is a variable file (*.vars.hcl), which
// is never read as part of the spec itself.
func isVarsFile(name string) bool { return strings.HasSuffix(name, ".vars.hcl") }

// isAutoVarsFile reports whether name is loaded automatically for
// variables (*.auto.vars.hcl, or the JSON form *.auto.vars.json).
func isAutoVarsFile(name string) bool {
	return strings.HasSuffix(name, ".auto.vars.hcl") || strings.HasSuffix(name, ".auto.vars.json")
}

// readSpec reads the spec at path: every *.hcl file of a directory (except
// variable files) plus its *.auto.vars.hcl files, or one file. It returns
// the directory, the spec sources and the auto variable sources, sorted by
// name.
func readSpec(path string) (dir string, spec, autoVars []source, diags hcl.Diagnostics) {
	info, err := os.Stat(path)
	if err != nil {
		return "", nil, nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read spec",
			Detail:   fmt.Sprintf("%v. Pass a directory of *.hcl files or one .hcl file.", err),
		}}
	}
	if !info.IsDir() {
		src, err := os.ReadFile(path)
		if err != nil {
			return "", nil, nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read spec", Detail: err.Error() + "."}}
		}
		return filepath.Dir(path), []source{{path, src}}, nil, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return "", nil, nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read spec directory", Detail: err.Error() + "."}}
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".hcl") || isAutoVarsFile(e.Name())) && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(path, n)
		src, err := os.ReadFile(p)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read spec file", Detail: err.Error() + "."})
			continue
		}
		switch {
		case isAutoVarsFile(n):
			autoVars = append(autoVars, source{p, src})
		case isVarsFile(n):
			// explicit -var-file only
		default:
			spec = append(spec, source{p, src})
		}
	}
	if len(spec) == 0 && !diags.HasErrors() {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "No spec files",
			Detail:   fmt.Sprintf("The directory %s has no *.hcl spec files. Write one (see examples/quickstart/main.hcl) or pass the path of a spec.", path),
		})
	}
	return path, spec, autoVars, diags
}
