package lang

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// Load reads the spec at path (a directory of *.hcl files plus its
// *.auto.vars.hcl files, or one file) and evaluates it into a Config.
//
// Load always returns a non-nil Config whose Files hold every source read,
// so that callers can render diagnostics with snippets; the Config is
// complete only when diags has no errors.
func Load(path string, opts Options) (*Config, hcl.Diagnostics) {
	dir, spec, autoVars, diags := readSpec(path)
	if diags.HasErrors() {
		cfg := newConfig(dir)
		for _, s := range append(spec, autoVars...) {
			cfg.Files[s.name] = s.src
		}
		return cfg, diags
	}
	cfg, d := load(dir, spec, autoVars, opts)
	return cfg, append(diags, d...)
}

// LoadSource evaluates a spec held in memory as one file named filename
// (relative paths in it, such as a trace profile, are relative to dir).
// Tests and tools use it to build a Config without touching the disk.
func LoadSource(dir, filename string, src []byte, opts Options) (*Config, hcl.Diagnostics) {
	return load(dir, []source{{filename, src}}, nil, opts)
}

func newConfig(dir string) *Config {
	return &Config{
		Dir:       dir,
		Files:     map[string][]byte{},
		Variables: map[string]*Variable{},
		Locals:    map[string]cty.Value{},
		Traces:    map[string]*Trace{},
		Models:    map[string]*Model{},
		GPUs:      map[string]*GPU{},
		Runtimes:  map[string]*Runtime{},
		Executors: map[string]*Executor{},
		Shapes:    map[string]*Shape{},
		Searches:  map[string]*Search{},
		Gates:     map[string]*Gate{},
		Screens:   map[string]*Screen{},
	}
}

// loader carries the state of one Load.
type loader struct {
	opts   Options
	cfg    *Config
	parser *hclparse.Parser
	diags  hcl.Diagnostics
	// planRuns is what MaxPlanRuns leaves to the screens not decoded yet.
	planRuns int

	// decls holds every named declaration by address ("model.qwen06").
	decls map[string]*decl
	// declOrder lists decls in source order.
	declOrder []*decl
	// names lists the declared names per kind, for suggestions.
	names map[string][]string
	// values holds each evaluated declaration's value per kind and name.
	values map[string]map[string]cty.Value
	// varValues are the final variable values.
	varValues map[string]cty.Value
	// varObject is var as expressions see it, built once.
	varObject cty.Value
	functions map[string]function.Function
	varDecls  map[string]*variableDecl
	// instVals lists every evaluated block instance per kind.
	instVals map[string][]namedVal
	// externalTypes and externalSchemas cache what ExternalExecutors said
	// (nil until a spec names a type that is not built in).
	externalTypes   []string
	externalSchemas map[string]*ExecutorSchema
}

func load(dir string, spec, autoVars []source, opts Options) (*Config, hcl.Diagnostics) {
	l := &loader{
		opts:      opts,
		cfg:       newConfig(dir),
		parser:    hclparse.NewParser(),
		decls:     map[string]*decl{},
		names:     map[string][]string{},
		values:    map[string]map[string]cty.Value{},
		varValues: map[string]cty.Value{},
		functions: Functions(),
		varDecls:  map[string]*variableDecl{},
		planRuns:  MaxPlanRuns,
		instVals:  map[string][]namedVal{},
	}
	var files []*hcl.File
	for _, s := range spec {
		l.cfg.Files[s.name] = s.src
		f, d := hclsyntax.ParseConfig(s.src, s.name, hcl.InitialPos)
		l.diags = append(l.diags, d...)
		if body, ok := f.Body.(*hclsyntax.Body); ok && !d.HasErrors() {
			l.diags = append(l.diags, hugeLiterals(body)...)
		}
		if f != nil && f.Body != nil {
			files = append(files, f)
		}
	}
	// required_version is checked before anything else: a spec written for
	// a newer release may use syntax this one does not know.
	if d := l.checkVersion(files); d.HasErrors() {
		return l.cfg, d
	}
	if l.diags.HasErrors() {
		// Syntax errors: evaluating a partial body would only add noise.
		return l.cfg, dedupe(l.diags)
	}
	l.declare(files)
	l.loadVariables(autoVars)
	l.evaluate()
	l.finish()
	diags := Explain(dedupe(l.diags))
	withholdVariableSources(diags, l.cfg.VarFiles)
	sortDiags(diags)
	return l.cfg, diags
}

// dedupe drops repeated diagnostics (a for_each block reports a structural
// problem once per instance otherwise).
func dedupe(diags hcl.Diagnostics) hcl.Diagnostics {
	type key struct {
		sev             hcl.DiagnosticSeverity
		summary, detail string
		rng             hcl.Range
	}
	seen := map[key]bool{}
	out := diags[:0:0]
	for _, d := range diags {
		k := key{d.Severity, d.Summary, d.Detail, hcl.Range{}}
		if d.Subject != nil {
			k.rng = *d.Subject
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, d)
	}
	return out
}

// errorf builds an error diagnostic at rng.
func errorf(rng hcl.Range, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: rng.Ptr()}
}

// warnf builds a warning diagnostic at rng.
func warnf(rng hcl.Range, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: rng.Ptr()}
}
