package localcloud

import (
	"os"
	"strings"
)

// Environment variables that select the local stand-in instead of Modal.
const (
	// EnvDir names the local cloud's directory; honoured only when EnvTest is "1".
	EnvDir = "INFERCRANE_MODAL_LOCAL"
	// EnvBin names the infercrane binary for `sim serve` (default: this executable).
	EnvBin = "INFERCRANE_MODAL_LOCAL_BIN"
	// EnvSimArgs holds extra `sim serve` flags, separated by spaces.
	EnvSimArgs = "INFERCRANE_MODAL_LOCAL_SIM_ARGS"
	// EnvTest is set by InferCrane's test harness.
	EnvTest = "INFERCRANE_TEST"
)

// FromEnv returns the local cloud named by INFERCRANE_MODAL_LOCAL when the
// process runs under InferCrane's tests (INFERCRANE_TEST=1), so that tests
// of commands can use it in place of Modal. Only test binaries call it (the
// CLI's test wiring in cmd/infercrane/*_test.go): the shipped binary does
// not link this package, so no environment variable can switch it here.
func FromEnv(getenv func(string) string) (*Cloud, bool) {
	dir := getenv(EnvDir)
	if dir == "" || getenv(EnvTest) != "1" {
		return nil, false
	}
	bin := getenv(EnvBin)
	if bin == "" {
		bin, _ = os.Executable()
	}
	c := New(dir, bin)
	c.SimArgs = strings.Fields(getenv(EnvSimArgs))
	return c, true
}
