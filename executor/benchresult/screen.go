package benchresult

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// parseScreen reads an earlier InferCrane screen document: per model its
// runtime ("vllm==0.22.1"), benchmark ("aiperf==0.12.0") and GPU request,
// per campaign the workload, aggregate and runs (either per model or in
// an environment block).
func parseScreen(data []byte) ([]Result, error) {
	type figures map[string]json.RawMessage
	type campaign struct {
		Profile     string  `json:"profile"`
		Recipe      string  `json:"recipe"`
		Concurrency int     `json:"concurrency"`
		Requests    int     `json:"request_count_per_run"`
		ProfileRuns int     `json:"profile_runs"`
		Command     string  `json:"command"`
		Aggregate   figures `json:"aggregate"`
		Runs        []figures
		Workload    struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
			Concurrency  int `json:"concurrency"`
			Requests     int `json:"requests_per_run"`
		} `json:"workload"`
	}
	type env struct {
		GPURequest json.RawMessage `json:"gpu_request"`
		GPU        string          `json:"gpu"`
		Runtime    json.RawMessage `json:"runtime"`
		Benchmark  string          `json:"benchmark"`
	}
	var doc struct {
		Environment env `json:"environment"`
		Models      []struct {
			env
			Model     string     `json:"model"`
			Campaigns []campaign `json:"campaigns"`
		} `json:"models"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	gpuOf := func(e env) string {
		var s string
		var list []string
		if json.Unmarshal(e.GPURequest, &s) == nil {
			list = []string{s}
		} else {
			_ = json.Unmarshal(e.GPURequest, &list)
		}
		for _, x := range append(list, e.GPU) {
			if g := GPUName(x); g != "" {
				return g
			}
		}
		return ""
	}
	engineOf := func(e env) (string, string) {
		var s string
		if json.Unmarshal(e.Runtime, &s) == nil {
			if en, v, err := ParseEngine(s); err == nil {
				return en, v
			}
		}
		var o struct{ Engine, Version string }
		if json.Unmarshal(e.Runtime, &o) == nil && o.Engine != "" {
			return o.Engine, o.Version
		}
		return "", ""
	}
	fig := func(f figures) map[string]float64 {
		m := map[string]float64{}
		for _, k := range []string{TTFTP50, TTFTP95, TTFTP99, TPOTP50, TPOTP95, LatP50, LatP95, OutTput, ReqTput} {
			v, ok := num(f[k])
			put(m, k, v, ok)
		}
		return m
	}
	var out []Result
	for _, m := range doc.Models {
		for _, c := range m.Campaigns {
			r := Result{Tool: ToolScreen, Model: m.Model, Metrics: fig(c.Aggregate)}
			r.Label = m.Model + " " + c.Profile
			if r.GPU = gpuOf(m.env); r.GPU == "" {
				r.GPU = gpuOf(doc.Environment)
			}
			if r.Engine, r.EngineVersion = engineOf(m.env); r.Engine == "" {
				r.Engine, r.EngineVersion = engineOf(doc.Environment)
			}
			bench := m.Benchmark
			if bench == "" {
				bench = doc.Environment.Benchmark
			}
			if tool, v, err := ParseEngine(bench); err == nil {
				r.Tool, r.ToolVersion = ToolScreen+" via "+tool, v
			}
			r.InputTokens, r.OutputTokens = c.Workload.InputTokens, c.Workload.OutputTokens
			r.Concurrency = max(c.Concurrency, c.Workload.Concurrency)
			r.Requests = max(c.Requests, c.Workload.Requests)
			r.Warmup = flagValue(c.Command, "--warmup-request-count")
			for _, run := range c.Runs {
				r.RunMetrics = append(r.RunMetrics, fig(run))
			}
			r.Runs = max(len(c.Runs), c.ProfileRuns)
			r.Notes = append(r.Notes, "the screen's figures came from AIPerf's per-record exports: its inter_token_latency is our tpot; percentiles are nearest-rank")
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the screen document has no campaigns")
	}
	return out, nil
}

// flagValue is the integer value of flag in a command line (0 if absent).
func flagValue(command, flag string) int {
	f := strings.Fields(command)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == flag {
			v, _ := strconv.Atoi(f[i+1])
			return v
		}
	}
	return 0
}
