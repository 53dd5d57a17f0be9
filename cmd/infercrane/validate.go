package main

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
)

// addValidateCommands registers the commands of this file (called by setupCommands).
func addValidateCommands() {
	register(&command{
		Name:     "validate",
		Synopsis: "Check a spec and summarise it, or list its errors",
		Run:      runValidate,
	})
}

// validateJSON is the output of validate -json.
type validateJSON struct {
	FormatVersion string `json:"format_version"`
	Valid         bool   `json:"valid"`
	ErrorCount    int    `json:"error_count"`
	WarningCount  int    `json:"warning_count"`
	// Summary is always present: "Valid: ..." or "Invalid: N error(s)".
	Summary     string                `json:"summary"`
	Notes       []string              `json:"notes"`
	Diagnostics []lang.JSONDiagnostic `json:"diagnostics"`
}

func runValidate(env *cliEnv, args []string) int {
	fs := newFlags(env, "validate", usageDoc{
		Usage: "infercrane validate [flags] [PATH]",
		About: "Checks the spec in PATH (a directory of *.hcl files or one file; default .): syntax,\n" +
			"references, types, variables and executor settings. Offline: it reads pinned profile files\n" +
			"but no trace source (plan profiles unpinned traces). Exit status 0 valid, 1 invalid.",
		Examples: []string{
			"infercrane validate",
			"infercrane validate examples/quickstart -json",
			"infercrane validate -var runs=5 -var-file prod.vars.json specs/",
		},
	})
	asJSON := fs.Bool("json", false, "print the result and diagnostics as JSON on stdout")
	vf := addVarFlags(fs.FlagSet)
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	path, code, ok := fs.oneOptional(pos, "PATH", ".")
	if !ok {
		return code
	}
	cfg, diags := loadConfig(env, path, vf)
	valid := !diags.HasErrors()
	summary, notes := "", []string(nil)
	if valid {
		summary, notes = summarize(cfg), pendingNotes(cfg)
	}
	if *asJSON {
		out := validateJSON{
			FormatVersion: "1", Valid: valid, Summary: summary, Notes: notes,
			Diagnostics: lang.ToJSONDiagnostics(diags, cfg.Files),
		}
		if out.Notes == nil {
			out.Notes = []string{}
		}
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				out.ErrorCount++
			} else {
				out.WarningCount++
			}
		}
		if !valid {
			out.Summary = fmt.Sprintf("Invalid: %s.", plural(out.ErrorCount, "error", "errors"))
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(env.Stdout, string(b))
	} else {
		printDiags(env, diags, cfg.Files)
		if valid {
			fmt.Fprintln(env.Stdout, summary)
			for _, n := range notes {
				fmt.Fprintln(env.Stdout, "Note: "+n)
			}
		}
	}
	if !valid {
		return 1
	}
	return 0
}

// summarize renders "Valid: 1 screen, 2 models, 2 shapes, 1 gpu."
func summarize(cfg *lang.Config) string {
	return fmt.Sprintf("Valid: %s, %s, %s, %s.",
		plural(len(cfg.Screens), "screen", "screens"),
		plural(len(cfg.Models), "model", "models"),
		plural(len(cfg.Shapes), "shape", "shapes"),
		plural(len(cfg.GPUs), "gpu", "gpus"))
}

// pendingNotes lists what is not known yet, one line per shape.
func pendingNotes(cfg *lang.Config) []string {
	var notes []string
	names := make([]string, 0, len(cfg.Shapes))
	for n := range cfg.Shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, p := range cfg.Shapes[n].Pending {
			notes = append(notes, fmt.Sprintf("shape.%s %s.", n, p))
		}
	}
	return notes
}
