package local

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/lang/engine"
)

// Placeholders a custom command may use; each is replaced by the
// deployment's value (the runtime's flag settings by their names).
var placeholderDoc = "{model}, {revision}, {port}, {host}, {max_model_len}, {seed}, " + engine.PlaceholderNames()

// vllmCommand is the default server command for a deployment.
func vllmCommand(d executor.Deployment, host string, port int) []string {
	args := []string{"vllm", "serve", d.ModelID}
	if d.Revision != "" {
		args = append(args, "--revision", d.Revision)
	}
	args = append(args,
		"--host", host,
		"--port", strconv.Itoa(port),
		"--max-model-len", strconv.Itoa(d.MaxContext),
		"--seed", strconv.FormatInt(d.Seed, 10),
		"--no-enable-log-requests",
	)
	args = append(args, d.Flags()...)
	if d.GPUCount > 1 {
		args = append(args, "--tensor-parallel-size", strconv.Itoa(d.GPUCount))
	}
	return append(args, d.RuntimeArgs...)
}

// expand replaces the placeholders of a custom command; an unknown
// placeholder is an error naming the valid ones.
func expand(cmd []string, d executor.Deployment, host string, port int) ([]string, error) {
	vals := map[string]string{
		"model":         d.ModelID,
		"revision":      d.Revision,
		"port":          strconv.Itoa(port),
		"host":          host,
		"max_model_len": strconv.Itoa(d.MaxContext),
		"seed":          strconv.FormatInt(d.Seed, 10),
	}
	maps.Copy(vals, d.Placeholders())
	out := make([]string, len(cmd))
	for i, arg := range cmd {
		var b strings.Builder
		rest := arg
		for {
			open := strings.IndexByte(rest, '{')
			if open < 0 {
				b.WriteString(rest)
				break
			}
			end := strings.IndexByte(rest[open:], '}')
			if end < 0 {
				b.WriteString(rest)
				break
			}
			name := rest[open+1 : open+end]
			v, ok := vals[name]
			if !ok {
				return nil, fmt.Errorf("command argument %q has an unknown placeholder {%s}; valid ones: %s", arg, name, placeholderDoc)
			}
			b.WriteString(rest[:open])
			b.WriteString(v)
			rest = rest[open+end+1:]
		}
		out[i] = b.String()
	}
	return out, nil
}
