package loadgen_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

// startSim serves a simulated engine on loopback for the test's lifetime.
func startSim(t testing.TB, opts sim.Options) string {
	t.Helper()
	e, err := sim.New(opts)
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

func TestSmoke(t *testing.T) {
	url := startSim(t, sim.Options{TTFT: 20 * time.Millisecond, ITL: 2 * time.Millisecond})
	res, err := loadgen.Run(context.Background(), baseConfig(url))
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	t.Logf("%+v", s)
	t.Logf("%+v", res.Calibrations)
	t.Logf("%+v", res.Records[0])
}
