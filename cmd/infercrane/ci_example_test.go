package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The examples/ci workflows are run by GitHub, which cannot run here; their
// shell steps can. Every step that does work calls one of the scripts next
// to the workflows, and the tests below run those scripts as the steps do:
// the real CLI, a real git repository with a base and a head, and the
// shared state in an S3 protocol server on 127.0.0.1.

const ciDir = "../../examples/ci"

// workflowRunStep matches a step's `run:` command.
var workflowRunStep = regexp.MustCompile(`(?m)^\s+run: (.+)$`)

// TestCIWorkflowsRunOnlyTheirScripts: the workflows' steps are the scripts
// tested below, GitHub's own CLI, or one plain command; nothing fetches a
// release that does not exist (`go install ...@version` of an unpublished
// module was the shipped workflow's first step).
func TestCIWorkflowsRunOnlyTheirScripts(t *testing.T) {
	allowed := []string{
		`INFERCRANE_SRC=.infercrane-src bash "$CI_SCRIPTS/install.sh"`,
		`bash "$CI_SCRIPTS/plan-pr.sh" "$RUNNER_TEMP/base"`,
		`git worktree add "$RUNNER_TEMP/base" "${{ github.event.pull_request.base.sha }}"`,
		`gh pr comment `,
		`infercrane apply -auto-approve -no-color "$SPEC"`,
	}
	files, _ := filepath.Glob(filepath.Join(ciDir, "*.yml"))
	if len(files) != 2 {
		t.Fatalf("want the plan and apply workflows, found %v", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("go install")) {
			t.Errorf("%s runs go install: the module is not published", f)
		}
		if bytes.Contains(b, []byte("run: |")) {
			t.Errorf("%s has a multi-line run step: put it in a script next to it, where a test runs it", f)
		}
		for _, m := range workflowRunStep.FindAllStringSubmatch(string(b), -1) {
			ok := false
			for _, a := range allowed {
				ok = ok || strings.HasPrefix(m[1], a)
			}
			if !ok {
				t.Errorf("%s: step `%s` is not one of the tested commands", filepath.Base(f), m[1])
			}
		}
	}
}

// TestCIInstallScriptBuildsTheCLI builds the CLI as the workflows do.
func TestCIInstallScriptBuildsTheCLI(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain")
	}
	bin := t.TempDir()
	ghPath := filepath.Join(t.TempDir(), "github_path")
	cmd := exec.Command("bash", filepath.Join(ciDir, "install.sh"), bin)
	// The build flags and cgo setting of this test run, so the build reuses
	// the packages the test already compiled (the release flags would
	// rebuild every package: minutes on a 2-core machine).
	cgo, _ := exec.Command("go", "env", "CGO_ENABLED").Output()
	cmd.Env = append(os.Environ(), "INFERCRANE_SRC=../..", "GITHUB_PATH="+ghPath,
		"INFERCRANE_BUILD_FLAGS=", "CGO_ENABLED="+strings.TrimSpace(string(cgo)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "infercrane") {
		t.Errorf("install.sh did not print the version: %s", out)
	}
	if p, _ := os.ReadFile(ghPath); strings.TrimSpace(string(p)) != bin {
		t.Errorf("GITHUB_PATH got %q, want %s", p, bin)
	}
	cmd = exec.Command("bash", filepath.Join(ciDir, "install.sh"), bin)
	cmd.Env = append(os.Environ(), "INFERCRANE_SRC="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "not a checkout of InferCrane") {
		t.Errorf("install.sh outside a checkout: %v\n%s", err, out)
	}
}

// ciSpec is a one-model screen keeping its state in store; shapes are its
// shape blocks and the screen's list.
func ciSpec(store *s3Store, shapes string, list string) string {
	return backendBlock(store, "ci/screen") + `
model "a" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 4096
}
gpu "l40s" { type = "L40S" }
executor "x" {
  type   = "sim"
  timing = "constant"
  ttft   = "1ms"
  itl    = "1ms"
}
` + shapes + `
gate "clean" {
  condition     = lane.failed == 0
  error_message = "Every request must succeed."
}
screen "s" {
  models   = [model.a]
  shapes   = [` + list + `]
  gpus     = [gpu.l40s]
  executor = executor.x
  gates    = [gate.clean]
  runs     = 2
  seed     = 1
}
`
}

const ciChat = `shape "chat" {
  input_tokens      = 32
  output_tokens     = 8
  template_headroom = 16
  concurrency       = 2
  requests          = 4
}
`

const ciLong = `shape "long" {
  input_tokens      = 256
  output_tokens     = 8
  template_headroom = 16
  concurrency       = 2
  requests          = 4
}
`

// TestCIPlanScriptOnAPullRequest runs plan-pr.sh as the plan workflow does
// on a pull request that adds a shape to a screen whose first lane already
// ran into the shared state: the comment shows the diff against the base
// and that only the new lane is still to run.
func TestCIPlanScriptOnAPullRequest(t *testing.T) {
	store := newS3Store(t, "team")
	repo := t.TempDir()
	env := append(os.Environ(), backendEnv...)
	env = append(env, "GIT_AUTHOR_NAME=ci", "GIT_AUTHOR_EMAIL=ci@example.com", "GIT_COMMITTER_NAME=ci", "GIT_COMMITTER_EMAIL=ci@example.com")
	run := func(dir string, extra []string, name string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(append([]string{}, env...), extra...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(dir, name string, args ...string) {
		t.Helper()
		if out, err := run(dir, nil, name, args...); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	write := func(spec string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(repo, "spec"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, "spec", "main.hcl"), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".infercrane/\n"), 0o644)
	write(ciSpec(store, ciChat, "shape.chat"))
	must(repo, "git", "init", "-q", "-b", "main")
	must(repo, "git", "add", "-A")
	must(repo, "git", "commit", "-qm", "base")
	// The base's lane ran after its merge (the apply workflow).
	must(repo, "infercrane", "apply", "-auto-approve", "spec")
	base, _ := run(repo, nil, "git", "rev-parse", "HEAD")
	write(ciSpec(store, ciChat+ciLong, "shape.chat, shape.long"))
	must(repo, "git", "commit", "-qam", "head: a long-prompt shape")
	// A fresh clone of the head, as the runner has: no local state at all.
	runner := t.TempDir()
	must(runner, "git", "clone", "-q", repo, "work")
	work := filepath.Join(runner, "work")
	baseDir := filepath.Join(runner, "base")
	must(work, "git", "worktree", "add", "-q", baseDir, strings.TrimSpace(base))
	ghOut := filepath.Join(runner, "github_output")
	script, _ := filepath.Abs(filepath.Join(ciDir, "plan-pr.sh"))
	out, err := run(work, []string{"SPEC=spec", "GITHUB_OUTPUT=" + ghOut}, "bash", script, baseDir)
	if err != nil {
		t.Fatalf("plan-pr.sh: %v\n%s", err, out)
	}
	if o, _ := os.ReadFile(ghOut); string(o) != "exitcode=2\n" {
		t.Errorf("GITHUB_OUTPUT = %q, want exitcode=2", o)
	}
	comment, err := os.ReadFile(filepath.Join(work, "comment.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 lane added", "**Still to run** (planned against the state this job sees): Plan: 1 lane to run (2 runs", "1 unchanged"} {
		if !strings.Contains(string(comment), want) {
			t.Errorf("the comment lacks %q:\n%s", want, comment)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "plan.bin")); err != nil {
		t.Errorf("no saved plan: %v", err)
	}

	// A head whose new shape overflows the context fails the check, and the
	// comment quotes the preflight error.
	os.WriteFile(filepath.Join(work, "spec", "main.hcl"), []byte(ciSpec(store, ciChat+strings.Replace(ciLong, "256", "5000", 1), "shape.chat, shape.long")), 0o644)
	out, err = run(work, []string{"SPEC=spec"}, "bash", script, baseDir)
	if err == nil {
		t.Fatalf("plan-pr.sh passed a plan with a preflight error:\n%s", out)
	}
	comment, _ = os.ReadFile(filepath.Join(work, "comment.md"))
	if !strings.Contains(string(comment), "**The plan has errors:**") || !strings.Contains(string(comment), "context") {
		t.Errorf("the comment does not quote the error:\n%s", comment)
	}
}
