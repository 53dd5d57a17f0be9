package main

import (
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
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

// TestReleaseBuild checks the binaries `make build` wrote (make
// check-binary, part of make bench, points INFERCRANE_RELEASE_BIN at them):
// both are static (no ELF interpreter, built with CGO_ENABLED=0), stripped
// (no symbol table or DWARF: -ldflags "-s -w"), built with -trimpath, and the load
// generator the modal executor uploads is a small fraction of the CLI. It
// logs their sizes for docs/benchmarks.md.
func TestReleaseBuild(t *testing.T) {
	dir := os.Getenv("INFERCRANE_RELEASE_BIN")
	if dir == "" {
		t.Skip("set INFERCRANE_RELEASE_BIN to the directory make build wrote (make check-binary does)")
	}
	sizes := map[string]int64{}
	for _, name := range []string{"infercrane", "infercrane-loadgen"} {
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		sizes[name] = fi.Size()
		f, err := elf.Open(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked (it has an ELF interpreter)", name)
			}
		}
		for _, sec := range []string{".symtab", ".debug_info", ".zdebug_info"} {
			if f.Section(sec) != nil {
				t.Errorf("%s is not stripped (it has %s; build with -ldflags \"-s -w\")", name, sec)
			}
		}
		f.Close()
		info, err := buildinfo.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		// (Go does not record -ldflags when -trimpath is set; the sections
		// above show the stripping.)
		if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
			t.Errorf("%s was built with CGO_ENABLED=%q -trimpath=%q; want 0 and true", name, settings["CGO_ENABLED"], settings["-trimpath"])
		}
	}
	cli, lg := sizes["infercrane"], sizes["infercrane-loadgen"]
	t.Logf("infercrane %.1f MB, infercrane-loadgen %.1f MB (%.0f%% of the CLI)", float64(cli)/1e6, float64(lg)/1e6, 100*float64(lg)/float64(cli))
	if lg*4 > cli {
		t.Errorf("infercrane-loadgen is %d bytes, more than a quarter of infercrane's %d: what does it link?", lg, cli)
	}
}
