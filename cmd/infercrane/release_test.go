package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestReleaseBinaryLinksNoTestDoubles: the shipped CLI's dependency graph
// (without its tests) does not contain the Modal stand-in cloud, so no
// environment variable can switch a release binary onto it.
func TestReleaseBinaryLinksNoTestDoubles(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps gave %d packages", len(deps))
	}
	for _, d := range deps {
		if strings.HasSuffix(d, "/plugins/modal/localcloud") {
			t.Errorf("the release binary links %s", d)
		}
	}
	// The control: the test binary does link it (the testscript wiring).
	out, err = exec.Command("go", "list", "-deps", "-test", ".").Output()
	if err != nil || !strings.Contains(string(out), "/plugins/modal/localcloud") {
		t.Errorf("go list -deps -test does not show localcloud (%v)", err)
	}
}
