package modal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCredentials follows Modal's own lookup: the token variables,
// else the MODAL_PROFILE or active profile of the config file; what is
// missing is named, and no token value appears in a message.
func TestCheckCredentials(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "modal.toml")
	if err := os.WriteFile(cfg, []byte("[default]\ntoken_id = \"ak-file\"\ntoken_secret = \"as-file\"\nactive = true\n\n[empty]\nenvironment = \"dev\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[default\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  map[string]string
		want string // "" = credentials found
	}{
		{map[string]string{"MODAL_TOKEN_ID": "ak-1", "MODAL_TOKEN_SECRET": "as-1", "MODAL_CONFIG_PATH": "/nonexistent"}, ""},
		{map[string]string{"MODAL_CONFIG_PATH": cfg}, ""},
		{map[string]string{"MODAL_CONFIG_PATH": cfg, "MODAL_TOKEN_ID": "ak-env"}, ""}, // secret from the file
		{map[string]string{"MODAL_CONFIG_PATH": "/nonexistent"}, "MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are unset"},
		{map[string]string{"HOME": dir}, "MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are unset and " + filepath.Join(dir, ".modal.toml")},
		{map[string]string{"MODAL_CONFIG_PATH": "/nonexistent", "MODAL_TOKEN_ID": "ak-secret"}, "MODAL_TOKEN_ID is set but MODAL_TOKEN_SECRET is not"},
		{map[string]string{"MODAL_CONFIG_PATH": "/nonexistent", "MODAL_TOKEN_SECRET": "as-secret"}, "MODAL_TOKEN_SECRET is set but MODAL_TOKEN_ID is not"},
		{map[string]string{"MODAL_CONFIG_PATH": cfg, "MODAL_PROFILE": "empty"}, "MODAL_PROFILE=empty has no token"},
		{map[string]string{"MODAL_CONFIG_PATH": cfg, "MODAL_PROFILE": "nosuch"}, "MODAL_PROFILE=nosuch has no token"},
		{map[string]string{"MODAL_CONFIG_PATH": bad}, "is not valid TOML"},
	} {
		err := CheckCredentials(func(k string) string { return c.env[k] })
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.env, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrNoCredentials)):
			t.Errorf("%v: got %v, want %q", c.env, err, c.want)
		case err != nil && (strings.Contains(err.Error(), "ak-") || strings.Contains(err.Error(), "as-")):
			t.Errorf("%v: a token in the message: %v", c.env, err)
		}
	}
}
