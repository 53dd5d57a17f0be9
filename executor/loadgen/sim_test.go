package loadgen_test

import (
	"net/http/httptest"
	"testing"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

// startSim serves a simulated engine on loopback for the test's lifetime.
func startSim(t testing.TB, opts sim.Options) string {
	t.Helper()
	e, err := sim.NewEngine(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	t.Cleanup(func() {
		e.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

func baseConfig(url string) loadgen.Config {
	return loadgen.Config{BaseURL: url, Model: "sim", API: "chat", Streaming: true,
		InputTokens: 64, OutputTokens: 16, Concurrency: 4, Requests: 16, Seed: 7}
}
