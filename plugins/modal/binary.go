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

// LoadgenName is the load-generator-only binary's name (cmd/infercrane-loadgen);
// `make build` puts it next to infercrane.
const LoadgenName = "infercrane-loadgen"

// ResolveLoadgen finds the linux/amd64 load generator to copy into a
// benchmark sandbox: the configured path (infercrane-loadgen or a whole
// infercrane), else the infercrane-loadgen next to the running executable,
// else the running executable itself when it is linux/amd64 (a larger
// upload), else a fresh `go build` of ./cmd/infercrane-loadgen from the
// module the current directory belongs to (written under cacheDir).
func ResolveLoadgen(configured, cacheDir string) (string, error) {
	if configured != "" {
		return checkConfigured(configured, LoadgenName)
	}
	self, selfErr := os.Executable()
	if selfErr == nil {
		sibling := filepath.Join(filepath.Dir(self), LoadgenName)
		if checkLinuxAMD64(sibling) == nil {
			return sibling, nil
		}
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" && selfErr == nil {
		return self, nil
	}
	return buildLinuxAMD64(cacheDir, LoadgenName)
}

// ResolveBinary finds the linux/amd64 infercrane CLI to copy into a
// sandbox that runs more than the load generator (profile shards): the
// configured path, else the running executable when it is one, else a
// fresh `go build` of ./cmd/infercrane (written under cacheDir).
func ResolveBinary(configured, cacheDir string) (string, error) {
	if configured != "" {
		return checkConfigured(configured, "infercrane")
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		if self, err := os.Executable(); err == nil {
			return self, nil
		}
	}
	return buildLinuxAMD64(cacheDir, "infercrane")
}

// checkConfigured accepts a configured binary that is linux/amd64.
func checkConfigured(path, cmd string) (string, error) {
	if err := checkLinuxAMD64(path); err != nil {
		return "", fmt.Errorf("modal executor: binary %s: %w; build one with: GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -trimpath -ldflags \"-s -w\" -o %s ./cmd/%s", path, err, cmd, cmd)
	}
	return path, nil
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

// buildLinuxAMD64 cross-compiles ./cmd/CMD of the enclosing module.
func buildLinuxAMD64(cacheDir, cmdName string) (string, error) {
	hint := "set the executor's binary attribute to a linux/amd64 " + cmdName + " (GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -trimpath -ldflags \"-s -w\" -o " + cmdName + " ./cmd/" + cmdName + ")"
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("modal executor: this infercrane is not linux/amd64 and no Go toolchain was found to build %s (%v); %s", cmdName, err, hint)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("modal executor: this infercrane is not linux/amd64 and the current directory is not inside the infercrane source tree to build %s; %s", cmdName, hint)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("modal executor: %w", err)
	}
	out := filepath.Join(cacheDir, cmdName+"-linux-amd64")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "./cmd/"+cmdName)
	cmd.Dir = filepath.Dir(mod)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("modal executor: building a linux/amd64 %s in %s failed: %v\n%s%s", cmdName, cmd.Dir, err, stderr.String(), hint)
	}
	return out, nil
}
