package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/sim"
)

// TestApplyWithExternalPluginBinary builds the example plugin from plugins/
// and applies a spec whose executor type it provides.
func TestApplyWithExternalPluginBinary(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain to build the plugin with")
	}
	dir := t.TempDir()
	build := exec.Command(gobin, "build", "-o", filepath.Join(dir, "infercrane-executor-example"), "../../plugins/cmd/infercrane-executor-example")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the plugin: %v\n%s", err, out)
	}
	r := newRig(t, rigSpec(`executor "x" {
  type = "example"
  ttft = "2ms"
  itl  = "1ms"
}`, 2))
	r.env = append(r.env, "INFERCRANE_PLUGIN_DIR="+dir)
	list, err := r.command("executor", "list").Output()
	if err != nil || !strings.Contains(string(list), "example (plugin "+filepath.Join(dir, "infercrane-executor-example")+")") {
		t.Fatalf("executor list: %v\n%s", err, list)
	}
	code, out, errOut := r.apply()
	if code != 0 || !strings.Contains(out, "2 run(s) completed, 0 failed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	r.noLeftovers()
	// Without the plugin directory the type is unknown, and the spec says so.
	r.env = r.env[:len(r.env)-1]
	code, _, errOut = r.apply()
	if code != 1 || !strings.Contains(errOut, `no executor of type "example"`) && !strings.Contains(errOut, "Unknown executor type") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
}

// TestApplyEndpointNeverWritesTheKey runs lanes against an existing server
// with an API key from the environment and checks the key appears in no
// file of the state directory and in no output.
func TestApplyEndpointNeverWritesTheKey(t *testing.T) {
	t.Parallel()
	srv, err := sim.Listen("127.0.0.1:0", sim.Options{Model: "Qwen/Qwen3-0.6B", TTFT: time.Millisecond, ITL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(t.Context())
	const key = "sk-test-7f3a9c1e5b"
	r := newRig(t, rigSpec(`variable "url" { type = string }
executor "x" {
  type        = "endpoint"
  base_url    = var.url
  api_key_env = "IC_TEST_KEY"
}`, 2))
	r.env = append(r.env, "IC_TEST_KEY="+key)
	code, out, errOut := r.apply("-var", "url="+srv.URL)
	if code != 0 || !strings.Contains(out, "2 run(s) completed, 0 failed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, key) {
		t.Fatal("the API key was printed")
	}
	filepath.Walk(filepath.Join(r.dir, ".infercrane"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
				t.Errorf("the API key is in %s", p)
			}
		}
		return nil
	})
	// Without the key the endpoint executor refuses, naming the variable.
	r.env = r.env[:len(r.env)-1]
	code, _, errOut = r.apply("-var", "url="+srv.URL, "-replace", "s/a/chat/l40s")
	if code != 1 || !strings.Contains(errOut, "IC_TEST_KEY (api_key_env) is empty or unset") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
}
