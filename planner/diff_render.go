package planner

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// MaxMarkdownChars bounds the Markdown form of a diff: GitHub refuses
// comments over 65,536 characters, so large diffs are summarised.
const MaxMarkdownChars = 60000

// Summary is the diff's one-line summary, e.g. "Diff: 1 lane added, 0
// removed, 2 changed, 3 unchanged. Cost +$0.12 ($0.28 -> $0.40), GPU time
// +0.05 GPU-hours."
func (d DiffResult) Summary() string {
	settings := ""
	if n := len(d.SettingsChanged); n > 0 {
		settings = ", " + plural(n, "gate/report setting") + " changed"
	}
	return fmt.Sprintf("Diff: %s added, %d removed, %d changed, %d unchanged%s. Cost %s (%s -> %s), GPU time %s%s.",
		plural(len(d.Added), "lane"), len(d.Removed), len(d.Changed), d.Unchanged, settings,
		fmtSignedUSD(d.CostDeltaUSD), fmtUSD(d.Old.Totals.CostUSD), fmtUSD(d.New.Totals.CostUSD),
		sign(d.GPUSecondsDelta), fmtGPUHours(abs(d.GPUSecondsDelta)))
}

func sign(x float64) string {
	if x < 0 {
		return "-"
	}
	return "+"
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// notionalLine says what the lanes on an executor that bills nothing would
// cost on their GPUs, old and new; "" without such lanes.
func (d DiffResult) notionalLine() string {
	n := d.Notional
	if n == nil {
		return ""
	}
	return fmt.Sprintf("Notional cost %s (%s -> %s)*: the sim executor bills nothing; * is what the lanes' runs would cost on their GPUs at the plan's price.",
		fmtSignedUSD(n.DeltaUSD), fmtUSD(n.OldUSD), fmtUSD(n.NewUSD))
}

// notionalCell renders a lane's notional cost after its billed one, " (~$0.12*)".
func notionalCell(usd float64) string {
	if usd == 0 {
		return ""
	}
	return " (~" + fmtSignedUSD(usd) + "*)"
}

// valueChanges renders "name old -> new" for each changed input.
func (c DiffChange) valueChanges(code func(string) string) []string {
	var out []string
	for _, k := range c.ChangedInputs {
		v := c.Values[k]
		out = append(out, fmt.Sprintf("%s %s -> %s", code(k), fmtValue(v[0]), fmtValue(v[1])))
	}
	if c.OldKey != "" {
		out = append(out, "moved from "+code(c.OldKey))
	}
	return out
}

// fmtValue renders an input value briefly.
func fmtValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "(none)"
	case string:
		if x == "" {
			return `""`
		}
		return x
	case float64:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.6f", x), "0"), ".")
	default:
		b, err := encode(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
}

// WriteText renders the diff for a terminal: the summary line, the gate
// and report settings changed, then the lanes added, removed and changed,
// then new preflight findings.
func (d DiffResult) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n", d.Summary())
	if n := d.notionalLine(); n != "" {
		ew.printf("%s\n", n)
	}
	if len(d.SettingsChanged) > 0 {
		ew.printf("\nGates and report settings:\n")
		for _, c := range d.SettingsChanged {
			ew.printf("  ~ %s\n", c)
		}
	}
	plain := func(s string) string { return s }
	if len(d.Added) > 0 {
		ew.printf("\nAdded:\n")
		for _, l := range d.Added {
			ew.printf("  + %s  %s  %s, %s GPU-s, %s%s\n", l.ID, l.Key, plural(l.Runs, "run"), fmtInt(int64(l.GPUSeconds+0.5)), fmtUSD(l.CostUSD), notionalCell(l.NotionalUSD))
		}
	}
	if len(d.Removed) > 0 {
		ew.printf("\nRemoved:\n")
		for _, l := range d.Removed {
			ew.printf("  - %s  %s  %s, %s GPU-s, %s%s\n", l.ID, l.Key, plural(l.Runs, "run"), fmtInt(int64(l.GPUSeconds+0.5)), fmtUSD(l.CostUSD), notionalCell(-l.NotionalUSD))
		}
	}
	if len(d.Changed) > 0 {
		ew.printf("\nChanged:\n")
		for _, c := range d.Changed {
			ew.printf("  ~ %s -> %s  %s  cost %s%s\n", c.OldID, c.NewID, c.Key, fmtSignedUSD(c.CostDeltaUSD), notionalCell(c.NotionalDeltaUSD))
			for _, v := range c.valueChanges(plain) {
				ew.printf("      %s\n", v)
			}
		}
	}
	if len(d.FindingsAdded) > 0 {
		ew.printf("\nNew preflight findings:\n")
		for _, f := range d.FindingsAdded {
			ew.printf("  %s: %s\n", f.Severity, f.Summary)
		}
	}
	return ew.err
}

// Markdown renders the diff for a pull-request comment: the summary line,
// a table of the gate and report settings changed, one table of the lanes
// that differ (largest cost change first) and the
// new preflight findings. It stays under MaxMarkdownChars by leaving out
// the smallest rows and saying how many were left out.
func (d DiffResult) Markdown() string {
	var b strings.Builder
	b.WriteString("**InferCrane** " + d.Summary() + "\n")
	if n := d.notionalLine(); n != "" {
		b.WriteString("\n" + n + "\n")
	}
	type row struct {
		cost float64
		text string
	}
	code := func(s string) string { return "`" + strings.ReplaceAll(s, "`", "'") + "`" }
	var rows []row
	for _, l := range d.Added {
		rows = append(rows, row{l.CostUSD, fmt.Sprintf("| added | %s | %s | %d runs | %s | %s |\n",
			code(l.Key), code(l.ID), l.Runs, signedInt(l.GPUSeconds), fmtSignedUSD(l.CostUSD)+notionalCell(l.NotionalUSD))})
	}
	for _, l := range d.Removed {
		rows = append(rows, row{-l.CostUSD, fmt.Sprintf("| removed | %s | %s | | %s | %s |\n",
			code(l.Key), code(l.ID), signedInt(-l.GPUSeconds), fmtSignedUSD(-l.CostUSD)+notionalCell(-l.NotionalUSD))})
	}
	for _, c := range d.Changed {
		rows = append(rows, row{c.CostDeltaUSD, fmt.Sprintf("| changed | %s | %s → %s | %s | %s | %s |\n",
			code(c.Key), code(c.OldID), code(c.NewID), mdCell(strings.Join(c.valueChanges(code), "; ")),
			signedInt(c.GPUSecondsDelta), fmtSignedUSD(c.CostDeltaUSD)+notionalCell(c.NotionalDeltaUSD))})
	}
	sort.SliceStable(rows, func(i, j int) bool { return abs(rows[i].cost) > abs(rows[j].cost) })
	writeSettingsTable(&b, d.SettingsChanged, code)
	var findings strings.Builder
	if len(d.FindingsAdded) > 0 {
		findings.WriteString("\n**New preflight findings**\n\n")
		for _, f := range d.FindingsAdded {
			line := fmt.Sprintf("- **%s** %s\n", f.Severity, mdCell(f.Summary))
			if findings.Len()+len(line) > MaxMarkdownChars/4 {
				findings.WriteString("- … more findings: run `infercrane diff -json` for all\n")
				break
			}
			findings.WriteString(line)
		}
	}
	if len(rows) > 0 {
		b.WriteString("\n| | Lane | ID | Changed inputs | GPU-s | Cost |\n|---|---|---|---|---:|---:|\n")
		budget := MaxMarkdownChars - b.Len() - findings.Len() - 200
		for i, r := range rows {
			if len(r.text) > budget {
				fmt.Fprintf(&b, "\n_… and %d more lanes with smaller cost changes; run `infercrane diff -json` for every lane._\n", len(rows)-i)
				break
			}
			budget -= len(r.text)
			b.WriteString(r.text)
		}
	}
	b.WriteString(findings.String())
	return b.String()
}

// writeSettingsTable writes the gate and report settings changed as a
// Markdown table; its rows are few (one per setting of the spec's gates and
// screens), so none is left out.
func writeSettingsTable(b *strings.Builder, cs []SettingChange, code func(string) string) {
	if len(cs) == 0 {
		return
	}
	b.WriteString("\n**Gates and report settings changed** (what \"pass\" means; no lane reruns for these)\n\n")
	b.WriteString("| Screen | Gate | Setting | Old | New |\n|---|---|---|---|---|\n")
	cell := func(s string) string {
		if s == "" {
			return ""
		}
		return code(s)
	}
	for _, c := range cs {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", cell(c.Screen), cell(c.Gate), c.Setting,
			mdCell(code(settingValue(c.Old))), mdCell(code(settingValue(c.New))))
	}
}

// settingValue renders one side of a SettingChange for a table cell.
func settingValue(v any) string {
	switch x := v.(type) {
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	case []TraceProfile:
		return traceDigests(x)
	}
	return settingText(v)
}

func signedInt(x float64) string {
	if x < 0 {
		return fmtInt(int64(x - 0.5))
	}
	return "+" + fmtInt(int64(x+0.5))
}

// mdCell makes s safe inside a Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
