package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// benchStream sends one streaming completion and calls onToken with the
// arrival time of each token-carrying chunk. It reads lines without
// decoding JSON so the client costs as little as possible.
func benchStream(client *http.Client, url string, body []byte, onToken func(time.Time)) error {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 4096)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 6 && bytes.Contains(line, []byte(`"text":" `)) {
			onToken(time.Now())
		}
		if err != nil {
			return nil
		}
	}
}

func benchClient(streams int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: streams,
		DialContext:         (&net.Dialer{}).DialContext,
	}}
}

func percentile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[min(int(q*float64(len(v))), len(v)-1)]
}

// timerLateness is the baseline: the same number of goroutines keeping the
// same absolute token schedule with one time.Timer each and no HTTP. It is
// the floor the Go runtime sets on this machine.
func timerLateness(streams, tokens int, ttft, itl time.Duration) []float64 {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var late []float64
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTimer(time.Hour)
			start := time.Now()
			local := make([]float64, 0, tokens)
			for k := 0; k < tokens; k++ {
				due := start.Add(ttft + time.Duration(k)*itl)
				t.Reset(time.Until(due))
				<-t.C
				local = append(local, float64(time.Since(due).Microseconds()))
			}
			mu.Lock()
			late = append(late, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return late
}

// BenchmarkConstantTiming measures how exactly constant mode keeps its
// schedule under many concurrent streams: the lateness of each token's
// arrival at the client against send + TTFT + k x ITL (µs, p50 and p99),
// the cadence error (token k against the stream's first token + k x ITL),
// the token rate, and the ratio of the p50 lateness to the baseline of bare Go
// timers keeping the same schedule in the same process. The ITL grows with
// the stream count so the offered load (streams / ITL, at most 6,400
// tokens/s) stays within what a 2-core machine carries with the client in
// the same process; BenchmarkEngineCapacity measures the ceiling. Streams
// start staggered over one request's duration.
func BenchmarkConstantTiming(b *testing.B) {
	const tokens = 20
	ttft := 10 * time.Millisecond
	for _, c := range []struct {
		streams int
		itl     time.Duration
	}{{1, 5 * time.Millisecond}, {64, 10 * time.Millisecond}, {256, 40 * time.Millisecond}, {1024, 160 * time.Millisecond}} {
		streams, itl := c.streams, c.itl
		b.Run(fmt.Sprintf("streams=%d/itl=%v", streams, itl), func(b *testing.B) {
			url, e := start(b, Options{Model: "m", TTFT: ttft, ITL: itl})
			client := benchClient(streams)
			body := []byte(fmt.Sprintf(`{"prompt":"the","max_tokens":%d,"ignore_eos":true,"stream":true}`, tokens))
			var late, cadence []float64
			var mu sync.Mutex
			total := 0
			// Streams start spread over one request's duration, the steady
			// state of a closed loop, not all in the same millisecond.
			stagger := (ttft + tokens*itl) / time.Duration(streams)
			round := func(record bool) {
				var wg sync.WaitGroup
				for s := 0; s < streams; s++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						time.Sleep(time.Duration(s) * stagger)
						local := make([]float64, 0, tokens)
						localCadence := make([]float64, 0, tokens)
						sent := time.Now()
						k := 0
						var first time.Time
						_ = benchStream(client, url+"/v1/completions", body, func(at time.Time) {
							due := sent.Add(ttft + time.Duration(k)*itl)
							local = append(local, float64(at.Sub(due).Microseconds()))
							if k == 0 {
								first = at
							} else {
								localCadence = append(localCadence, float64(at.Sub(first.Add(time.Duration(k)*itl)).Microseconds()))
							}
							k++
						})
						if record {
							mu.Lock()
							late = append(late, local...)
							cadence = append(cadence, localCadence...)
							total += k
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
			}
			// One unmeasured round opens the connections, as a load
			// generator's prewarm does; a dial storm of 1,024 connections
			// would otherwise measure SYN retransmits, not the engine.
			round(false)
			b.ResetTimer()
			began := time.Now()
			for i := 0; i < b.N; i++ {
				round(true)
			}
			elapsed := time.Since(began)
			b.StopTimer()
			base := timerLateness(streams, tokens, ttft, itl)
			p50 := percentile(late, 0.5)
			b.ReportMetric(percentile(cadence, 0.5), "cadence-p50-µs")
			// the engine's own error, from its flush times (bucket bounds)
			b.ReportMetric(e.metrics.lateness.quantile(0.5)*1e6, "engine-late-p50-µs≤")
			b.ReportMetric(e.metrics.lateness.quantile(0.99)*1e6, "engine-late-p99-µs≤")
			b.ReportMetric(p50, "late-p50-µs")
			b.ReportMetric(percentile(late, 0.99), "late-p99-µs")
			b.ReportMetric(float64(total)/elapsed.Seconds(), "tokens/s")
			b.ReportMetric(percentile(base, 0.5), "timer-late-p50-µs")
			b.ReportMetric(p50/max(percentile(base, 0.5), 1), "late-vs-timer")
			if total != b.N*streams*tokens {
				b.Fatalf("received %d tokens, want %d", total, b.N*streams*tokens)
			}
		})
	}
}

// baselineSSE is the capacity baseline: a bare handler that writes the same
// chunk bytes the engine would, one flush per token, with no engine logic.
func baselineSSE(tokens int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch := newChunker(false, "cmpl-x", 1, "m", 1, false, "")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		for k := 0; k < tokens; k++ {
			ch.reset()
			ch.token(vocab.wordIDs[" the"], "", k+1)
			_, _ = w.Write(ch.buf)
			_ = rc.Flush()
		}
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
	})
}

// BenchmarkEngineCapacity streams as fast as the engine can (TTFT = ITL = 0)
// and reports tokens per second through HTTP on loopback, and the ratio to
// a bare SSE handler writing the same bytes (the engine's own overhead).
func BenchmarkEngineCapacity(b *testing.B) {
	const tokens = 200
	body := []byte(fmt.Sprintf(`{"prompt":"the","max_tokens":%d,"ignore_eos":true,"stream":true}`, tokens))
	run := func(b *testing.B, url string, streams int) float64 {
		client := benchClient(streams)
		total := 0
		var mu sync.Mutex
		var began time.Time
		for i := -1; i < b.N; i++ { // round -1 opens the connections
			if i == 0 {
				total, began = 0, time.Now()
			}
			var wg sync.WaitGroup
			for s := 0; s < streams; s++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := 0
					_ = benchStream(client, url+"/v1/completions", body, func(time.Time) { n++ })
					mu.Lock()
					total += n
					mu.Unlock()
				}()
			}
			wg.Wait()
		}
		if total != b.N*streams*tokens {
			b.Fatalf("received %d tokens, want %d", total, b.N*streams*tokens)
		}
		return float64(total) / time.Since(began).Seconds()
	}
	for _, streams := range []int{1, 64, 256} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			srv, err := Listen("127.0.0.1:0", Options{Model: "m"})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Shutdown(b.Context())
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			base := &http.Server{Handler: baselineSSE(tokens)}
			go base.Serve(ln)
			defer base.Close()
			b.ResetTimer()
			engine := run(b, srv.URL, streams)
			b.StopTimer()
			baseline := run(b, "http://"+ln.Addr().String(), streams)
			b.ReportMetric(engine, "tokens/s")
			b.ReportMetric(baseline, "baseline-tokens/s")
			b.ReportMetric(engine/baseline, "vs-baseline")
		})
	}
}

// BenchmarkChunkFormat formats one streamed token chunk the way the engine
// does (a reused buffer, precomputed token JSON) and, as the baseline, with
// encoding/json on a struct of the same shape; it reports allocations per
// token and the speed ratio.
func BenchmarkChunkFormat(b *testing.B) {
	type delta struct {
		Content string `json:"content"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Delta        delta   `json:"delta"`
		Logprobs     *string `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
		StopReason   *string `json:"stop_reason"`
		TokenIDs     []int   `json:"token_ids"`
	}
	type chunk struct {
		ID      string   `json:"id"`
		Object  string   `json:"object"`
		Created int64    `json:"created"`
		Model   string   `json:"model"`
		Choices []choice `json:"choices"`
	}
	id := vocab.wordIDs[" the"]
	ch := newChunker(true, "chatcmpl-sim-1", 1, "m", 10, false, "vllm-0.32.0-0123abcd")
	b.ReportAllocs()
	b.ResetTimer()
	began := time.Now()
	for i := 0; i < b.N; i++ {
		ch.reset()
		ch.token(id, "", i)
	}
	engine := time.Since(began)
	b.StopTimer()
	began = time.Now()
	for i := 0; i < b.N; i++ {
		c := chunk{ID: "chatcmpl-sim-1", Object: "chat.completion.chunk", Created: 1, Model: "m",
			Choices: []choice{{Delta: delta{Content: vocab.pieces[id]}}}}
		out, _ := json.Marshal(c)
		_ = append([]byte("data: "), out...)
	}
	b.ReportMetric(float64(time.Since(began))/float64(engine), "speedup-vs-json")
}
