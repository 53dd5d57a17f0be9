package modal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"
)

// Type is the executor type name in specs: executor "x" { type = "modal" }.
const Type = "modal"

// ErrNoCredentials is wrapped by CheckCredentials when Modal credentials
// are missing.
var ErrNoCredentials = errors.New("no Modal credentials")

// CheckCredentials reports whether Modal's clients would find credentials,
// the way Modal's SDK looks for them, without contacting Modal:
// MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, else the token of the MODAL_PROFILE
// (or active) profile in MODAL_CONFIG_PATH (default ~/.modal.toml). The
// error names what to set; it never contains a token.
func CheckCredentials(getenv func(string) string) error {
	id, secret := getenv("MODAL_TOKEN_ID"), getenv("MODAL_TOKEN_SECRET")
	if getenv("MODAL_OAUTH_REFRESH_TOKEN") != "" {
		return nil
	}
	path := getenv("MODAL_CONFIG_PATH")
	if path == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		path = filepath.Join(home, ".modal.toml")
	}
	profile := getenv("MODAL_PROFILE")
	if id == "" || secret == "" {
		raw, name, err := readProfile(path, profile)
		if err != nil {
			return fmt.Errorf("%w: %v; set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, or run `modal token new`", ErrNoCredentials, err)
		}
		if name != "" {
			id, secret = first(id, raw.TokenID), first(secret, raw.TokenSecret)
			if raw.OAuthRefreshToken != "" {
				return nil
			}
		}
	}
	switch {
	case id != "" && secret != "":
		return nil
	case id != "":
		return fmt.Errorf("%w: MODAL_TOKEN_ID is set but MODAL_TOKEN_SECRET is not; export both (from `modal token new` or the Modal dashboard)", ErrNoCredentials)
	case secret != "":
		return fmt.Errorf("%w: MODAL_TOKEN_SECRET is set but MODAL_TOKEN_ID is not; export both (from `modal token new` or the Modal dashboard)", ErrNoCredentials)
	case profile != "":
		return fmt.Errorf("%w: MODAL_PROFILE=%s has no token in %s and MODAL_TOKEN_ID/MODAL_TOKEN_SECRET are unset; run `modal token new --profile %s` or export MODAL_TOKEN_ID and MODAL_TOKEN_SECRET", ErrNoCredentials, profile, path, profile)
	}
	return fmt.Errorf("%w: MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are unset and %s has no active profile with a token; export both, or run `modal token new` to write %s (MODAL_PROFILE selects a profile)", ErrNoCredentials, path, path)
}

// profileTokens is the part of a ~/.modal.toml profile the check reads.
type profileTokens struct {
	TokenID           string `toml:"token_id"`
	TokenSecret       string `toml:"token_secret"`
	OAuthRefreshToken string `toml:"oauth_refresh_token"`
	Active            bool   `toml:"active"`
}

// readProfile reads the named (or active) profile of a Modal config file;
// name is "" when there is none. A missing file is no profile, not an error.
func readProfile(path, name string) (profileTokens, string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return profileTokens{}, "", nil
	}
	if err != nil {
		return profileTokens{}, "", fmt.Errorf("read %s: %v", path, err)
	}
	var cfg map[string]profileTokens
	if err := toml.Unmarshal(b, &cfg); err != nil {
		return profileTokens{}, "", fmt.Errorf("%s is not valid TOML (%v)", path, err)
	}
	if name == "" {
		for n, p := range cfg {
			if p.Active {
				name = n
				break
			}
		}
	}
	p, ok := cfg[name]
	if !ok {
		return profileTokens{}, "", nil
	}
	return p, name, nil
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Validate checks an executor block's attributes as New reads them,
// without contacting Modal (for validate and plan).
func Validate(cfg map[string]any) error {
	_, err := ParseConfig(cfg)
	return err
}

// Credentials is CheckCredentials for the executor registry: a block's
// attributes do not change where Modal's credentials come from.
func Credentials(_ map[string]any, getenv func(string) string) error {
	return CheckCredentials(getenv)
}
