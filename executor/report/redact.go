package report

import (
	"strings"

	"github.com/infercrane/infercrane/executor/redact"
)

// SecretsFromEnv returns the values of environment variables whose names
// suggest a credential (KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL), for
// Input.Secrets and Options.Secrets.
func SecretsFromEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || len(val) < redact.MinLen {
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
