package modal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// execOutput runs argv in sb and collects its output.
func execOutput(ctx context.Context, sb Sandbox, argv []string, timeout time.Duration) (stdout, stderr string, code int, err error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	p, err := sb.Exec(ctx, argv, ExecOptions{Timeout: timeout})
	if err != nil {
		return "", "", -1, err
	}
	var out, errb bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); copyAll(&out, p.Stdout()) }()
	go func() { defer wg.Done(); copyAll(&errb, p.Stderr()) }()
	code, err = p.Wait(ctx)
	wg.Wait()
	return out.String(), errb.String(), code, err
}

func copyAll(w io.Writer, r io.Reader) {
	if r != nil {
		io.Copy(w, r)
	}
}

// waitHealthy probes /health inside the sandbox until it answers 200, the
// server exits, or health_timeout passes.
func (e *Executor) waitHealthy(ctx context.Context, dep *deployed) error {
	hctx, cancel := context.WithTimeout(ctx, e.cfg.HealthTimeout)
	defer cancel()
	start := e.now()
	last := "no probe answered yet"
	lastNote := start
	for {
		if err := serverExited(hctx, dep); err != nil {
			return err
		}
		out, errOut, code, err := execOutput(hctx, dep.sb, probeCommand(), 30*time.Second)
		switch {
		case hctx.Err() != nil:
			// The deadline cut this probe short; keep the previous answer.
		case err == nil && code == 0:
			dep.log.note("server healthy after %s", e.now().Sub(start).Round(100*time.Millisecond))
			return nil
		case err != nil:
			last = err.Error()
		default:
			last = strings.TrimSpace(firstNonEmpty(errOut, out, "probe exited with code "+strconv.Itoa(code)))
		}
		if e.now().Sub(lastNote) >= 30*time.Second {
			dep.log.note("waiting for /health (%s so far): %s", e.now().Sub(start).Round(time.Second), last)
			lastNote = e.now()
		}
		t := time.NewTimer(e.poll)
		select {
		case <-hctx.Done():
			t.Stop()
			if ctx.Err() != nil {
				return fmt.Errorf("modal executor: cancelled while waiting for the server in sandbox %s: %w", dep.sb.ID(), ctx.Err())
			}
			return fmt.Errorf("modal executor: vllm serve in sandbox %s did not answer /health within health_timeout (%s); last probe: %s; the server's output is in %s; raise health_timeout if the image pull or model download is slow, or set volume to cache the weights", dep.sb.ID(), e.cfg.HealthTimeout, last, dep.log.where())
		case <-t.C:
		}
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// environment records what the sandbox actually runs: the GPU nvidia-smi
// reports, vLLM's and torch's versions, and where it runs. Probes that fail
// are recorded as "unknown" and noted in the log; they do not fail Deploy.
func (e *Executor) environment(ctx context.Context, dep *deployed) map[string]string {
	info := map[string]string{
		"executor":        "modal",
		"modal_app":       dep.spec.App,
		"sandbox_id":      dep.sb.ID(),
		"image":           dep.spec.Image,
		"gpu_request":     dep.spec.GPU,
		"startup_seconds": strconv.FormatFloat(dep.healthy.Sub(dep.created).Seconds(), 'f', 1, 64),
		"gpu":             "unknown",
		"gpu_count":       "unknown",
		"gpu_compute_cap": "unknown",
		"vllm_version":    "unknown",
		"torch_version":   "unknown",
	}
	if dep.spec.Environment != "" {
		info["modal_environment"] = dep.spec.Environment
	}
	if dep.spec.Region != "" {
		info["region"] = dep.spec.Region
	}
	if dep.spec.Cloud != "" {
		info["cloud"] = dep.spec.Cloud
	}
	if out, _, code, err := execOutput(ctx, dep.sb, gpuQueryCommand(), time.Minute); err == nil && code == 0 {
		name, capab, n := parseGPUQuery(out)
		if n > 0 {
			info["gpu"], info["gpu_compute_cap"], info["gpu_count"] = name, capab, strconv.Itoa(n)
		}
		if want, _, perr := ParseGPU(dep.spec.GPU); perr == nil && n > 0 && !gpuMatches(want, name) {
			info["gpu_mismatch"] = fmt.Sprintf("requested %s, got %s", dep.spec.GPU, name)
			dep.log.note("Modal gave %s for a %s request; the evidence records the GPU seen", name, dep.spec.GPU)
		}
	} else {
		dep.log.note("could not query the GPU with nvidia-smi (code %d, %v)", code, err)
	}
	if out, _, code, err := execOutput(ctx, dep.sb, versionsCommand(), 2*time.Minute); err == nil && code == 0 {
		lines := strings.Fields(out)
		if len(lines) >= 2 {
			info["vllm_version"], info["torch_version"] = lines[0], lines[1]
		}
	} else {
		dep.log.note("could not read the vLLM and torch versions (code %d, %v)", code, err)
	}
	return info
}

// parseGPUQuery reads `nvidia-smi --query-gpu=name,compute_cap
// --format=csv,noheader`: one "NAME, CAP" line per GPU.
func parseGPUQuery(out string) (name, capab string, count int) {
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		n, c, ok := strings.Cut(line, ",")
		if !ok {
			continue
		}
		if count == 0 {
			name, capab = strings.TrimSpace(n), strings.TrimSpace(c)
		}
		count++
	}
	return name, capab, count
}

// gpuMatches reports whether an nvidia-smi name is the catalog type asked
// for: "L4" matches "NVIDIA L4" but not "NVIDIA L40S", "A10" matches
// "NVIDIA A10G", "A100-80GB" matches "NVIDIA A100-SXM4-80GB".
func gpuMatches(catalog, seen string) bool {
	tokens := strings.FieldsFunc(strings.ToUpper(seen), func(r rune) bool { return r == ' ' || r == '-' })
	has := func(want string, suffixOK bool) bool {
		for _, t := range tokens {
			rest, ok := strings.CutPrefix(t, want)
			if ok && (rest == "" || suffixOK && (rest[0] < '0' || rest[0] > '9')) {
				return true
			}
		}
		return false
	}
	base, mem, _ := strings.Cut(strings.ToUpper(catalog), "-")
	return has(base, true) && (mem == "" || has(mem, false))
}

var errNoSandbox = errors.New("modal executor: this server's sandbox is unknown to this executor")
