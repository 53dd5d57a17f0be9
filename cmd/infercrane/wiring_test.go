package main

import (
	"time"

	"github.com/infercrane/infercrane/plugins/modal"
	"github.com/infercrane/infercrane/plugins/modal/localcloud"
)

// testWiring is the CLI's wiring under its own tests: when the script sets
// INFERCRANE_MODAL_LOCAL (and INFERCRANE_TEST=1), the modal executor and
// cleanup use the local stand-in for Modal's cloud (plugins/modal/localcloud,
// processes on this machine), which needs no credentials. Only this test
// binary links the stand-in; the shipped one cannot be switched onto it.
func testWiring(getenv func(string) string) wiring {
	w := productionWiring()
	// A plugin that never answers is given up on sooner than 30 s.
	if d, err := time.ParseDuration(getenv("INFERCRANE_TEST_PLUGIN_START_TIMEOUT")); err == nil {
		w.PluginStartTimeout = d
	}
	if c, ok := localcloud.FromEnv(getenv); ok {
		w.ModalCloud = func(string) (modal.Cloud, error) { return c, nil }
		w.ModalCredentials = func(func(string) string) error { return nil }
		w.ModalSeesLocalFiles = true
	}
	return w
}
