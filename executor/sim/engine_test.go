package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor/clock"
)

// start serves opts on loopback for the test's lifetime.
func start(t testing.TB, opts Options) (string, *Engine) {
	t.Helper()
	s, err := Listen("127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s.URL, s.Engine
}

func chatBody(model, content string, maxTokens int, stream bool) map[string]any {
	b := map[string]any{
		"model":      model,
		"messages":   []map[string]any{{"role": "user", "content": content}},
		"max_tokens": maxTokens,
		"ignore_eos": true,
		"stream":     stream,
	}
	if stream {
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	return b
}

func TestChatStreamShapeAndUsage(t *testing.T) {
	url, _ := start(t, Options{Model: "m", TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	prompt := "the cat is on the table"
	res := post(t, http.DefaultClient, url+"/v1/chat/completions", chatBody("m", prompt, 12, true))
	if res.err != nil || res.status != 200 {
		t.Fatalf("status %d err %v body %s", res.status, res.err, res.body)
	}
	if !res.done {
		t.Fatal("stream did not end with data: [DONE]")
	}
	chunks := res.chunks(t)
	// role chunk + 12 token chunks + usage chunk
	if len(chunks) != 14 {
		t.Fatalf("got %d chunks, want 14", len(chunks))
	}
	first := chunks[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	if first["role"] != "assistant" {
		t.Fatalf("first chunk is not the role chunk: %v", chunks[0])
	}
	if chunks[0]["object"] != "chat.completion.chunk" || chunks[0]["model"] != "m" {
		t.Fatalf("chunk header: %v", chunks[0])
	}
	last := chunks[12]["choices"].([]any)[0].(map[string]any)
	if last["finish_reason"] != "length" {
		t.Fatalf("last token chunk finish_reason = %v, want length", last["finish_reason"])
	}
	u := chunks[13]
	if ch := u["choices"].([]any); len(ch) != 0 {
		t.Fatalf("usage chunk has choices: %v", u)
	}
	p, c, tot := usageOf(u)
	// the prompt as /tokenize counts it with the chat template
	want := CountTokens(RenderChat([]Message{{Role: "user", Content: prompt}}, true))
	if p != want || c != 12 || tot != want+12 {
		t.Fatalf("usage = %d/%d/%d, want %d/12/%d", p, c, tot, want, want+12)
	}
	if want != 6+8 {
		t.Fatalf("template tokens: prompt of 6 words counts %d, want 14", want)
	}
	if got := CountTokens(res.text); got != 12 {
		t.Fatalf("streamed text %q retokenizes to %d tokens, want 12", res.text, got)
	}
}

func TestCompletionsStreamAndWhole(t *testing.T) {
	url, _ := start(t, Options{Model: "m"})
	body := map[string]any{"model": "m", "prompt": "hello world", "max_tokens": 5, "ignore_eos": true, "stream": true}
	res := post(t, http.DefaultClient, url+"/v1/completions", body)
	chunks := res.chunks(t)
	if res.status != 200 || !res.done || len(chunks) != 5 {
		t.Fatalf("status %d done %v chunks %d", res.status, res.done, len(chunks))
	}
	if chunks[0]["object"] != "text_completion" {
		t.Fatalf("object = %v", chunks[0]["object"])
	}
	if _, c, _ := usageOf(chunks[4]); c != -1 {
		t.Fatal("usage sent without include_usage")
	}
	body["stream"] = false
	res2 := post(t, http.DefaultClient, url+"/v1/completions", body)
	var whole struct {
		Object  string `json:"object"`
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage usage `json:"usage"`
	}
	if err := json.Unmarshal(res2.body, &whole); err != nil || res2.status != 200 {
		t.Fatalf("status %d body %s", res2.status, res2.body)
	}
	// "hello" is not in the vocabulary: 5 byte tokens, then " world" is 6
	wantPrompt := CountTokens("hello world")
	if whole.Usage.PromptTokens != wantPrompt || whole.Usage.CompletionTokens != 5 || whole.Choices[0].FinishReason != "length" {
		t.Fatalf("whole response %+v (want prompt %d)", whole, wantPrompt)
	}
	if CountTokens(whole.Choices[0].Text) != 5 {
		t.Fatalf("text %q is not 5 tokens", whole.Choices[0].Text)
	}
}

func TestConstantTimingGroundTruth(t *testing.T) {
	ttft, itl := 20*time.Millisecond, 4*time.Millisecond
	url, e := start(t, Options{Model: "m", TTFT: ttft, ITL: itl})
	// A bare waiter on the engine's own clock keeps the same schedule in the
	// same process over the same window, doing none of the engine's work:
	// how late it wakes is how busy the machine is.
	baseline := make(chan []float64, 1)
	go func() {
		sl, began := clock.NewSleeper(e.clock), time.Now()
		late := make([]float64, 0, 20)
		for k := range 20 {
			due := began.Add(ttft + time.Duration(k)*itl)
			sl.Until(context.Background(), nil, due)
			late = append(late, float64(time.Since(due).Microseconds()))
		}
		baseline <- late
	}()
	res := post(t, http.DefaultClient, url+"/v1/chat/completions", chatBody("m", "hi", 20, true))
	base := <-baseline
	if len(res.times) != 20 {
		t.Fatalf("got %d token chunks", len(res.times))
	}
	// Lower bounds are exact: the engine never sends token k before
	// TTFT + k x ITL after the request arrived.
	for k, at := range res.times {
		if due := ttft + time.Duration(k)*itl; at < due {
			t.Fatalf("token %d arrived after %v, before it was due at %v", k, at, due)
		}
	}
	// The client's own gaps depend on how busy the machine is; the engine's
	// record of its flushes does not: every token left on time, give or
	// take a busy machine's scheduling delay.
	_, got, _ := e.metrics.lateness.snapshot()
	if got != 20 {
		t.Fatalf("the engine recorded %d token flushes, want 20", got)
	}
	if p50 := e.metrics.lateness.quantile(0.5); p50 > 0.010 {
		if b := percentile(base, 0.5) / 1e3; b > 2 {
			t.Skipf("the engine flushed tokens %v s late at the median, and a bare waiter on its clock keeping the same schedule woke %.1f ms late: the machine is too busy for a timing test; rerun on an idle machine", p50, b)
		}
		t.Fatalf("the engine flushed tokens %v s late at the median (a bare waiter on its clock keeping the same schedule: %.3f ms)", p50, percentile(base, 0.5)/1e3)
	}
}

// TestContextOverflowRejectMode: with ContextReject a prompt that fits but
// leaves too little room for max_tokens is older vLLM's 400.
func TestContextOverflowRejectMode(t *testing.T) {
	url, _ := start(t, Options{Model: "m", MaxModelLen: 64, ContextOverflow: ContextReject})
	res := post(t, http.DefaultClient, url+"/v1/chat/completions", chatBody("m", strings.Repeat(" the", 40), 30, true))
	if res.status != 400 {
		t.Fatalf("status %d, want 400", res.status)
	}
	var body struct {
		Error apiError `json:"error"`
	}
	if err := json.Unmarshal(res.body, &body); err != nil {
		t.Fatal(err)
	}
	e := body.Error
	if e.Type != "BadRequestError" || e.Param == nil || *e.Param != "input_tokens" || e.Code != 400 ||
		!strings.Contains(e.Message, "maximum context length is 64 tokens") || !strings.Contains(e.Message, "you requested 30 output tokens") {
		t.Fatalf("error body %s", res.body)
	}
}
