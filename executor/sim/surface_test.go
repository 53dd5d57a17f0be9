package sim

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"context"
)

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
	}
	return resp.StatusCode
}

func postJSON(t *testing.T, url string, body, v any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
	}
	return resp.StatusCode
}

func TestModelsVersionHealth(t *testing.T) {
	url, _ := start(t, Options{ModelID: "Qwen/Qwen3-0.6B", MaxModelLen: 4096})
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Root        string `json:"root"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if st := getJSON(t, url+"/v1/models", &models); st != 200 || len(models.Data) != 1 {
		t.Fatalf("status %d models %+v", st, models)
	}
	if d := models.Data[0]; d.ID != "Qwen/Qwen3-0.6B" || d.MaxModelLen != 4096 {
		t.Fatalf("model card %+v", d)
	}
	var v map[string]string
	if getJSON(t, url+"/version", &v); v["version"] != DefaultVersion {
		t.Fatalf("version %v", v)
	}
	if st := getJSON(t, url+"/health", nil); st != 200 {
		t.Fatalf("health %d", st)
	}
	var e struct{ Error apiError }
	if st := postJSON(t, url+"/v1/completions", map[string]any{"model": "other", "prompt": "a"}, &e); st != 404 || e.Error.Type != "NotFoundError" {
		t.Fatalf("unknown model: %d %+v", st, e)
	}
}

func TestTokenizeAgreesWithUsage(t *testing.T) {
	url, _ := start(t, Options{Model: "m"})
	msgs := []map[string]any{
		{"role": "system", "content": "you are a quick model"},
		{"role": "user", "content": []map[string]string{{"type": "text", "text": "tell me a story about the river"}}},
	}
	var tok struct {
		Count       int   `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
		Tokens      []int `json:"tokens"`
	}
	if st := postJSON(t, url+"/tokenize", map[string]any{"model": "m", "messages": msgs}, &tok); st != 200 {
		t.Fatalf("tokenize status %d", st)
	}
	if tok.Count != len(tok.Tokens) || tok.MaxModelLen != 8192 {
		t.Fatalf("tokenize %+v", tok)
	}
	res := post(t, http.DefaultClient, url+"/v1/chat/completions", map[string]any{
		"model": "m", "messages": msgs, "max_tokens": 3, "stream": true, "stream_options": map[string]any{"include_usage": true}})
	chunks := res.chunks(t)
	if p, _, _ := usageOf(chunks[len(chunks)-1]); p != tok.Count {
		t.Fatalf("usage.prompt_tokens %d, /tokenize count %d", p, tok.Count)
	}
	var detok struct {
		Prompt string `json:"prompt"`
	}
	postJSON(t, url+"/detokenize", map[string]any{"tokens": tok.Tokens}, &detok)
	if !strings.HasPrefix(detok.Prompt, "<|im_start|>system\nyou are a quick model<|im_end|>\n") || !strings.HasSuffix(detok.Prompt, "<|im_start|>assistant\n") {
		t.Fatalf("detokenized %q", detok.Prompt)
	}
	var e struct{ Error apiError }
	if st := postJSON(t, url+"/detokenize", map[string]any{"tokens": []int{-1}}, &e); st != 400 {
		t.Fatalf("bad token id: status %d", st)
	}
	// completions with token ids count exactly those ids
	var whole struct{ Usage usage }
	postJSON(t, url+"/v1/completions", map[string]any{"prompt": []int{1, 2, 3, 4}, "max_tokens": 2}, &whole)
	if whole.Usage.PromptTokens != 4 || whole.Usage.CompletionTokens != 2 {
		t.Fatalf("usage %+v", whole.Usage)
	}
}

func TestMaxTokensAndEOS(t *testing.T) {
	url, _ := start(t, Options{Model: "m", MaxModelLen: 1000})
	var whole struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		}
		Usage usage
	}
	// without ignore_eos the model stops early (16..271 tokens) with "stop"
	postJSON(t, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 900, "seed": 3}, &whole)
	if u := whole.Usage.CompletionTokens; u < 16 || u > 271 || whole.Choices[0].FinishReason != "stop" {
		t.Fatalf("natural stop: %+v", whole)
	}
	// ignore_eos honours max_tokens exactly
	postJSON(t, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 900, "ignore_eos": true}, &whole)
	if whole.Usage.CompletionTokens != 900 || whole.Choices[0].FinishReason != "length" {
		t.Fatalf("ignore_eos: %+v", whole)
	}
	// min_tokens raises a natural stop
	postJSON(t, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 900, "min_tokens": 500, "seed": 3}, &whole)
	if whole.Usage.CompletionTokens != 500 {
		t.Fatalf("min_tokens: %+v", whole.Usage)
	}
	// no max_tokens: the rest of the context window is the limit
	postJSON(t, url+"/v1/completions", map[string]any{"prompt": "a", "ignore_eos": true}, &whole)
	if whole.Usage.CompletionTokens != 999 {
		t.Fatalf("default max_tokens: %+v", whole.Usage)
	}
	// the same seed gives the same text
	var a, b struct{ Choices []struct{ Text string } }
	postJSON(t, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 20, "seed": 9}, &a)
	postJSON(t, url+"/v1/completions", map[string]any{"prompt": "b", "max_tokens": 20, "seed": 9}, &b)
	if a.Choices[0].Text != b.Choices[0].Text {
		t.Fatal("same seed, different text")
	}
	// stream_options without stream is refused, as vLLM does
	if st := postJSON(t, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 2, "stream_options": map[string]any{"include_usage": true}}, nil); st != 400 {
		t.Fatalf("stream_options without stream: %d", st)
	}
	// exactly at the limit is accepted; over it (prompt included) vLLM 0.32
	// clamps max_tokens; max_tokens alone over the window is its 400
	var clamped struct{ Usage usage }
	if st := postJSON(t, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 999}, nil); st != 200 {
		t.Fatalf("prompt+max_tokens == max_model_len: %d", st)
	}
	if st := postJSON(t, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1000, "ignore_eos": true}, &clamped); st != 200 || clamped.Usage.CompletionTokens != 999 {
		t.Fatalf("one over, clamped: %d %+v", st, clamped)
	}
	var e struct{ Error apiError }
	if st := postJSON(t, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1001}, &e); st != 400 || *e.Error.Param != "max_tokens" {
		t.Fatalf("max_tokens over max_model_len: %d %+v", st, e)
	}
}

func TestMetricsExposition(t *testing.T) {
	url, _ := start(t, Options{Model: "m"})
	post(t, http.DefaultClient, url+"/v1/completions", map[string]any{"prompt": "the cat", "max_tokens": 4, "ignore_eos": true, "stream": true})
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`vllm:num_requests_running{engine="0",model_name="m"} 0`,
		`vllm:num_requests_waiting{engine="0",model_name="m"} 0`,
		`vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0`,
		`vllm:prompt_tokens_total{engine="0",model_name="m"} 2`,
		`vllm:generation_tokens_total{engine="0",model_name="m"} 4`,
		`vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 1`,
		`vllm:e2e_request_latency_seconds_bucket{engine="0",model_name="m",le="+Inf"} 1`,
		"# TYPE vllm:e2e_request_latency_seconds histogram",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestH2C(t *testing.T) {
	url, _ := start(t, Options{Model: "m"})
	tr := &http.Transport{}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, &tls.CertificateVerificationError{}
	}
	client := &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := client.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("h2c client got %s", resp.Proto)
	}
	res := post(t, client, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 5, "ignore_eos": true, "stream": true})
	if res.status != 200 || len(res.times) != 5 || !res.done {
		t.Fatalf("h2c stream: status %d tokens %d done %v err %v", res.status, len(res.times), res.done, res.err)
	}
}
