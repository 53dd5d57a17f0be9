package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestProfileSuggestionsPassPreflight: every shape `profile validate`
// suggests, pasted into a spec, passes the tool's own preflight on every
// built-in executor, including a shape clipped to fill the window exactly
// (7893 in + 299 out on 8192): input_tokens counts the prompt as the
// calibrated load generator sends it, chat template included, and
// template_headroom (0 in the suggestions) is reserved only for
// uncalibrated endpoint lanes, where its absence is a warning.
func TestProfileSuggestionsPassPreflight(t *testing.T) {
	raw, err := os.ReadFile("../../examples/chutes-qwen-l40s/profiles/chutes.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	long := doc["profiles"].([]any)[1].(map[string]any)
	long["input_tokens"], long["output_tokens"], long["clipped_to_context_window"] = 7893, 299, true
	// Open-loop shapes of every arrival pattern a profile may carry.
	profiles := doc["profiles"].([]any)
	for _, arrival := range []string{"constant", "poisson", "gamma"} {
		profiles = append(profiles, map[string]any{
			"name": "open " + arrival, "description": "Open loop,\nmultiline description.", "objective": "rate",
			"requests": 40, "concurrency": 8, "input_tokens": 512, "output_tokens": 128, "streaming": false,
			"arrival_pattern": arrival, "request_rate": 2.5, "clipped_to_context_window": false,
		})
	}
	doc["profiles"] = profiles
	delete(doc, "digest")
	b, _ := json.Marshal(doc)
	dir := t.TempDir()
	profile := filepath.Join(dir, "profile.json")
	if err := os.WriteFile(profile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "profile", "validate", profile)
	if code != 0 {
		t.Fatalf("profile validate: exit %d\n%s%s", code, out, errOut)
	}
	shapes := regexp.MustCompile(`(?s)shape "([^"]+)" \{\n.*?\n\}`).FindAllStringSubmatch(out, -1)
	if len(shapes) != 6 || !strings.Contains(out, "input_tokens  = 7893") || !strings.Contains(out, "output_tokens = 299") ||
		!strings.Contains(out, `arrival       = "gamma"`) {
		t.Fatalf("suggested shapes:\n%s", out)
	}
	// The plan is the contract: the suggestion is a shape block, not a
	// bench command line.
	if strings.Contains(out, "bench") || strings.Contains(out, "--") {
		t.Errorf("profile validate suggests a command line:\n%s", out)
	}
	var blocks, names []string
	for _, s := range shapes {
		blocks = append(blocks, s[0])
		names = append(names, "shape."+s[1])
	}
	for _, exec := range []string{`type = "sim"`, `type = "modal"`, `type = "local"`, "type = \"endpoint\"\n  base_url = \"http://127.0.0.1:1\""} {
		spec := `model "m" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 8192
}
gpu "g" {
  type = "L40S"
}
executor "e" {
  ` + exec + `
}
` + strings.Join(blocks, "\n") + `
screen "s" {
  models   = [model.m]
  shapes   = [` + strings.Join(names, ", ") + `]
  gpus     = [gpu.g]
  executor = executor.e
  runs     = 5
}
`
		sdir := filepath.Join(t.TempDir(), "spec")
		if err := os.MkdirAll(sdir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sdir, "main.hcl"), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCLI(t, "plan", sdir)
		if code != 0 || strings.Contains(out, "Error:") || !strings.Contains(out, "0 errors") && !strings.Contains(out, "Preflight: no findings") {
			t.Errorf("%s: plan of the suggested shapes: exit %d\n%s%s", exec, code, out, errOut)
		}
	}
}
