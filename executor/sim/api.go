package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// genRequest is the subset of vLLM's chat and completion request bodies the
// simulated engine honours. Unknown fields are ignored, as vLLM does.
type genRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           int             `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	Seed                *int64          `json:"seed"`
	N                   *int            `json:"n"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt"`
}

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// messages converts chat messages, joining text content parts.
func messages(in []chatMessage) ([]Message, error) {
	out := make([]Message, 0, len(in))
	for i, m := range in {
		if m.Role == "" {
			return nil, fmt.Errorf("messages[%d] has no role; give each message a role such as \"user\"", i)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d].content: %v", i, err)
		}
		out = append(out, Message{Role: m.Role, Content: text})
	}
	return out, nil
}

func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("must be a string or a list of {\"type\":\"text\",\"text\":...} parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part type %q is not supported by the simulated engine; use \"text\"", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// promptTokens decodes a completions prompt: a string, a one-element list
// of strings, or a list of token ids.
func promptTokens(raw json.RawMessage) (int, error) {
	text, ids, err := decodePrompt(raw)
	if ids != nil || err != nil {
		return len(ids), err
	}
	return CountTokens(text), nil
}

// promptIDs is promptTokens' prompt as token ids.
func promptIDs(raw json.RawMessage) ([]int, error) {
	text, ids, err := decodePrompt(raw)
	if ids != nil || err != nil {
		return ids, err
	}
	return Tokenize(text), nil
}

// decodePrompt returns a completions prompt's text, or its token ids when
// it is a list of them.
func decodePrompt(raw json.RawMessage) (string, []int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, fmt.Errorf("prompt is required")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil, nil
	}
	var ss []string
	if err := json.Unmarshal(raw, &ss); err == nil {
		if len(ss) != 1 {
			return "", nil, fmt.Errorf("the simulated engine serves one prompt per request, got %d", len(ss))
		}
		return ss[0], nil, nil
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err == nil {
		for _, id := range ids {
			if id < 0 || id >= len(vocab.pieces) {
				return "", nil, fmt.Errorf("token id %d is out of vocabulary (size %d)", id, len(vocab.pieces))
			}
		}
		return "", append([]int{}, ids...), nil
	}
	return "", nil, fmt.Errorf("prompt must be a string, a list of one string or a list of token ids")
}

// apiError is vLLM's error body: {"error":{"message","type","param","code"}}.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func writeError(w http.ResponseWriter, status int, typ, param, format string, args ...any) {
	e := apiError{Message: fmt.Sprintf(format, args...), Type: typ, Code: status}
	if param != "" {
		e.Param = &param
	}
	writeJSON(w, status, map[string]apiError{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// errorTypeFor names the error type vLLM uses for a status.
func errorTypeFor(status int) string {
	switch status {
	case 400:
		return "BadRequestError"
	case 404:
		return "NotFoundError"
	case 429:
		return "RateLimitError"
	case 503:
		return "ServiceUnavailableError"
	}
	return "InternalServerError"
}

// usage is the OpenAI usage object of a whole (non-streamed) answer; vLLM
// 0.32 leaves the token details null.
type usage struct {
	PromptTokens            int `json:"prompt_tokens"`
	TotalTokens             int `json:"total_tokens"`
	CompletionTokens        int `json:"completion_tokens"`
	PromptTokensDetails     any `json:"prompt_tokens_details"`
	CompletionTokensDetails any `json:"completion_tokens_details"`
}
