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

// ResolveBinary finds the linux/amd64 load generator binary to copy into
// sandboxes: the configured path (infercrane-loadgen or a whole infercrane),
// else the infercrane-loadgen next to the running executable, else the
// running executable itself when it is linux/amd64 (a larger upload), else a
// fresh `go build` of ./cmd/infercrane-loadgen from the module the current
// directory belongs to (written under cacheDir).
func ResolveBinary(configured, cacheDir string) (string, error) {
	if configured != "" {
		if err := checkLinuxAMD64(configured); err != nil {
			return "", fmt.Errorf("modal executor: binary %s: %w; build one with: GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -trimpath -ldflags \"-s -w\" -o %s ./cmd/%s", configured, err, LoadgenName, LoadgenName)
		}
		return configured, nil
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

// buildLinuxAMD64 cross-compiles the load generator of the enclosing module.
func buildLinuxAMD64(cacheDir string) (string, error) {
	hint := "set the executor's binary attribute to a linux/amd64 load generator (GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -trimpath -ldflags \"-s -w\" -o " + LoadgenName + " ./cmd/" + LoadgenName + ")"
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("modal executor: no linux/amd64 "+LoadgenName+" is next to this infercrane, this one is not linux/amd64, and no Go toolchain was found to build one (%v); %s", err, hint)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("modal executor: no linux/amd64 "+LoadgenName+" is next to this infercrane, this one is not linux/amd64, and the current directory is not inside the infercrane source tree; %s", hint)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("modal executor: %w", err)
	}
	out := filepath.Join(cacheDir, LoadgenName+"-linux-amd64")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "./cmd/"+LoadgenName)
	cmd.Dir = filepath.Dir(mod)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("modal executor: building a linux/amd64 %s in %s failed: %v\n%s%s", LoadgenName, cmd.Dir, err, stderr.String(), hint)
	}
	return out, nil
}
