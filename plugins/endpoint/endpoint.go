// Package endpoint is the built-in "endpoint" executor: lanes run against
// an OpenAI-compatible server that already exists. Nothing is started or
// stopped; the API key is read from the environment variable the spec
// names and is never written anywhere.
package endpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/lang"
)

// Type is the executor type name.
const Type = "endpoint"

// Capabilities are what this executor does, declared where it registers
// (its Schema): see lang.Capabilities.
var Capabilities = lang.Capabilities{ExistingServer: true}

// Schema describes the endpoint executor block; its defaults are the only
// ones the endpoint executor has (the planner applies them).
func Schema() executor.Schema {
	return executor.Schema{Attributes: []executor.Attribute{
		{Name: "base_url", Type: executor.AttrString, Required: true, Doc: `the server's base URL, e.g. "http://10.0.0.5:8000" (a trailing /v1 is accepted)`},
		{Name: "api_key_env", Type: executor.AttrString, Doc: "name of the environment variable holding the API key (the key itself never goes in the spec; unset: no key is sent)"},
		{Name: "model", Type: executor.AttrString, Doc: "served model name to request (unset: the lane's model id)"},
		{Name: "check_timeout", Type: executor.AttrDuration, Min: executor.Seconds(time.Second), Max: executor.Seconds(time.Hour), Default: "30s", Doc: "how long Deploy waits for the endpoint to answer"},
	}, Capabilities: Capabilities}
}

// Settings are a lane's resolved endpoint executor settings, as the plan
// carries them.
type Settings struct {
	BaseURL      string        `json:"base_url"`
	APIKeyEnv    string        `json:"api_key_env"`
	Model        string        `json:"model"`
	CheckTimeout time.Duration `json:"check_timeout"`
}

// Executor talks to an existing endpoint.
type Executor struct {
	settings Settings
	base     string // BaseURL without a trailing / or /v1
	getenv   func(string) string
}

// New makes an endpoint executor from a lane's resolved executor settings.
func New(settings map[string]any) (executor.Executor, error) {
	var s Settings
	if err := executor.DecodeSettings(Type, Schema(), settings, &s); err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(strings.TrimRight(s.BaseURL, "/"), "/v1")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, executor.AttrErrorf("base_url", `executor "endpoint": base_url %q must be an http:// or https:// URL such as "http://127.0.0.1:8000"`, s.BaseURL)
	}
	return &Executor{settings: s, base: base, getenv: os.Getenv}, nil
}

// Settings returns the settings the executor runs with.
func (x *Executor) Settings() Settings { return x.settings }

// apiKey reads the key from the named environment variable.
func (x *Executor) apiKey() (string, error) {
	if x.settings.APIKeyEnv == "" {
		return "", nil
	}
	key := x.getenv(x.settings.APIKeyEnv)
	if key == "" {
		return "", fmt.Errorf("the environment variable %s (api_key_env) is empty or unset; export the endpoint's API key in it", x.settings.APIKeyEnv)
	}
	return key, nil
}

// Deploy checks that the endpoint answers /v1/models with the key; it
// starts nothing.
func (x *Executor) Deploy(ctx context.Context, d executor.Deployment) (*executor.Server, error) {
	key, err := x.apiKey()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, x.settings.CheckTimeout)
	defer cancel()
	status, body, err := get(ctx, x.base+"/v1/models", key)
	if err != nil {
		return nil, fmt.Errorf("endpoint %s does not answer: %w; check base_url and that the server is up", x.base, err)
	}
	switch {
	case (status == http.StatusUnauthorized || status == http.StatusForbidden) && x.settings.APIKeyEnv == "":
		return nil, fmt.Errorf("endpoint %s wants an API key (HTTP %d) and none was sent; set api_key_env in the executor block to the name of the environment variable holding it", x.base, status)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return nil, fmt.Errorf("endpoint %s refused the API key (HTTP %d); check the key in $%s", x.base, status, x.settings.APIKeyEnv)
	case status != http.StatusOK:
		return nil, fmt.Errorf("endpoint %s answered GET /v1/models with HTTP %d; is it an OpenAI-compatible server?", x.base, status)
	}
	model := x.settings.Model
	if model == "" {
		model = d.ModelID
	}
	if !servesModel(body, model) {
		return nil, fmt.Errorf("endpoint %s does not serve model %q (see GET /v1/models); set model in the executor block to the served name", x.base, model)
	}
	info := map[string]string{"endpoint": x.base}
	if st, b, err := get(ctx, x.base+"/version", key); err == nil && st == http.StatusOK {
		var v struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(b, &v) == nil && v.Version != "" {
			info["runtime_version"] = v.Version
		}
	}
	return &executor.Server{DeploymentID: d.ID, BaseURL: x.base, Model: model, Handle: x.base, Info: info}, nil
}

// servesModel reports whether a /v1/models answer lists model.
func servesModel(body []byte, model string) bool {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil {
		return false
	}
	for _, m := range list.Data {
		if m.ID == model {
			return true
		}
	}
	return false
}

func get(ctx context.Context, u, key string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, body, err
}

// Run drives one run with the built-in load generator.
func (x *Executor) Run(ctx context.Context, s *executor.Server, r executor.RunSpec) (*executor.RunResult, error) {
	key, err := x.apiKey()
	if err != nil {
		return nil, err
	}
	return executor.RunLoad(ctx, s, r, key)
}

// Teardown does nothing: the endpoint was not started by InferCrane.
func (x *Executor) Teardown(context.Context, *executor.Server) error { return nil }

// Schema implements executor.Describer.
func (x *Executor) Schema() executor.Schema { return Schema() }

// Validate checks resolved settings as New reads them, contacting nothing.
func Validate(settings map[string]any) error {
	_, err := New(settings)
	return err
}

// Credentials reports an api_key_env that names an unset or empty
// environment variable (the key's value is never read into the message).
func Credentials(cfg map[string]any, getenv func(string) string) error {
	name, _ := cfg["api_key_env"].(string)
	if name == "" || getenv(name) != "" {
		return nil
	}
	return fmt.Errorf("the endpoint's API key is missing: api_key_env names %s, which is unset or empty; export the key in %s", name, name)
}
