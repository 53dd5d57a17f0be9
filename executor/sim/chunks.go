package sim

import (
	"encoding/json"
	"strconv"
)

// chunker formats one response's SSE chunks in vLLM's shapes into a reused
// buffer.
type chunker struct {
	chat        bool
	head        []byte // `data: {"id":...,"object":...,"created":...,"model":...,`
	prompt      int
	continuous  bool   // stream_options.continuous_usage_stats
	fingerprint []byte // `,"system_fingerprint":"vllm-..."` (chat usage chunk)
	buf         []byte
	// cached is usage.prompt_tokens_details.cached_tokens (-1: null details).
	cached int
}

func newChunker(chat bool, id string, created int64, model string, prompt int, continuous bool, fingerprint string) *chunker {
	obj := "text_completion"
	if chat {
		obj = "chat.completion.chunk"
	}
	h := []byte(`data: {"id":`)
	h = strconv.AppendQuote(h, id)
	h = append(h, `,"object":"`...)
	h = append(h, obj...)
	h = append(h, `","created":`...)
	h = strconv.AppendInt(h, created, 10)
	h = append(h, `,"model":`...)
	mj, _ := json.Marshal(model)
	h = append(h, mj...)
	h = append(h, ',')
	var fp []byte
	if chat {
		fp = append([]byte(`,"system_fingerprint":`), strconv.Quote(fingerprint)...)
	}
	return &chunker{chat: chat, head: h, prompt: prompt, continuous: continuous, fingerprint: fp, buf: make([]byte, 0, 512)}
}

// reset empties the buffer for the next write.
func (c *chunker) reset() { c.buf = c.buf[:0] }

// role appends the chat stream's opening chunk (role, empty content); like
// vLLM 0.32 it also carries prompt_token_ids and prompt_text (null).
func (c *chunker) role() {
	c.buf = append(c.buf, c.head...)
	c.buf = append(c.buf, `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"prompt_token_ids":null,"prompt_text":null`...)
	c.usageTail(0, c.continuous)
}

// token appends the chunk carrying token id; finish is "", "length" or
// "stop" (the last token's chunk carries the finish reason). done is the
// number of completion tokens including this one.
func (c *chunker) token(id int, finish string, done int) {
	c.buf = append(c.buf, c.head...)
	if c.chat {
		c.buf = append(c.buf, `"choices":[{"index":0,"delta":{"content":`...)
		c.buf = append(c.buf, vocab.tokenJSON[id]...)
		c.buf = append(c.buf, `},"logprobs":null,"finish_reason":`...)
	} else {
		c.buf = append(c.buf, `"choices":[{"index":0,"text":`...)
		c.buf = append(c.buf, vocab.tokenJSON[id]...)
		c.buf = append(c.buf, `,"logprobs":null,"finish_reason":`...)
	}
	switch {
	case finish == "" && c.chat:
		// vLLM leaves stop_reason unset (so absent) on chat chunks
		// until the last one.
		c.buf = append(c.buf, `null`...)
	case finish == "":
		c.buf = append(c.buf, `null,"stop_reason":null`...)
	default:
		c.buf = append(c.buf, '"')
		c.buf = append(c.buf, finish...)
		c.buf = append(c.buf, `","stop_reason":null`...)
	}
	if c.chat {
		// vLLM 0.32's chat choices carry token_ids (null unless
		// return_token_ids is set).
		c.buf = append(c.buf, `,"token_ids":null`...)
	}
	c.buf = append(c.buf, `}]`...)
	c.usageTail(done, c.continuous)
}

// usage appends the include_usage chunk: no choices, the totals.
func (c *chunker) usage(done int) {
	c.buf = append(c.buf, c.head...)
	c.buf = append(c.buf, `"choices":[]`...)
	c.usageFields(done)
	c.buf = append(c.buf, c.fingerprint...)
	c.buf = append(c.buf, "}\n\n"...)
}

// done appends the stream terminator.
func (c *chunker) done() { c.buf = append(c.buf, "data: [DONE]\n\n"...) }

// usageTail appends the usage object when with is set, then closes the
// chunk.
func (c *chunker) usageTail(completion int, with bool) {
	if with {
		c.usageFields(completion)
	}
	c.buf = append(c.buf, "}\n\n"...)
}

// usageFields appends `,"usage":{...}`.
func (c *chunker) usageFields(completion int) {
	c.buf = append(c.buf, `,"usage":{"prompt_tokens":`...)
	c.buf = strconv.AppendInt(c.buf, int64(c.prompt), 10)
	c.buf = append(c.buf, `,"total_tokens":`...)
	c.buf = strconv.AppendInt(c.buf, int64(c.prompt+completion), 10)
	c.buf = append(c.buf, `,"completion_tokens":`...)
	c.buf = strconv.AppendInt(c.buf, int64(completion), 10)
	if c.cached >= 0 {
		c.buf = append(c.buf, `,"prompt_tokens_details":{"cached_tokens":`...)
		c.buf = strconv.AppendInt(c.buf, int64(c.cached), 10)
		c.buf = append(c.buf, '}')
	}
	c.buf = append(c.buf, '}')
}
