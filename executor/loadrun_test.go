package executor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/sim"
)

func TestAttrsCheck(t *testing.T) {
	s := executor.Schema{Attributes: []executor.Attribute{
		{Name: "url", Type: executor.AttrString, Required: true, Doc: "the URL"},
		{Name: "n", Type: executor.AttrNumber},
		{Name: "wait", Type: executor.AttrDuration},
		{Name: "args", Type: executor.AttrStringList},
		{Name: "env", Type: executor.AttrStringMap},
		{Name: "timeout", Type: executor.AttrDuration, Min: executor.Seconds(time.Minute), Max: executor.Seconds(24 * time.Hour)},
		{Name: "speed", Type: executor.AttrNumber, Min: executor.Bound(1), Whole: true},
		{Name: "mode", Type: executor.AttrString, Enum: []string{"a", "b"}},
	}}
	ok := executor.Attrs{"url": "x", "n": 2.0, "wait": "3s", "args": []any{"a"}, "env": map[string]any{"K": "v"}}
	if err := ok.Check("t", s); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a    executor.Attrs
		want string
	}{
		{executor.Attrs{}, `needs attribute "url" (the URL)`},
		{executor.Attrs{"url": "x", "nope": 1.0}, `no attribute "nope"; valid attributes: url, n, wait, args, env`},
		{executor.Attrs{"url": 3.0}, `attribute "url": want string`},
		{executor.Attrs{"url": "x", "wait": "soon"}, `"soon" is not a duration; write a number and a unit`},
		{executor.Attrs{"url": "x", "wait": "30 m"}, `"30 m" is not a duration`},
		{executor.Attrs{"url": "x", "timeout": "48h"}, `"48h" is out of range; use a value from 1m to 24h`},
		{executor.Attrs{"url": "x", "timeout": "0s"}, `"0s" is out of range; use a value from 1m to 24h`},
		{executor.Attrs{"url": "x", "speed": 0.0}, `0 is too small; use at least 1`},
		{executor.Attrs{"url": "x", "speed": 1.5}, `want a whole number`},
		{executor.Attrs{"url": "x", "mode": "c"}, `"c" is not one of "a", "b"`},
		{executor.Attrs{"url": "x", "args": []any{1.0}}, `want list(string)`},
	} {
		err := c.a.Check("t", s)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.a, err, c.want)
		}
		var ae *executor.AttrError
		if !errors.As(err, &ae) || ae.Name == "" {
			t.Errorf("%v: %v is not an AttrError naming the attribute", c.a, err)
		}
	}
}

// TestRunLoadScrapesServerSeries: a run against the simulated engine
// (which serves vLLM's gauges on /metrics) keeps the KV-cache usage and
// the running and waiting requests over the run, timed from the run's
// origin and ordered, not only the last values; the journal keeps them and
// the report draws them.
func TestRunLoadScrapesServerSeries(t *testing.T) {
	s, err := sim.Listen("127.0.0.1:0", sim.Options{Model: "m", MaxModelLen: 4096, TTFT: 20 * time.Millisecond, ITL: 10 * time.Millisecond, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	spec := executor.RunSpec{Lane: "l", Run: 1, Load: loadgen.Config{Model: "m", API: "chat", Streaming: true, InputTokens: 32, OutputTokens: 40, Concurrency: 4, Requests: 12, Seed: 1}}
	res, err := executor.RunLoad(context.Background(), &executor.Server{BaseURL: s.URL, Model: "m"}, spec, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ServerSeries) < 3 {
		t.Fatalf("%d samples over a ~1.5 s run scraped every %v, want several", len(res.ServerSeries), loadgen.DefaultGaugeInterval)
	}
	sawRunning := false
	for i, smp := range res.ServerSeries {
		if i > 0 && smp.T < res.ServerSeries[i-1].T {
			t.Fatalf("samples out of order: %v", res.ServerSeries)
		}
		for _, name := range []string{"vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting"} {
			if _, ok := smp.Values[name]; !ok {
				t.Fatalf("sample %d lacks %s: %v", i, name, smp.Values)
			}
		}
		sawRunning = sawRunning || smp.Values["vllm:num_requests_running"] > 0
	}
	if !sawRunning {
		t.Errorf("no sample saw a running request: %v", res.ServerSeries)
	}
	if res.ServerMetrics == nil {
		t.Error("the last values (server_metrics) are gone")
	}
}
