package executor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

// TestRunLoadNoticesAServerGoneWithItsStreams: the simulated engine dies
// (its listener and every connection closed) while the run's last two
// streams are in flight and nothing more is to be sent, so no request
// fails with class connection; only broken streams show it. RunLoad's
// probe after the run finds no server and InfrastructureFailure makes the
// run an infrastructure failure, not a measurement.
func TestRunLoadNoticesAServerGoneWithItsStreams(t *testing.T) {
	s, err := sim.Listen("127.0.0.1:0", sim.Options{Model: "m", MaxModelLen: 4096, TTFT: time.Millisecond, ITL: time.Millisecond,
		// Every stream stalls after 2 tokens (the first two finish after
		// it); the last two must still be stalled when the kill comes. 3 s
		// (1.5 s before) leaves a loaded machine's goroutine room to run
		// the kill; a kill after the stall finds all four succeeded.
		Faults: sim.Faults{StallAfter: 2, StallFor: 3 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill := func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // no grace: the connections are dropped at once
		_ = s.Shutdown(ctx)
	}
	defer once.Do(kill)
	ctx := executor.WithProgress(context.Background(), func(p executor.Progress) {
		if p.Done >= 2 {
			// Kill once the last two requests are streams in flight (the
			// engine admitted all four; the stall keeps them open for 3 s):
			// a kill racing the send of the fourth made it a refused
			// connection, not a broken stream.
			go once.Do(func() {
				for end := time.Now().Add(2500 * time.Millisecond); len(s.Engine.Arrivals()) < 4 && time.Now().Before(end); {
					time.Sleep(time.Millisecond)
				}
				kill()
			})
		}
	})
	spec := executor.RunSpec{Lane: "l", Run: 1, Load: loadgen.Config{Model: "m", API: "chat", Streaming: true, InputTokens: 16, OutputTokens: 8, Concurrency: 2, Requests: 4, Seed: 1}}
	res, err := executor.RunLoad(ctx, &executor.Server{BaseURL: s.URL, Model: "m"}, spec, "")
	if err != nil {
		t.Fatal(err)
	}
	if sum := res.Summary; sum.Succeeded != 2 || sum.Failed != 2 || sum.Failures[loadgen.FailConnection] != 0 {
		t.Fatalf("want 2 succeeded and 2 streams cut by the server's death, no connection failure: %+v", sum)
	}
	if !strings.Contains(res.ServerLost, "GET /v1/models after the run") {
		t.Fatalf("ServerLost = %q, want the probe's failure", res.ServerLost)
	}
	var ue *executor.UnreachableError
	if err := executor.InfrastructureFailure(res); !errors.As(err, &ue) || !strings.Contains(err.Error(), "next apply redoes it") {
		t.Fatalf("InfrastructureFailure = %v, want an UnreachableError saying the run is redone", err)
	}
}

// TestServerErrorsAreAMeasurement: a server that stays up and answers
// with 500 and broken streams was measured: RunLoad's probe finds it and
// InfrastructureFailure lets the run count.
func TestServerErrorsAreAMeasurement(t *testing.T) {
	s, err := sim.Listen("127.0.0.1:0", sim.Options{Model: "m", MaxModelLen: 4096, TTFT: time.Millisecond, ITL: time.Millisecond,
		Faults: sim.Faults{FailAt: map[int]int{2: 500}, CutAfter: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	spec := executor.RunSpec{Lane: "l", Run: 1, Load: loadgen.Config{Model: "m", API: "chat", Streaming: true, InputTokens: 16, OutputTokens: 8, Concurrency: 2, Requests: 4, Seed: 1}}
	res, err := executor.RunLoad(context.Background(), &executor.Server{BaseURL: s.URL, Model: "m"}, spec, "")
	if err != nil {
		t.Fatal(err)
	}
	if sum := res.Summary; sum.Failures[loadgen.FailServerError] != 1 || sum.Failures[loadgen.FailStreamBroken] != 3 {
		t.Fatalf("want 1 server error and 3 broken streams: %+v", sum)
	}
	if res.ServerLost != "" {
		t.Fatalf("the server is up, yet ServerLost = %q", res.ServerLost)
	}
	if err := executor.InfrastructureFailure(res); err != nil {
		t.Fatalf("a server answering with errors is a measurement, got %v", err)
	}
}

// TestConnectionFailuresAreInfrastructure: one request that could not
// connect makes the run an infrastructure failure, whatever the executor
// (the summary crosses plugin and sandbox boundaries as it is).
func TestConnectionFailuresAreInfrastructure(t *testing.T) {
	res := &executor.RunResult{Summary: loadgen.Summary{Requests: 8, Succeeded: 2, Failed: 6, Failures: map[string]int{loadgen.FailConnection: 4, loadgen.FailStreamBroken: 2}}}
	err := executor.InfrastructureFailure(res)
	if err == nil || !strings.Contains(err.Error(), "4 of 8 requests got no answer") || !strings.Contains(err.Error(), "connection 4, stream_broken 2") {
		t.Fatalf("got %v", err)
	}
}
