package modal

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// LoadgenName is the load-generator-only binary's name (cmd/infercrane-loadgen);
// `make build` puts it next to infercrane.
const LoadgenName = "infercrane-loadgen"

// ResolveLoadgen finds the linux/amd64 load generator to copy into a
// benchmark sandbox: the configured path (infercrane-loadgen or a whole
// infercrane), else the infercrane-loadgen next to the running executable
// (a release, or `make build`, puts it there), else the running executable
// itself when it is linux/amd64 (a larger upload). It never builds one: a
// release binary runs no Go toolchain for its user. Without one, the error
// says which attribute to set.
func ResolveLoadgen(configured string) (string, error) {
	self, err := os.Executable()
	return resolveLoadgen(configured, self, err, runtime.GOOS+"/"+runtime.GOARCH)
}

// resolveLoadgen is ResolveLoadgen for a running executable self (selfErr:
// it is unknown) on platform ("linux/amd64").
func resolveLoadgen(configured, self string, selfErr error, platform string) (string, error) {
	if configured != "" {
		return checkConfigured(configured, LoadgenName)
	}
	if selfErr == nil {
		sibling := filepath.Join(filepath.Dir(self), LoadgenName)
		if checkLinuxAMD64(sibling) == nil {
			return sibling, nil
		}
	}
	if platform == "linux/amd64" && selfErr == nil {
		return self, nil
	}
	return "", noLinuxBinary(LoadgenName, platform, "an "+LoadgenName+" for linux/amd64 beside it")
}

// ResolveBinary finds the linux/amd64 infercrane CLI to copy into a
// sandbox that runs more than the load generator (profile shards): the
// configured path, else the running executable when it is one. It never
// builds one.
func ResolveBinary(configured string) (string, error) {
	self, err := os.Executable()
	return resolveBinary(configured, self, err, runtime.GOOS+"/"+runtime.GOARCH)
}

// resolveBinary is ResolveBinary for a running executable self on platform.
func resolveBinary(configured, self string, selfErr error, platform string) (string, error) {
	if configured != "" {
		return checkConfigured(configured, "infercrane")
	}
	if platform == "linux/amd64" && selfErr == nil {
		return self, nil
	}
	return "", noLinuxBinary("infercrane", platform, "")
}

// noLinuxBinary is the error for a sandbox binary that is not there.
func noLinuxBinary(cmd, platform, beside string) error {
	if beside != "" {
		beside = " and has no " + beside
	}
	return fmt.Errorf("modal executor: no linux/amd64 %s to copy into the sandbox: this infercrane runs on %s%s; set the executor's binary attribute to a linux/amd64 %s (from the linux/amd64 release, or `make build` on linux/amd64)", cmd, platform, beside, cmd)
}

// checkConfigured accepts a configured binary that is linux/amd64.
func checkConfigured(path, cmd string) (string, error) {
	if err := checkLinuxAMD64(path); err != nil {
		return "", fmt.Errorf("modal executor: binary %s: %w; use the linux/amd64 %s of a release, or build one with: GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -trimpath -ldflags \"-s -w\" -o %s ./cmd/%s", path, err, cmd, cmd, cmd)
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
