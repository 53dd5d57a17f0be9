package endpoint

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

func TestDeployAndRunAgainstARealServer(t *testing.T) {
	srv, err := sim.Listen("127.0.0.1:0", sim.Options{Model: "served", TTFT: time.Millisecond, ITL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	x, err := New(Schema().Resolve(map[string]any{"base_url": srv.URL + "/v1/", "model": "served"}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := x.Deploy(context.Background(), executor.Deployment{ID: "d", ModelID: "org/model"})
	if err != nil {
		t.Fatal(err)
	}
	if s.BaseURL != srv.URL || s.Model != "served" || s.Info["runtime_version"] != sim.Version {
		t.Fatalf("server: %+v", s)
	}
	res, err := x.Run(context.Background(), s, executor.RunSpec{Lane: "l", Run: 1, Load: loadgen.Config{API: "chat", Streaming: true, InputTokens: 8, OutputTokens: 4, Concurrency: 1, Requests: 2}})
	if err != nil || res.Summary.Succeeded != 2 {
		t.Fatalf("%v %+v", err, res)
	}
	if err := x.Teardown(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	// The lane's model id is not what the server serves.
	y, _ := New(Schema().Resolve(map[string]any{"base_url": srv.URL}))
	if _, err := y.Deploy(context.Background(), executor.Deployment{ModelID: "org/model"}); err == nil || !strings.Contains(err.Error(), `does not serve model "org/model"`) {
		t.Fatalf("got %v", err)
	}
}

func TestRefusedKeyAndMissingKey(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer right" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"data":[{"id":"m"}]}`))
	}))
	defer hs.Close()
	x, _ := New(Schema().Resolve(map[string]any{"base_url": hs.URL, "api_key_env": "K"}))
	e := x.(*Executor)
	e.getenv = func(string) string { return "" }
	if _, err := e.Deploy(context.Background(), executor.Deployment{ModelID: "m"}); err == nil || !strings.Contains(err.Error(), "environment variable K (api_key_env) is empty") {
		t.Fatalf("got %v", err)
	}
	e.getenv = func(string) string { return "wrong" }
	_, err := e.Deploy(context.Background(), executor.Deployment{ModelID: "m"})
	if err == nil || !strings.Contains(err.Error(), "refused the API key (HTTP 401)") || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("got %v", err)
	}
	e.getenv = func(string) string { return "right" }
	if _, err := e.Deploy(context.Background(), executor.Deployment{ModelID: "m"}); err != nil {
		t.Fatal(err)
	}
	// No api_key_env: the endpoint wants a key that was never sent.
	y, _ := New(Schema().Resolve(map[string]any{"base_url": hs.URL}))
	_, err = y.Deploy(context.Background(), executor.Deployment{ModelID: "m"})
	if err == nil || !strings.Contains(err.Error(), "set api_key_env") || strings.Contains(err.Error(), "$") {
		t.Fatalf("got %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for cfg, want := range map[string]map[string]any{
		`needs attribute "base_url"`:         {},
		`must be an http:// or https:// URL`: {"base_url": "ftp://x"},
		`has no attribute "key"`:             {"base_url": "http://x", "key": "secret"},
	} {
		if _, err := New(Schema().Resolve(want)); err == nil || !strings.Contains(err.Error(), cfg) {
			t.Errorf("%v: got %v, want %q", want, err, cfg)
		}
	}
}
