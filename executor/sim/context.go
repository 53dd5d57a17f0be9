package sim

import "net/http"

// Context-overflow policies: what the engine does with a request whose prompt
// fits the context window but whose prompt plus max_tokens does not.
const (
	// ContextClamp answers 200 and lowers max_tokens to the room the prompt
	// leaves (max_model_len - prompt tokens), so the output comes back short
	// with finish_reason "length": current vLLM (0.32).
	ContextClamp = "clamp"
	// ContextReject answers HTTP 400 (param input_tokens) naming the prompt,
	// the requested output and their total, as older vLLM releases did.
	ContextReject = "reject"
)

// outputBudget applies vLLM's length checks in vLLM 0.32's order and returns
// the number of tokens the request may generate; it answers the 400 itself
// when the request cannot be served.
//
//  1. max_tokens > max_model_len: 400 with param max_tokens, whatever the
//     prompt (vLLM checks it before tokenizing).
//  2. prompt > max_model_len: 400 with param input_tokens; vLLM tokenizes
//     with truncation at max_model_len+1, so the message says "at least
//     max_model_len+1" whatever the true length.
//  3. prompt + max_tokens > max_model_len: clamp (ContextClamp) or 400
//     (ContextReject).
//  4. the budget left is below 1 (a prompt of exactly max_model_len, or
//     max_tokens 0 or negative): 400 "max_tokens must be at least 1, got N".
func (e *Engine) outputBudget(w http.ResponseWriter, req *genRequest, chat bool, prompt int) (int, bool) {
	maxLen := e.opts.MaxModelLen
	requested, param := req.MaxTokens, "max_tokens"
	if chat && req.MaxCompletionTokens != nil {
		requested, param = req.MaxCompletionTokens, "max_completion_tokens"
	}
	if requested != nil && *requested > maxLen {
		writeError(w, 400, "BadRequestError", param,
			"%s=%d cannot be greater than max_model_len=%d. Please request fewer output tokens. (parameter=%s, value=%d)",
			param, *requested, maxLen, param, *requested)
		return 0, false
	}
	if prompt > maxLen {
		writeError(w, 400, "BadRequestError", "input_tokens",
			"This model's maximum context length is %d tokens. However, your prompt contains at least %d input tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=%d)",
			maxLen, maxLen+1, maxLen+1)
		return 0, false
	}
	budget := maxLen - prompt
	if requested != nil {
		if *requested > budget && e.opts.ContextOverflow == ContextReject {
			writeError(w, 400, "BadRequestError", "input_tokens",
				"This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains %d input tokens, for a total of %d tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=%d)",
				maxLen, *requested, prompt, prompt+*requested, prompt)
			return 0, false
		}
		budget = min(budget, *requested)
	}
	if budget < 1 {
		writeError(w, 400, "BadRequestError", "max_tokens",
			"max_tokens must be at least 1, got %d. (parameter=max_tokens, value=%d)", budget, budget)
		return 0, false
	}
	return budget, true
}
