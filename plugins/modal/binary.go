package modal

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// ResolveBinary finds the linux/amd64 infercrane binary to copy into
// sandboxes: the configured path, else the running executable when it is
// one, else a fresh `go build` of ./cmd/infercrane from the module the
// current directory belongs to (written under cacheDir).
func ResolveBinary(configured, cacheDir string) (string, error) {
	if configured != "" {
		if err := checkLinuxAMD64(configured); err != nil {
			return "", fmt.Errorf("modal executor: binary %s: %w; build one with: GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -o infercrane-linux-amd64 ./cmd/infercrane", configured, err)
		}
		return configured, nil
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		if self, err := os.Executable(); err == nil {
			return self, nil
		}
	}
	return buildLinuxAMD64(cacheDir)
}

// checkLinuxAMD64 verifies that path is an x86-64 Linux ELF executable.
func checkLinuxAMD64(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("not a Linux executable (%v)", err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("is a %s %s file, not a linux/amd64 executable", f.Machine, f.Type)
	}
	return nil
}

// buildLinuxAMD64 cross-compiles the infercrane command of the enclosing module.
func buildLinuxAMD64(cacheDir string) (string, error) {
	hint := "set the executor's binary attribute to a linux/amd64 infercrane binary (GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -o infercrane-linux-amd64 ./cmd/infercrane)"
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("modal executor: this infercrane is not linux/amd64 and no Go toolchain was found to build one (%v); %s", err, hint)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("modal executor: this infercrane is not linux/amd64 and the current directory is not inside the infercrane source tree; %s", hint)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("modal executor: %w", err)
	}
	out := filepath.Join(cacheDir, "infercrane-linux-amd64")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./cmd/infercrane")
	cmd.Dir = filepath.Dir(mod)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("modal executor: building a linux/amd64 infercrane in %s failed: %v\n%s%s", cmd.Dir, err, stderr.String(), hint)
	}
	return out, nil
}
