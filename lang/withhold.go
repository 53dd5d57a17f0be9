package lang

import (
	"bytes"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// WithheldReason is what diagnostics about a variable file or value say in
// place of the source line they would otherwise quote.
const WithheldReason = "source not shown: variable files and values may hold secrets"

// withheldDetail replaces the detail of a parser's or evaluator's
// diagnostic about a variable source when that detail quotes the source.
const withheldDetail = "(The detail is not shown either: it quotes the variable file, which may hold secrets.)"

// valueSourcePrefix starts the pseudo file name of a value given with -var
// or an INFERCRANE_VAR_* environment variable.
const valueSourcePrefix = "<value for var."

// withheld is the Extra of a diagnostic whose source text must not be
// shown; it keeps the Extra it replaced (see hcl.DiagnosticExtra).
type withheld struct{ inner any }

// UnwrapDiagnosticExtra returns the Extra withheld wraps.
func (w withheld) UnwrapDiagnosticExtra() any { return w.inner }

// SourceWithheld reports whether d is about a variable file or a -var or
// environment value, whose source text renderers must not show: the loader
// marks such diagnostics, and any range in a *.vars.hcl or *.vars.json file
// or a value's pseudo file counts too, wherever the diagnostic was made.
func SourceWithheld(d *hcl.Diagnostic) bool {
	if d == nil {
		return false
	}
	if _, ok := hcl.DiagnosticExtra[withheld](d); ok {
		return true
	}
	return d.Subject != nil && isVariableSourceName(d.Subject.Filename) ||
		d.Context != nil && isVariableSourceName(d.Context.Filename)
}

// isVariableSourceName reports whether a file name is, by its name alone, a
// variable file or a value's pseudo file.
func isVariableSourceName(name string) bool {
	return strings.HasSuffix(name, ".vars.hcl") || strings.HasSuffix(name, ".vars.json") ||
		strings.HasPrefix(name, valueSourcePrefix)
}

// withholdVariableSources marks every diagnostic whose range lies in one of
// the variable files varFiles (any name given to -var-file counts) or in a
// value's pseudo file, so renderers show its location but not its source.
func withholdVariableSources(diags hcl.Diagnostics, varFiles []string) {
	names := map[string]bool{}
	for _, f := range varFiles {
		names[f] = true
	}
	in := func(r *hcl.Range) bool {
		return r != nil && (names[r.Filename] || isVariableSourceName(r.Filename))
	}
	for _, d := range diags {
		if _, done := hcl.DiagnosticExtra[withheld](d); !done && (in(d.Subject) || in(d.Context)) {
			d.Extra = withheld{d.Extra}
		}
	}
}

// scrubDetails replaces the detail of each diagnostic (made by the HCL or
// JSON parser or evaluator about the variable file src) that may quote the
// file: such a detail may repeat a value ("There is no variable named ...",
// "... is not a valid JSON keyword") that could not be parsed, so the
// redaction list does not know it. A detail counts as quoting when it holds
// a word of the file (sourceWords), or one of its own words occurs in the
// file (the JSON scanner cuts tokens where the HCL scanner does not); the
// declared variable names and the keywords do not count.
func scrubDetails(diags hcl.Diagnostics, src []byte, filename string, declared map[string]*variableDecl) {
	if len(diags) == 0 {
		return
	}
	words := sourceWords(src, filename, declared)
	for _, d := range diags {
		if quotesSource(d.Detail, src, words, declared) {
			d.Detail = withheldDetail
		}
	}
}

// quotesSource reports whether detail holds one of words or a word of its
// own (of at least minQuotedWord+1 characters, not a declared name) that
// occurs in src.
func quotesSource(detail string, src []byte, words []string, declared map[string]*variableDecl) bool {
	for _, w := range words {
		if strings.Contains(detail, w) {
			return true
		}
	}
	for _, w := range strings.Fields(detail) {
		w = strings.Trim(w, "\"'`.,;:()[]{}")
		if _, isName := declared[w]; len(w) > minQuotedWord && !isName && bytes.Contains(src, []byte(w)) {
			return true
		}
	}
	return false
}

// minQuotedWord is the shortest word of a variable file that scrubDetails
// looks for in a detail; shorter ones match ordinary text too often.
const minQuotedWord = 3

// sourceWords lists the words of a variable file that a diagnostic could
// quote: the text of its identifiers, literals and invalid characters, as
// the HCL scanner (which reads JSON well enough for this) splits them,
// without comments, punctuation, the declared variable names and keywords.
func sourceWords(src []byte, filename string, declared map[string]*variableDecl) []string {
	toks, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	seen := map[string]bool{"true": true, "false": true, "null": true}
	for name := range declared {
		seen[name] = true
	}
	var out []string
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenIdent, hclsyntax.TokenQuotedLit, hclsyntax.TokenStringLit, hclsyntax.TokenNumberLit,
			hclsyntax.TokenInvalid, hclsyntax.TokenBadUTF8:
		default:
			continue
		}
		for _, w := range strings.Fields(string(t.Bytes)) {
			if len(w) >= minQuotedWord && !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	return out
}
