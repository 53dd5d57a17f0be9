package loadgen

import (
	"github.com/infercrane/infercrane/executor/redact"
	"github.com/infercrane/infercrane/lang/shape"
	"github.com/infercrane/infercrane/planner/load"

	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// job is one request to send.
type job struct {
	index       int
	warmup      bool
	open        bool
	scheduledNs int64
	input       int
	output      int
	body        []byte
	// shared, session and turn describe a workload request (see Record).
	shared, session, turn int
	// answer, when set, receives the answer's text (a session's turn,
	// which the next turn sends back).
	answer *[]byte
}

// client sends jobs and records what it sees.
type client struct {
	hc      *http.Client
	url     string
	apiKey  string
	stream  bool
	timeout time.Duration
	start   time.Time
	readers sync.Pool // *sseReader with a reused 32 KiB buffer
	// red removes the API key and other secrets from recorded errors.
	red *redact.Set
	// opts are the shape options the requests were sent with.
	opts shape.Options
}

// maxChunkPrealloc bounds the chunk-time slice reserved up front.
const maxChunkPrealloc = 4096

// endpoint returns the path of the API's endpoint.
func endpoint(api string) string {
	if api == "completions" {
		return "/v1/completions"
	}
	return "/v1/chat/completions"
}

// requestBody is the JSON body of a generation request.
type requestBody struct {
	Model         string         `json:"model"`
	Messages      []chatMsg      `json:"messages,omitempty"`
	Prompt        string         `json:"prompt,omitempty"`
	MaxTokens     int            `json:"max_tokens"`
	IgnoreEOS     bool           `json:"ignore_eos"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

type chatMsg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// buildBody renders one request of cfg's: max_tokens forces the output
// length with ignore_eos, and streaming requests ask for usage in the
// final chunk.
func buildBody(cfg *Config, chat bool, prompt string, maxTokens int) []byte {
	if chat {
		return buildChatBody(cfg, []chatMsg{{Role: "user", Content: prompt}}, maxTokens)
	}
	return marshalBody(requestBody{Model: cfg.Model, Prompt: prompt}, cfg, maxTokens)
}

// buildChatBody renders a chat request of msgs (a conversation so far).
func buildChatBody(cfg *Config, msgs []chatMsg, maxTokens int) []byte {
	return marshalBody(requestBody{Model: cfg.Model, Messages: msgs}, cfg, maxTokens)
}

// marshalBody sets the generation settings every request of cfg shares
// (its shape options among them) and encodes rb.
func marshalBody(rb requestBody, cfg *Config, maxTokens int) []byte {
	rb.MaxTokens, rb.IgnoreEOS, rb.Stream = maxTokens, cfg.IgnoresEOS(), cfg.Streaming
	if cfg.Streaming {
		rb.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	b, _ := json.Marshal(rb)
	return b
}

func (c *client) since(t time.Time) int64 { return int64(t.Sub(c.start)) }

// do sends j and fills rec. Cancelling parent (the end of a duration run's
// grace period, or the caller) marks the request cancelled.
func (c *client) do(parent context.Context, j *job, rec *Record) {
	*rec = Record{Index: j.index, Warmup: j.warmup, OpenLoop: j.open, ScheduledNs: j.scheduledNs,
		InputTokens: j.input, MaxTokens: j.output, NonStreaming: !c.stream,
		SharedTokens: j.shared, Session: j.session, Turn: j.turn}
	ctx, cancel := context.WithTimeout(parent, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(j.body))
	if err != nil {
		rec.ErrorClass, rec.Error = FailConnection, c.red.String(err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	if c.stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	// vLLM adopts X-Request-Id (--enable-request-id-headers), which ties
	// server logs to records.
	req.Header.Set("X-Request-Id", load.RequestIDPrefix+strconv.Itoa(j.index))
	rec.SentNs = c.since(time.Now())
	resp, err := c.hc.Do(req)
	if err != nil {
		rec.DoneNs = c.since(time.Now())
		c.fail(parent, rec, 0, nil, err)
		return
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		rec.DoneNs = c.since(time.Now())
		if rerr != nil && resp.StatusCode < 400 {
			c.fail(parent, rec, resp.StatusCode, body, rerr)
			return
		}
		c.fail(parent, rec, resp.StatusCode, body, nil)
		return
	}
	if c.stream {
		c.readStreamInto(parent, resp.Body, rec, j.answer)
	} else {
		c.readWhole(parent, resp.Body, rec, j.answer)
	}
}

// fail classifies and records a failure; a cancelled parent wins.
func (c *client) fail(parent context.Context, rec *Record, status int, body []byte, err error) {
	if parent.Err() != nil {
		rec.ErrorClass, rec.Error = FailCancelled, "cancelled: "+parent.Err().Error()
		return
	}
	rec.ErrorClass = Classify(status, body, err)
	if rec.ErrorClass == "" {
		rec.ErrorClass = FailBadRequest
	}
	switch {
	case err != nil && len(body) > 0:
		rec.Error = truncate(c.red.String(err.Error()+": "+string(body)), 500)
	case err != nil:
		rec.Error = truncate(c.red.String(err.Error()), 500)
	default:
		rec.Error = truncate(c.red.String(fmt.Sprintf("HTTP %d: %s", status, bytes.TrimSpace(body))), 500)
	}
}

func (c *client) reader(r io.Reader) *sseReader {
	if v := c.readers.Get(); v != nil {
		sr := v.(*sseReader)
		sr.reset(r)
		return sr
	}
	return newSSEReader(r, make([]byte, 32<<10))
}

var doneMarker = []byte("[DONE]")

// readStream consumes an SSE body. Token-carrying chunks are timestamped at
// the socket read that completed them; nothing on this path allocates per
// token (the reader's buffer is reused and ChunkNs is reserved up front).
func (c *client) readStream(parent context.Context, body io.Reader, rec *Record) {
	c.readStreamInto(parent, body, rec, nil)
}

// readStreamInto is readStream that also appends the answer's content to
// *answer when answer is not nil.
func (c *client) readStreamInto(parent context.Context, body io.Reader, rec *Record, answer *[]byte) {
	sr := c.reader(body)
	defer c.readers.Put(sr)
	rec.ChunkNs = make([]int64, 0, min(rec.MaxTokens+1, maxChunkPrealloc))
	ci := chunkInfo{capture: answer != nil}
	sawDone, usage := false, false
	var failErr error
	var errText []byte
	for {
		payload, at, err := sr.next()
		if err != nil {
			if err != io.EOF && !sawDone {
				failErr = err
			}
			break
		}
		if sawDone {
			continue // drain so the connection is reused
		}
		if bytes.Equal(payload, doneMarker) {
			sawDone = true
			rec.DoneNs = c.since(at)
			continue
		}
		if perr := parseChunk(payload, &ci); perr != nil {
			failErr, errText = ErrStreamBroken, append([]byte("malformed chunk: "), payload[:min(len(payload), 200)]...)
			break
		}
		if ci.isError {
			failErr, errText = ErrStreamBroken, append([]byte("error event: "), ci.errMsg...)
			break
		}
		if ci.tokens > 0 {
			t := c.since(at)
			if rec.FirstTokenNs == 0 {
				rec.FirstTokenNs = t
			}
			rec.LastTokenNs = t
			rec.ChunkNs = append(rec.ChunkNs, t)
			rec.ClientTokens += ci.tokens
			for _, raw := range ci.text {
				*answer = appendJSONString(*answer, raw)
			}
		}
		if ci.usage {
			usage = true
			rec.PromptTokens, rec.OutputTokens = ci.promptTokens, ci.completionTokens
			rec.CachedTokens = cachedOf(ci.cachedTokens)
		}
	}
	if !sawDone {
		rec.DoneNs = c.since(time.Now())
	}
	if failErr == nil && !sawDone {
		failErr = ErrStreamBroken
	}
	c.finish(parent, rec, usage, failErr, errText)
}

// finish settles output tokens and the outcome of a 200 response.
func (c *client) finish(parent context.Context, rec *Record, usage bool, failErr error, errText []byte) {
	if !usage {
		rec.OutputTokens, rec.UsageMissing = rec.ClientTokens, true
	}
	if failErr == nil && rec.ClientTokens == 0 {
		failErr = ErrNoTokens
	}
	if failErr == nil {
		failErr = c.truncation(rec, usage)
	}
	if failErr != nil {
		c.fail(parent, rec, rec.Status, errText, failErr)
	}
}

// truncation returns an error wrapping ErrTruncated when rec, asked with
// ignore_eos, came back with fewer output tokens than its max_tokens. The
// count is usage.completion_tokens, or the client's count of token chunks
// when a stream had no usage (a whole answer without usage cannot be
// counted, so it is not judged). Without ignore_eos the model may stop
// early, so nothing is judged.
func (c *client) truncation(rec *Record, usage bool) error {
	if !c.opts.IgnoresEOS() || !usage && !c.stream || rec.OutputTokens >= rec.MaxTokens {
		return nil
	}
	prompt := ""
	if rec.PromptTokens > 0 {
		prompt = fmt.Sprintf(" (%d tokens)", rec.PromptTokens)
	}
	return fmt.Errorf("%w: %d of the %d requested output tokens arrived although ignore_eos was set; the prompt%s left only %d tokens of context; vLLM clamps max_tokens to the context window instead of rejecting the request; reserve more context or shorten the shape",
		ErrTruncated, rec.OutputTokens, rec.MaxTokens, prompt, rec.OutputTokens)
}

// wholeResponse is the part of a non-streaming answer the client reads.
type wholeResponse struct {
	Choices []struct {
		Text    string `json:"text"`
		Message struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens *int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// readWhole consumes a non-streaming answer: the whole answer is one chunk,
// stamped when its last byte was read.
func (c *client) readWhole(parent context.Context, body io.Reader, rec *Record, answer *[]byte) {
	b, err := io.ReadAll(body)
	now := c.since(time.Now())
	rec.DoneNs = now
	if err != nil {
		c.fail(parent, rec, rec.Status, nil, err)
		return
	}
	var wr wholeResponse
	if err := json.Unmarshal(b, &wr); err != nil {
		c.fail(parent, rec, rec.Status, []byte(truncate(string(b), 200)), ErrStreamBroken)
		return
	}
	for _, ch := range wr.Choices {
		if ch.Text != "" || ch.Message.Content != "" || ch.Message.ReasoningContent != "" || ch.Message.Reasoning != "" {
			rec.ClientTokens++
		}
		if answer != nil {
			*answer = append(append(*answer, ch.Text...), ch.Message.Content...)
		}
	}
	if wr.Usage != nil && wr.Usage.CompletionTokens > 0 {
		rec.ClientTokens = max(rec.ClientTokens, 1)
	}
	if rec.ClientTokens > 0 {
		rec.FirstTokenNs, rec.LastTokenNs = now, now
	}
	usage := wr.Usage != nil
	if usage {
		rec.PromptTokens, rec.OutputTokens = wr.Usage.PromptTokens, wr.Usage.CompletionTokens
		if d := wr.Usage.PromptTokensDetails; d != nil && d.CachedTokens != nil {
			rec.CachedTokens = cachedOf(*d.CachedTokens)
		}
	}
	c.finish(parent, rec, usage, nil, nil)
}

// cachedOf returns the cached-token count to record: nil when the server
// did not report one (n < 0).
func cachedOf(n int) *int {
	if n < 0 {
		return nil
	}
	return &n
}

// appendJSONString appends the text of raw, the bytes between the quotes of
// a JSON string, to dst, undoing escapes.
func appendJSONString(dst, raw []byte) []byte {
	if !bytes.ContainsRune(raw, '\\') {
		return append(dst, raw...)
	}
	var s string
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	if json.Unmarshal(q, &s) != nil {
		return append(dst, raw...)
	}
	return append(dst, s...)
}
