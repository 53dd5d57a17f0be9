package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// vllmBody is a streamed chat answer of n tokens shaped like vLLM's.
func vllmBody(n int) []byte {
	var b bytes.Buffer
	head := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764400000,"model":"Qwen/Qwen3-0.6B",`
	b.WriteString(head + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `%s"choices":[{"index":0,"delta":{"content":" word%d"},"logprobs":null,"finish_reason":null,"stop_reason":null}]}`+"\n\n", head, i%100)
	}
	fmt.Fprintf(&b, `%s"choices":[],"usage":{"prompt_tokens":128,"total_tokens":%d,"completion_tokens":%d}}`+"\n\ndata: [DONE]\n\n", head, 128+n, n)
	return b.Bytes()
}

func ingestOnce(c *client, body []byte, n int) *Record {
	rec := &Record{MaxTokens: n, Status: 200}
	c.readStream(context.Background(), bytes.NewReader(body), rec)
	return rec
}

// TestNoPerTokenAllocations: reading a 1,024-token stream allocates exactly
// as much as reading a 16-token one (the chunk-time slice is reserved once
// per request), so the hot path allocates nothing per token.
func TestNoPerTokenAllocations(t *testing.T) {
	c := &client{start: time.Now()}
	small, large := vllmBody(16), vllmBody(1024)
	if r := ingestOnce(c, large, 1024); !r.OK() || r.OutputTokens != 1024 || len(r.ChunkNs) != 1024 {
		t.Fatalf("ingest: %+v", r.ErrorClass)
	}
	a16 := testing.AllocsPerRun(50, func() { ingestOnce(c, small, 16) })
	a1024 := testing.AllocsPerRun(50, func() { ingestOnce(c, large, 1024) })
	if a1024 != a16 {
		t.Errorf("allocations grow with tokens: %v for 16 tokens, %v for 1024", a16, a1024)
	}
}

// naiveIngest is the baseline: bufio.Scanner lines and encoding/json per
// chunk, as most load generators do.
func naiveIngest(body []byte) (tokens, completion int) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: ")) || bytes.Equal(line[6:], []byte("[DONE]")) {
			continue
		}
		var v struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(line[6:], &v) != nil {
			continue
		}
		if len(v.Choices) > 0 && v.Choices[0].Delta.Content != "" {
			_ = time.Now()
			tokens++
		}
		if v.Usage != nil {
			completion = v.Usage.CompletionTokens
		}
	}
	return tokens, completion
}

// BenchmarkIngest measures the client's per-token cost of reading a
// 1,024-token vLLM-shaped stream from memory (no network): ns/token for the
// load generator, the same for the encoding/json baseline run in the same
// process, and their ratio. Run with -benchmem: allocs/op is per stream.
func BenchmarkIngest(b *testing.B) {
	const n = 1024
	body := vllmBody(n)
	c := &client{start: time.Now()}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var ours, base time.Duration
	for b.Loop() {
		t0 := time.Now()
		ingestOnce(c, body, n)
		t1 := time.Now()
		naiveIngest(body)
		ours, base = ours+t1.Sub(t0), base+time.Since(t1)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N*n), "ns/token")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N*n), "baseline-ns/token")
	b.ReportMetric(float64(base)/float64(ours), "x-faster-than-baseline")
}

// BenchmarkIngestOnly is the load generator alone, so -benchmem's allocs/op
// shows the per-stream (not per-token) allocation count.
func BenchmarkIngestOnly(b *testing.B) {
	for _, n := range []int{16, 1024} {
		b.Run(fmt.Sprintf("tokens=%d", n), func(b *testing.B) {
			body := vllmBody(n)
			c := &client{start: time.Now()}
			b.ReportAllocs()
			for b.Loop() {
				ingestOnce(c, body, n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
		})
	}
}
