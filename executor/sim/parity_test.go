package sim

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The tests in this file pin the HTTP behaviour observed from real vLLM
// 0.32.0 (max_model_len 1024) that cmd/infercrane's integration test
// compares against the simulated engine.

// ids is a completions prompt of exactly n tokens (a list of token ids).
func ids(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = vocab.wordIDs[" the"]
	}
	return out
}

const (
	wantPromptTooLong = `{"error":{"message":"This model's maximum context length is 1024 tokens. However, your prompt contains at least 1025 input tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=1025)","type":"BadRequestError","param":"input_tokens","code":400}}`
	wantMaxTokens2000 = `{"error":{"message":"max_tokens=2000 cannot be greater than max_model_len=1024. Please request fewer output tokens. (parameter=max_tokens, value=2000)","type":"BadRequestError","param":"max_tokens","code":400}}`
	wantNoRoom        = `{"error":{"message":"max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)","type":"BadRequestError","param":"max_tokens","code":400}}`
)

// TestClampsMaxTokensToTheContext: prompt 1000 + max_tokens 100 on a 1024
// window answers 200 with exactly 24 tokens, finish_reason "length", whole
// or streamed.
func TestClampsMaxTokensToTheContext(t *testing.T) {
	url, _ := start(t, Options{Model: "m", MaxModelLen: 1024})
	var whole struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		}
		Usage usage
	}
	body := map[string]any{"prompt": ids(1000), "max_tokens": 100, "ignore_eos": true}
	if st := postJSON(t, url+"/v1/completions", body, &whole); st != 200 {
		t.Fatalf("status %d, want 200", st)
	}
	if u := whole.Usage; u.PromptTokens != 1000 || u.CompletionTokens != 24 || u.TotalTokens != 1024 || whole.Choices[0].FinishReason != "length" {
		t.Fatalf("usage %+v finish %q, want 1000+24=1024, length", u, whole.Choices[0].FinishReason)
	}
	// The integration test's text prompt: "hello " is one token a word here
	// as in Qwen's tokenizer, so the clamp lands on the same total.
	var text struct{ Usage usage }
	postJSON(t, url+"/v1/completions", map[string]any{"prompt": strings.Repeat("hello ", 1000), "max_tokens": 100, "ignore_eos": true}, &text)
	if text.Usage.TotalTokens != 1024 || text.Usage.PromptTokens != 1001 {
		t.Fatalf("text prompt: usage %+v, want 1001 + 23 = 1024", text.Usage)
	}
	body["stream"], body["stream_options"] = true, map[string]any{"include_usage": true}
	res := post(t, http.DefaultClient, url+"/v1/completions", body)
	chunks := res.chunks(t)
	if res.status != 200 || !res.done || len(res.times) != 24 {
		t.Fatalf("stream: status %d done %v tokens %d, want 200, [DONE], 24", res.status, res.done, len(res.times))
	}
	if p, c, tot := usageOf(chunks[len(chunks)-1]); p != 1000 || c != 24 || tot != 1024 {
		t.Fatalf("stream usage %d+%d=%d", p, c, tot)
	}
	last := chunks[len(chunks)-2]["choices"].([]any)[0].(map[string]any)
	if last["finish_reason"] != "length" {
		t.Fatalf("last token chunk %v", last)
	}
}

// TestLengthErrorsAreVLLM032s: the exact 400 bodies for a prompt that alone
// overflows the window (chat and completions, streamed or not: a plain JSON
// body), for max_tokens over the window, and for a prompt that fills it.
func TestLengthErrorsAreVLLM032s(t *testing.T) {
	url, _ := start(t, Options{Model: "m", MaxModelLen: 1024})
	long := strings.Repeat(" the", 1100)
	cases := []struct {
		name, path string
		body       map[string]any
		want       string
	}{
		{"chat prompt too long", "/v1/chat/completions", chatBody("m", long, 10, false), wantPromptTooLong},
		{"chat prompt too long, streamed", "/v1/chat/completions", chatBody("m", long, 10, true), wantPromptTooLong},
		{"completions prompt too long", "/v1/completions", map[string]any{"prompt": long, "max_tokens": 10}, wantPromptTooLong},
		{"completions prompt too long, streamed", "/v1/completions", map[string]any{"prompt": ids(1025), "max_tokens": 10, "stream": true}, wantPromptTooLong},
		{"max_tokens over the window", "/v1/chat/completions", chatBody("m", "hello", 2000, false), wantMaxTokens2000},
		{"max_tokens over the window, long prompt", "/v1/completions", map[string]any{"prompt": ids(1100), "max_tokens": 2000}, wantMaxTokens2000},
		{"prompt fills the window", "/v1/completions", map[string]any{"prompt": ids(1024), "max_tokens": 5}, wantNoRoom},
		{"prompt fills the window, no max_tokens", "/v1/completions", map[string]any{"prompt": ids(1024)}, wantNoRoom},
	}
	for _, c := range cases {
		res := post(t, http.DefaultClient, url+c.path, c.body)
		if res.status != 400 || string(res.body) != c.want {
			t.Errorf("%s: status %d body\n%s\nwant 400\n%s", c.name, res.status, res.body, c.want)
		}
	}
	var e struct{ Error apiError }
	postJSON(t, url+"/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}, "max_completion_tokens": 2000}, &e)
	if e.Error.Param == nil || *e.Error.Param != "max_completion_tokens" || !strings.HasPrefix(e.Error.Message, "max_completion_tokens=2000 cannot be greater than max_model_len=1024.") {
		t.Errorf("max_completion_tokens over the window: %+v", e)
	}
}

var fingerprintRE = regexp.MustCompile(`^vllm-0\.32\.0-[0-9a-f]{8}$`)

// TestStreamAndBodyFieldsAreVLLM032s: the null members and the
// system_fingerprint vLLM 0.32 adds to chunks and whole bodies.
func TestStreamAndBodyFieldsAreVLLM032s(t *testing.T) {
	url, _ := start(t, Options{Model: "m", MaxModelLen: 1024})
	res := post(t, http.DefaultClient, url+"/v1/chat/completions", chatBody("m", "hello", 3, true))
	chunks := res.chunks(t)
	if len(chunks) != 5 {
		t.Fatalf("%d chunks, want role + 3 tokens + usage", len(chunks))
	}
	for _, k := range []string{"prompt_token_ids", "prompt_text"} {
		if v, ok := chunks[0][k]; !ok || v != nil {
			t.Errorf("role chunk %s = %v (present %v), want null", k, v, ok)
		}
	}
	for i, c := range chunks[1:4] {
		ch := c["choices"].([]any)[0].(map[string]any)
		if v, ok := ch["token_ids"]; !ok || v != nil {
			t.Errorf("token chunk %d: token_ids %v (present %v), want null", i, v, ok)
		}
		if _, ok := c["prompt_token_ids"]; ok {
			t.Errorf("token chunk %d carries prompt_token_ids", i)
		}
	}
	fp, _ := chunks[4]["system_fingerprint"].(string)
	if !fingerprintRE.MatchString(fp) || !strings.Contains(string(res.raw[4]), `},"system_fingerprint":`) {
		t.Errorf("usage chunk %s: want system_fingerprint vllm-0.32.0-<8 hex> after usage", res.raw[4])
	}

	var body map[string]any
	postJSON(t, url+"/v1/chat/completions", chatBody("m", "hello", 3, false), &body)
	if body["system_fingerprint"] != fp {
		t.Errorf("whole body fingerprint %v, stream's %q", body["system_fingerprint"], fp)
	}
	nulls := func(where string, m map[string]any, keys ...string) {
		for _, k := range keys {
			if v, ok := m[k]; !ok || v != nil {
				t.Errorf("%s.%s = %v (present %v), want null", where, k, v, ok)
			}
		}
	}
	nulls("body", body, "service_tier")
	nulls("usage", body["usage"].(map[string]any), "prompt_tokens_details", "completion_tokens_details")
	msg := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	nulls("message", msg, "refusal", "annotations", "audio", "function_call", "reasoning")
}

// TestModelsTokenizeVersionAreVLLM032s: the model card's permission list,
// /tokenize and /detokenize shapes and a configurable /version.
func TestModelsTokenizeVersionAreVLLM032s(t *testing.T) {
	url, _ := start(t, Options{Model: "served", ModelID: "Qwen/Qwen3-0.6B", MaxModelLen: 1024, Version: "0.31.1"})
	var models struct {
		Data []struct {
			Root       string           `json:"root"`
			Parent     *string          `json:"parent"`
			OwnedBy    string           `json:"owned_by"`
			Permission []map[string]any `json:"permission"`
		} `json:"data"`
	}
	getJSON(t, url+"/v1/models", &models)
	d := models.Data[0]
	if d.Root != "Qwen/Qwen3-0.6B" || d.Parent != nil || d.OwnedBy != "vllm" || len(d.Permission) != 1 ||
		d.Permission[0]["object"] != "model_permission" || d.Permission[0]["allow_sampling"] != true {
		t.Fatalf("model card %+v", d)
	}
	var tok map[string]json.RawMessage
	postJSON(t, url+"/tokenize", map[string]any{"prompt": "the cat"}, &tok)
	if string(tok["count"]) != "2" || string(tok["max_model_len"]) != "1024" || string(tok["token_strs"]) != "null" || len(tok) != 4 {
		t.Fatalf("/tokenize %s", tok)
	}
	var detok map[string]string
	postJSON(t, url+"/detokenize", map[string]any{"tokens": []int{vocab.wordIDs["the"], vocab.wordIDs[" cat"]}}, &detok)
	if detok["prompt"] != "the cat" || len(detok) != 1 {
		t.Fatalf("/detokenize %v", detok)
	}
	var v map[string]string
	if getJSON(t, url+"/version", &v); v["version"] != "0.31.1" {
		t.Fatalf("/version %v", v)
	}
	var body map[string]any
	postJSON(t, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1}, &body)
	if fp, _ := body["system_fingerprint"].(string); !strings.HasPrefix(fp, "vllm-0.31.1-") {
		t.Fatalf("fingerprint %q does not carry the configured version", fp)
	}
}

// TestContextOverflowOption: the policy is validated with a message that
// names both choices.
func TestContextOverflowOption(t *testing.T) {
	err := Options{ContextOverflow: "truncate"}.Validate()
	if err == nil || !strings.Contains(err.Error(), `"clamp"`) || !strings.Contains(err.Error(), `"reject"`) {
		t.Fatalf("error %v", err)
	}
}

// TestContinuousUsageNeedsIncludeUsage: like vLLM, continuous_usage_stats
// adds usage to every chunk only together with include_usage; alone it adds
// nothing.
func TestContinuousUsageNeedsIncludeUsage(t *testing.T) {
	url, _ := start(t, Options{Model: "m"})
	for _, include := range []bool{false, true} {
		body := chatBody("m", "hello", 3, true)
		body["stream_options"] = map[string]any{"include_usage": include, "continuous_usage_stats": true}
		res := post(t, http.DefaultClient, url+"/v1/chat/completions", body)
		chunks := res.chunks(t)
		withUsage := 0
		for _, c := range chunks {
			if _, ok := c["usage"]; ok {
				withUsage++
			}
		}
		want := 0
		if include {
			want = len(chunks) // role, 3 tokens and the usage chunk
		}
		if res.status != 200 || withUsage != want {
			t.Errorf("include_usage=%v: %d of %d chunks carry usage, want %d", include, withUsage, len(chunks), want)
		}
	}
}
