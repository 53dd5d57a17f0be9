package lang

import (
	"strings"
	"testing"
)

const sensitiveSpec = minimal + `
variable "token" {
  type      = string
  sensitive = true
}
variable "host" {
  type    = string
  default = "127.0.0.1"
}
locals {
  header = "Bearer ${upper(var.token)}"
}
runtime "vllm" {
  engine = "vllm"
  args   = ["--max-model-len", "4096", "--api-key", var.token, "--header=${local.header}"]
}
executor "ep" {
  type     = "local"
  base_url = "http://${var.host}:8000/${var.token}"
  env      = { HF_TOKEN = var.token, PLAIN = "x" }
  port     = 8000
}
`

// TestSensitiveMarksFollowDerivedValues: a sensitive variable's value, and
// values derived from it through templates, locals and functions, arrive
// marked in runtime args (per element) and executor attributes (per map
// entry), and its value is listed for redaction.
func TestSensitiveMarksFollowDerivedValues(t *testing.T) {
	cfg := mustLoad(t, sensitiveSpec, Options{Vars: []string{"token=tok-abcdef123"}})
	r := cfg.Runtimes["vllm"]
	want := []bool{false, false, false, true, true}
	if len(r.ArgsSensitive) != len(want) {
		t.Fatalf("ArgsSensitive %v for args %q", r.ArgsSensitive, r.RuntimeArgs)
	}
	for i := range want {
		if r.ArgsSensitive[i] != want[i] {
			t.Errorf("arg %d %q: sensitive %v, want %v", i, r.RuntimeArgs[i], r.ArgsSensitive[i], want[i])
		}
	}
	if r.RuntimeArgs[4] != "--header=Bearer TOK-ABCDEF123" {
		t.Errorf("the real value is kept for apply: %q", r.RuntimeArgs[4])
	}
	e := cfg.Executors["ep"]
	if !IsSensitive(e.Attrs["base_url"]) || IsSensitive(e.Attrs["port"]) || !IsSensitive(e.Attrs["env"]) {
		t.Errorf("executor marks: base_url %v port %v env %v", IsSensitive(e.Attrs["base_url"]), IsSensitive(e.Attrs["port"]), IsSensitive(e.Attrs["env"]))
	}
	env, _ := e.Attrs["env"].UnmarkDeep()
	if IsSensitive(e.Attrs["env"].GetAttr("PLAIN")) || !IsSensitive(e.Attrs["env"].GetAttr("HF_TOKEN")) || env.GetAttr("PLAIN").AsString() != "x" {
		t.Error("the mark must sit on the HF_TOKEN entry only")
	}
	if len(cfg.Secrets) != 1 || cfg.Secrets[0] != "tok-abcdef123" {
		t.Errorf("secrets %q", cfg.Secrets)
	}
}

// TestSensitiveElsewhereIsAnError: a sensitive value where it cannot be
// redacted (a model id ends up in evidence) is refused at load.
func TestSensitiveElsewhereIsAnError(t *testing.T) {
	src := strings.Replace(minimal, `id = "Qwen/Qwen3-0.6B"`, `id = var.org`, 1) + `
variable "org" {
  type      = string
  sensitive = true
  default   = "Qwen/Qwen3-0.6B"
}
`
	msg := loadErr(t, src, Options{})
	if !strings.Contains(msg, "Sensitive value not allowed here") || !strings.Contains(msg, `"id"`) {
		t.Errorf("got:\n%s", msg)
	}
}
