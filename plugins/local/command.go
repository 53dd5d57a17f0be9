package local

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/infercrane/infercrane/executor"
)

// Placeholders a custom command may use; each is replaced by the
// deployment's value.
var placeholderDoc = "{model}, {revision}, {port}, {host}, {max_model_len}, {seed}, {dtype}, {gpu_memory_utilization}, {max_num_seqs}, {max_num_batched_tokens}"

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
	if d.RuntimeDtype != "" {
		args = append(args, "--dtype", d.RuntimeDtype)
	}
	if d.GPUMemoryUtil > 0 {
		args = append(args, "--gpu-memory-utilization", strconv.FormatFloat(d.GPUMemoryUtil, 'g', -1, 64))
	}
	if d.MaxNumSeqs > 0 {
		args = append(args, "--max-num-seqs", strconv.Itoa(d.MaxNumSeqs))
	}
	if d.MaxBatchedTokens > 0 {
		args = append(args, "--max-num-batched-tokens", strconv.Itoa(d.MaxBatchedTokens))
	}
	if d.GPUCount > 1 {
		args = append(args, "--tensor-parallel-size", strconv.Itoa(d.GPUCount))
	}
	return append(args, d.RuntimeArgs...)
}

// expand replaces the placeholders of a custom command; an unknown
// placeholder is an error naming the valid ones.
func expand(cmd []string, d executor.Deployment, host string, port int) ([]string, error) {
	vals := map[string]string{
		"model":                  d.ModelID,
		"revision":               d.Revision,
		"port":                   strconv.Itoa(port),
		"host":                   host,
		"max_model_len":          strconv.Itoa(d.MaxContext),
		"seed":                   strconv.FormatInt(d.Seed, 10),
		"dtype":                  d.RuntimeDtype,
		"gpu_memory_utilization": strconv.FormatFloat(d.GPUMemoryUtil, 'g', -1, 64),
		"max_num_seqs":           strconv.Itoa(d.MaxNumSeqs),
		"max_num_batched_tokens": strconv.Itoa(d.MaxBatchedTokens),
	}
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
