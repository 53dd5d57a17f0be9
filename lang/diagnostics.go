package lang

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// WriteDiagnostics renders diags for people, in the style of HCL and
// Terraform: a "Error: summary" (or "Warning: ") line, the location as
// "on FILE line N:", the source line with the range marked by carets, and
// the detail. files maps file names to their source (Config.Files).
func WriteDiagnostics(w io.Writer, diags hcl.Diagnostics, files map[string][]byte) error {
	var b strings.Builder
	for i, d := range diags {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(severityWord(d.Severity))
		b.WriteString(": ")
		b.WriteString(d.Summary)
		b.WriteByte('\n')
		if d.Subject != nil {
			r := *d.Subject
			fmt.Fprintf(&b, "\n  on %s line %d, column %d:\n", r.Filename, r.Start.Line, r.Start.Column)
			if SourceWithheld(d) {
				fmt.Fprintf(&b, "  (%s)\n", WithheldReason)
			} else if line, lineStart, ok := sourceLine(files[r.Filename], r.Start); ok {
				prefix := fmt.Sprintf("  %d: ", r.Start.Line)
				fmt.Fprintf(&b, "%s%s\n", prefix, line)
				b.WriteString(strings.Repeat(" ", len(prefix)))
				b.WriteString(marker(line, r.Start.Byte-lineStart, endInLine(r, lineStart, len(line))))
				b.WriteByte('\n')
			}
		}
		if d.Detail != "" {
			b.WriteByte('\n')
			b.WriteString(d.Detail)
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func severityWord(s hcl.DiagnosticSeverity) string {
	if s == hcl.DiagWarning {
		return "Warning"
	}
	return "Error"
}

// sourceLine returns the text of the line holding pos (without its newline)
// and the byte offset where that line starts.
func sourceLine(src []byte, pos hcl.Pos) (string, int, bool) {
	if src == nil || pos.Byte < 0 || pos.Byte > len(src) {
		return "", 0, false
	}
	start := bytes.LastIndexByte(src[:pos.Byte], '\n') + 1
	end := bytes.IndexByte(src[start:], '\n')
	if end < 0 {
		end = len(src) - start
	}
	line := strings.TrimRight(string(src[start:start+end]), "\r")
	if !utf8.ValidString(line) {
		line = strings.ToValidUTF8(line, "\uFFFD")
	}
	return line, start, true
}

// endInLine is the byte offset, within the first line of r, where the
// marked range ends: the range's end, or the end of the line when the range
// spans several lines.
func endInLine(r hcl.Range, lineStart, lineLen int) int {
	if r.End.Line == r.Start.Line && r.End.Byte >= r.Start.Byte {
		return min(r.End.Byte-lineStart, lineLen)
	}
	return lineLen
}

// marker underlines bytes [from, to) of line with carets, keeping tabs so
// the carets line up under the source; an empty range gets one caret.
func marker(line string, from, to int) string {
	from = max(0, min(from, len(line)))
	to = max(from, min(to, len(line)))
	var b strings.Builder
	for _, r := range line[:from] {
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	n := utf8.RuneCountInString(line[from:to])
	b.WriteString(strings.Repeat("^", max(1, n)))
	return b.String()
}

// JSONDiagnostic is one element of DiagnosticsJSON's output.
type JSONDiagnostic struct {
	Severity string     `json:"severity"` // "error" or "warning"
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail"`
	Range    *JSONRange `json:"range"`
	// Snippet is the source line the range starts on ("" when unknown or
	// withheld).
	Snippet string `json:"snippet"`
	// SnippetWithheld says why there is no snippet for a diagnostic about a
	// variable file or value (WithheldReason); omitted otherwise.
	SnippetWithheld string `json:"snippet_withheld,omitempty"`
}

// JSONRange is a source range in DiagnosticsJSON's output.
type JSONRange struct {
	Filename string  `json:"filename"`
	Start    JSONPos `json:"start"`
	End      JSONPos `json:"end"`
}

// JSONPos is a position: 1-based line and column, 0-based byte offset.
type JSONPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// ToJSONDiagnostics converts diags to their machine-readable form.
func ToJSONDiagnostics(diags hcl.Diagnostics, files map[string][]byte) []JSONDiagnostic {
	out := make([]JSONDiagnostic, 0, len(diags))
	for _, d := range diags {
		j := JSONDiagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			j.Severity = "warning"
		}
		if d.Subject != nil {
			r := *d.Subject
			j.Range = &JSONRange{
				Filename: r.Filename,
				Start:    JSONPos{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:      JSONPos{r.End.Line, r.End.Column, r.End.Byte},
			}
			if SourceWithheld(d) {
				j.SnippetWithheld = WithheldReason
			} else if line, _, ok := sourceLine(files[r.Filename], r.Start); ok {
				j.Snippet = line
			}
		}
		out = append(out, j)
	}
	return out
}

// DiagnosticsJSON renders diags as a JSON array of
// {severity, summary, detail, range{filename, start{line,column,byte},
// end{...}}, snippet}; range is null for a diagnostic without a location.
func DiagnosticsJSON(diags hcl.Diagnostics, files map[string][]byte) []byte {
	b, err := json.MarshalIndent(ToJSONDiagnostics(diags, files), "", "  ")
	if err != nil { // cannot happen: plain strings and ints
		panic(err)
	}
	return b
}
