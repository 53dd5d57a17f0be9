package modal_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/plugins/modal"
	"github.com/infercrane/infercrane/plugins/modal/localcloud"
)

const (
	hfToken     = "hf_TOPSECRETvalue123"
	modalSecret = "as-MODALSECRETvalue456"
)

// Secrets reach the server's environment inside the sandbox, and never the
// executor's outputs: Server, RunResult, logs, teardown records, errors.
func TestSecretsNeverLeak(t *testing.T) {
	t.Setenv("MODAL_TOKEN_ID", "ak-modaltokenid789")
	t.Setenv("MODAL_TOKEN_SECRET", modalSecret)
	f := newFixture(t, map[string]any{"secrets": []any{"huggingface"}}, func(c *localcloud.Cloud) {
		c.Secrets = map[string]map[string]string{"huggingface": {"HF_TOKEN": hfToken}}
	})
	srv, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := f.cloud.Meta(srv.Handle)
	if err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(meta.Pgids[0]), "environ"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(env), "HF_TOKEN="+hfToken) {
		t.Fatal("the secret did not reach the server's environment")
	}
	res, err := f.exec.Run(t.Context(), srv, executor.RunSpec{Lane: "l", Run: 1, Load: load(3)})
	if err != nil {
		t.Fatal(err)
	}
	bad := load(3)
	bad.InputTokens = -1
	_, runErr := f.exec.Run(t.Context(), srv, executor.RunSpec{Lane: "l", Run: 2, Load: bad})
	if err := f.exec.Teardown(t.Context(), srv); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, v := range []any{srv, res, meta.Spec} {
		b, _ := json.Marshal(v)
		out.Write(b)
	}
	out.WriteString(runErr.Error())
	out.WriteString(f.progressText())
	filepath.Walk(f.logs, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			out.Write(b)
		}
		return nil
	})
	for _, secret := range []string{hfToken, modalSecret} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("secret %q leaked into the executor's outputs", secret)
		}
	}
}

// The SDK adapter's errors (here against a Modal endpoint that refuses
// connections) carry no credential.
func TestSDKErrorsCarryNoCredentials(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("MODAL_SERVER_URL", "http://127.0.0.1:1")
	t.Setenv("MODAL_TOKEN_ID", "ak-modaltokenid789")
	t.Setenv("MODAL_TOKEN_SECRET", modalSecret)
	t.Setenv("MODAL_MAX_THROTTLE_WAIT", "0")
	c, err := modal.NewSDKCloud("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, listErr := c.List(ctx, "infercrane", map[string]string{"infercrane": "1"})
	_, createErr := c.Create(ctx, modal.SandboxSpec{App: "infercrane", Image: "vllm/vllm-openai:v0.22.1", GPU: "L4", Command: []string{"true"}, Timeout: time.Minute, IdleTimeout: time.Minute})
	for _, err := range []error{listErr, createErr} {
		if err == nil {
			t.Fatal("an unreachable Modal answered")
		}
		if strings.Contains(err.Error(), modalSecret) {
			t.Fatalf("credential in error: %v", err)
		}
	}
}
