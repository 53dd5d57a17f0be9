package modal_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/plugins/modal"
	"github.com/infercrane/infercrane/plugins/modal/localcloud"
)

// The whole path: a sandbox running the stand-in for vllm serve, the binary
// copied in, /health awaited, the environment recorded, two runs of the real
// load generator inside the sandbox, the results read back, and teardown
// leaving nothing behind.
func TestDeployRunTeardown(t *testing.T) {
	f := newFixture(t, map[string]any{"secrets": []any{"hf"}, "volume": "hf-cache", "region": "us-east", "cloud": "aws"},
		func(c *localcloud.Cloud) { c.Secrets = map[string]map[string]string{"hf": {"HF_TOKEN": "hf_x"}} })
	d := f.deployment("dep1")
	srv, err := f.exec.Deploy(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := f.cloud.Meta(srv.Handle)
	if err != nil {
		t.Fatal(err)
	}
	// What Modal was asked for.
	sp := meta.Spec
	if sp.GPU != "L4" || sp.Image != "vllm/vllm-openai:v0.22.1" || sp.App != "infercrane" || sp.Volume != "hf-cache" ||
		sp.VolumeMount != "/root/.cache/huggingface" || !slices.Equal(sp.Secrets, []string{"hf"}) || sp.Region != "us-east" || sp.Cloud != "aws" ||
		sp.Timeout.Minutes() != 30 || sp.IdleTimeout.Minutes() != 5 {
		t.Fatalf("sandbox spec: %+v", sp)
	}
	cmd := strings.Join(sp.Command, " ")
	for _, flag := range []string{"vllm serve Qwen/Qwen3-0.6B", "--revision c1899de289a04d12100db370d81485cdf75e47ca", "--max-model-len 4096",
		"--max-num-seqs 64", "--max-num-batched-tokens 4096", "--seed 17", "--no-enable-log-requests", "--dtype bfloat16", "--port 8000"} {
		if !strings.Contains(cmd, flag) {
			t.Errorf("vllm command lacks %q: %s", flag, cmd)
		}
	}
	for k, v := range map[string]string{"infercrane": "1", "screen": "smoke", "deployment": "dep1", "apply": "apply-1"} {
		if sp.Tags[k] != v {
			t.Errorf("tag %s = %q, want %q", k, sp.Tags[k], v)
		}
	}
	if _, ok := sp.Tags["created_at"]; !ok {
		t.Error("no created_at tag")
	}
	// What the evidence records about the environment.
	for k, v := range map[string]string{"gpu": "NVIDIA L4", "gpu_compute_cap": "8.9", "gpu_count": "1", "vllm_version": "0.22.1",
		"torch_version": "2.9.0+cu128", "sandbox_id": srv.Handle, "gpu_request": "L4", "image": "vllm/vllm-openai:v0.22.1"} {
		if srv.Info[k] != v {
			t.Errorf("Info[%s] = %q, want %q", k, srv.Info[k], v)
		}
	}
	if _, bad := srv.Info["gpu_mismatch"]; bad {
		t.Errorf("mismatch reported for a matching GPU: %v", srv.Info)
	}
	if srv.BaseURL != "http://127.0.0.1:8000" || srv.Model != "Qwen/Qwen3-0.6B" {
		t.Fatalf("server: %+v", srv)
	}

	for run := 1; run <= 2; run++ {
		res, err := f.exec.Run(t.Context(), srv, executor.RunSpec{Lane: "lane-a", Run: run, Load: load(6)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Requests != 6 || res.Summary.Succeeded != 6 || len(res.Records) != 6 {
			t.Fatalf("run %d: summary %+v, %d records", run, res.Summary, len(res.Records))
		}
		for _, r := range res.Records {
			if !r.OK() || r.OutputTokens != 8 || r.FirstTokenNs <= r.SentNs {
				t.Fatalf("record %+v", r)
			}
		}
		if res.GPUSeconds <= 0 || res.Summary.TTFTMs.P50 < 5 {
			t.Fatalf("gpu seconds %v, ttft p50 %v ms (the stand-in's TTFT is 5 ms)", res.GPUSeconds, res.Summary.TTFTMs.P50)
		}
		// The load generator inside the sandbox read the server's
		// histograms before and after the measured requests and sent
		// them back: this run's 6 requests, not the previous run's too.
		checkServerView(t, fmt.Sprintf("run %d", run), res.Summary, res.ServerView)
		// And its gauges, sampled over the run as the local executors do.
		if res.ServerMetrics == nil || len(res.ServerSeries) < 2 {
			t.Fatalf("run %d: server metrics %v, %d gauge samples; want the last values and a series", run, res.ServerMetrics, len(res.ServerSeries))
		}
		for _, smp := range res.ServerSeries {
			if _, ok := smp.Values["vllm:num_requests_running"]; !ok {
				t.Fatalf("run %d: gauge sample %+v lacks vllm:num_requests_running", run, smp)
			}
		}
	}
	if err := f.exec.Teardown(t.Context(), srv); err != nil {
		t.Fatal(err)
	}
	f.mustBeGone(srv.Handle)
	terminates := 0
	f.cloud.Hooks.BeforeTerminate = func(string) error { terminates++; return nil }
	if err := f.exec.Teardown(t.Context(), srv); err != nil || terminates != 0 {
		t.Fatalf("second teardown: %v, %d more terminates", err, terminates)
	}
	left, err := f.exec.Leftovers(t.Context(), "apply-1")
	if err != nil || len(left) != 0 {
		t.Fatalf("leftovers %v, %v", left, err)
	}
	var rec modal.TeardownRecord
	if err := json.Unmarshal([]byte(f.teardownRecord("dep1")), &rec); err != nil {
		t.Fatal(err)
	}
	if !rec.Terminated || rec.SandboxID != srv.Handle || rec.Attempts != 1 || rec.RunGPUSeconds <= 0 || rec.GPUSeconds < rec.RunGPUSeconds || rec.StartupSeconds <= 0 {
		t.Fatalf("teardown record %+v", rec)
	}
	log := f.logFile("dep1")
	for _, want := range []string{"[infercrane] creating sandbox", "server healthy", "run 2 of lane lane-a: 6 of 6 requests succeeded", "terminated"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// Different deployments run in parallel sandboxes, each on its own server.
func TestParallelDeployments(t *testing.T) {
	f := newFixture(t, nil, nil)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	handles := make([]string, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := f.deployment(fmt.Sprintf("dep%d", i))
			srv, err := f.exec.Deploy(t.Context(), d)
			if err != nil {
				errs[i] = err
				return
			}
			handles[i] = srv.Handle
			defer func() {
				if err := f.exec.Teardown(t.Context(), srv); err != nil && errs[i] == nil {
					errs[i] = err
				}
			}()
			res, err := f.exec.Run(t.Context(), srv, executor.RunSpec{Lane: d.ID, Run: 1, Load: load(4)})
			if err == nil && res.Summary.Succeeded != 4 {
				err = fmt.Errorf("%d of 4 succeeded", res.Summary.Succeeded)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("deployment %d: %v", i, err)
		}
	}
	if handles[0] == handles[1] || handles[1] == handles[2] {
		t.Fatalf("deployments shared a sandbox: %v", handles)
	}
	for _, h := range handles {
		f.mustBeGone(h)
	}
}

// The GPU Modal actually gave is recorded, and a different one is flagged.
func TestGPUMismatchRecorded(t *testing.T) {
	f := newFixture(t, nil, func(c *localcloud.Cloud) { c.GPUName, c.ComputeCap = "NVIDIA H200", "9.0" })
	d := f.deployment("dep1")
	d.GPUType, d.GPUCount = "H100", 2
	srv, err := f.exec.Deploy(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	defer f.exec.Teardown(t.Context(), srv)
	if srv.Info["gpu"] != "NVIDIA H200" || srv.Info["gpu_count"] != "2" || srv.Info["gpu_mismatch"] != "requested H100:2, got NVIDIA H200" {
		t.Fatalf("info %v", srv.Info)
	}
	if m, _ := f.cloud.Meta(srv.Handle); !strings.Contains(strings.Join(m.Spec.Command, " "), "--tensor-parallel-size 2") {
		t.Fatalf("two GPUs without tensor parallelism: %v", m.Spec.Command)
	}
}

// Close, the runner's last resort, terminates whatever is still up.
func TestCloseTerminatesEverything(t *testing.T) {
	f := newFixture(t, nil, nil)
	srv, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.exec.Close(); err != nil {
		t.Fatal(err)
	}
	f.mustBeGone(srv.Handle)
}

// checkServerView asserts that a run's server view is the stand-in engine's
// own record of exactly the run's requests and reconciles with the client's
// figures, the client never reading less than the server.
func checkServerView(t *testing.T, what string, sum loadgen.Summary, v *loadgen.ServerView) {
	t.Helper()
	if v == nil {
		t.Fatalf("%s: no server view: the load generator in the sandbox did not send the server's histograms back", what)
	}
	for _, d := range []*loadgen.ServerDist{v.TTFTMs, v.TPOTMs, v.LatencyMs} {
		if d == nil || d.Count != sum.Succeeded {
			t.Fatalf("%s: server view %+v does not count the run's %d requests", what, d, sum.Succeeded)
		}
	}
	if h := v.Histograms[loadgen.ServerTTFT]; h == nil || h.Count != float64(sum.Succeeded) {
		t.Fatalf("%s: histogram %s: %+v", what, loadgen.ServerTTFT, h)
	}
	// The engine's clock starts after the client's and stops before it.
	if v.TTFTMs.Mean < 4 || v.TTFTMs.Mean > sum.TTFTMs.Mean || v.LatencyMs.Mean > sum.LatencyMs.Mean {
		t.Fatalf("%s: server ttft mean %.2f ms, latency mean %.2f ms; client %.2f ms, %.2f ms", what, v.TTFTMs.Mean, v.LatencyMs.Mean, sum.TTFTMs.Mean, sum.LatencyMs.Mean)
	}
	// One run is judged with the 2 ms floor alone, which the client on a
	// loaded machine may exceed (timing); a client mean below the server's
	// by more than the floor is never timing: it misses time.
	rc := loadgen.Reconcile(&sum, v, loadgen.DefaultMargin)
	if !rc.Comparable || len(rc.Checks) == 0 {
		t.Fatalf("%s: reconciliation %+v", what, rc)
	}
	for _, c := range rc.Checks {
		if c.Stat == "mean" && (c.Metric == "ttft" || c.Metric == "latency") && c.Outside && c.ClientMs < c.LowMs {
			t.Fatalf("%s: the client's %s mean %.2f ms is below the server's %.2f ms: %+v", what, c.Metric, c.ClientMs, c.ServerMs, rc.Flagged)
		}
	}
}
