package report

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Redacted replaces a secret wherever it would appear.
const Redacted = "[redacted]"

// minSecretLen keeps short values (a "1", "true") from being treated as
// secrets and redacting unrelated text.
const minSecretLen = 6

func hasSecrets(secrets []string) bool {
	for _, s := range secrets {
		if len(s) >= minSecretLen {
			return true
		}
	}
	return false
}

// RedactText replaces every occurrence of each secret in s.
func RedactText(s string, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= minSecretLen {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	return s
}

// redactJSON replaces secrets inside the JSON text raw, matching both the
// raw and the JSON-escaped spelling of each secret.
func redactJSON(raw []byte, secrets []string) []byte {
	for _, sec := range secrets {
		if len(sec) < minSecretLen {
			continue
		}
		esc, _ := json.Marshal(sec)
		esc = esc[1 : len(esc)-1]
		raw = bytes.ReplaceAll(raw, esc, []byte(Redacted))
		raw = bytes.ReplaceAll(raw, []byte(sec), []byte(Redacted))
	}
	return raw
}

// SecretsFromEnv returns the values of environment variables whose names
// suggest a credential (KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL), for
// Input.Secrets and Options.Secrets.
func SecretsFromEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || len(val) < minSecretLen {
			continue
		}
		up := strings.ToUpper(name)
		for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"} {
			if strings.Contains(up, w) {
				out = append(out, val)
				break
			}
		}
	}
	return out
}
