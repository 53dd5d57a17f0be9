package loadgen_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/planner/cputime"
)

// BenchmarkCapacity holds 1, 64, 512 and 2,048 concurrent streams against
// the simulated engine in constant mode (TTFT 50 ms, ITL 50 ms, 20 tokens
// each, workers ramped over one ITL), served by a child process so that
// this process's CPU time is the client's alone. It reports, per run: the
// tokens/s ingested, the client's timing error against the engine's flush
// times (lag p50 and p99: client arrival minus server flush, wall clock),
// the measured TTFT and ITL medians minus the configured ones, and the
// client's CPU per token next to the same figure for a naive client
// (default transport, bufio.Scanner, encoding/json) run in this process as
// the baseline, and their ratio.
func BenchmarkCapacity(b *testing.B) {
	const ttft, itl, out = 50 * time.Millisecond, 50 * time.Millisecond, 20
	for _, streams := range []int{1, 64, 512, 2048} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			ts := startChildTruth(b, ttft, itl)
			var tokS, lag50, lag99, ttftErr, itlErr, cpuTok, baseCPUTok float64
			var failed int
			for b.Loop() {
				ts.reset()
				cfg := baseConfig(ts.URL)
				cfg.Concurrency, cfg.Requests, cfg.OutputTokens, cfg.RampUpMs = streams, streams, out, itl.Milliseconds()
				c0 := cputime.Used()
				res, err := loadgen.Run(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				cpu := cputime.Used() - c0
				s := res.Summary
				failed += s.Failed
				l := ts.lag(res)
				tokS += s.OutputTokenThroughput
				lag50 += loadgen.Percentile(l, 50)
				lag99 += loadgen.Percentile(l, 99)
				ttftErr += s.TTFTMs.P50 - float64(ttft)/1e6
				itlErr += s.ITLMs.P50 - float64(itl)/1e6
				cpuTok += float64(cpu.Microseconds()) / float64(max(s.OutputTokens, 1))
				c1 := cputime.Used()
				n := naiveRun(ts.URL, streams, out)
				baseCPUTok += float64((cputime.Used() - c1).Microseconds()) / float64(max(n, 1))
			}
			k := float64(b.N)
			b.ReportMetric(tokS/k, "tok/s")
			b.ReportMetric(lag50/k, "lag-p50-ms")
			b.ReportMetric(lag99/k, "lag-p99-ms")
			b.ReportMetric(ttftErr/k, "ttft-p50-err-ms")
			b.ReportMetric(itlErr/k, "itl-p50-err-ms")
			b.ReportMetric(cpuTok/k, "cpu-us/token")
			b.ReportMetric(baseCPUTok/k, "baseline-cpu-us/token")
			b.ReportMetric(baseCPUTok/cpuTok, "baseline/loadgen-cpu")
			b.ReportMetric(float64(failed)/k, "failed")
		})
	}
}

// naiveRun is the baseline client: one goroutine per stream on the default
// transport, bufio.Scanner lines and encoding/json per chunk. It returns the
// tokens it read.
func naiveRun(url string, streams, out int) int {
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	body, _ := json.Marshal(map[string]any{"model": "sim", "max_tokens": out, "ignore_eos": true, "stream": true,
		"messages": []map[string]string{{"role": "user", "content": "the of and to in"}}})
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				return
			}
			defer resp.Body.Close()
			n := 0
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				line := sc.Bytes()
				if !bytes.HasPrefix(line, []byte("data: {")) {
					continue
				}
				var v struct {
					Choices []struct {
						Delta struct{ Content string } `json:"delta"`
					} `json:"choices"`
				}
				if json.Unmarshal(line[6:], &v) == nil && len(v.Choices) > 0 && v.Choices[0].Delta.Content != "" {
					_ = time.Now()
					n++
				}
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	return total
}
