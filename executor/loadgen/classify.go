package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"regexp"
)

// Sentinel errors the client passes to Classify for outcomes that are not
// transport errors.
var (
	// ErrNoTokens: the server answered 200 but sent no token.
	ErrNoTokens = errors.New("the server answered but sent no token")
	// ErrStreamBroken: the stream ended without [DONE] or carried an error event.
	ErrStreamBroken = errors.New("the stream ended before [DONE]")
	// ErrTruncated: the answer completed with fewer output tokens than the
	// max_tokens requested with ignore_eos (wrap it with the counts).
	ErrTruncated = errors.New("the output was truncated")
)

// overflowMessage matches the context-length errors of vLLM's versions. A
// "max_tokens must be at least 1, got N" with N <= 0 is one too: the load
// generator always asks for at least one token, so the server derived N from
// the room the prompt left (vLLM 0.32 for a prompt that fills the window).
var overflowMessage = regexp.MustCompile(`(?i)maximum context length|context length is only|is too large|max_tokens must be at least 1, got (?:0|-[0-9]+)`)

// Classify names the failure class of a request from its HTTP status (0 when
// no response arrived), the error body and the error the client saw; it
// returns "" for a success. A context overflow is vLLM's 400 whose `param`
// is input_tokens or input_text, or whose message matches
// /maximum context length|context length is only|is too large/ or says
// max_tokens must be at least 1 while naming 0 or a negative number. An
// error wrapping ErrTruncated (a 200 answer shorter than the max_tokens
// asked for with ignore_eos: vLLM 0.32's silent clamp of max_tokens to the
// context window) is FailTruncated.
func Classify(status int, body []byte, err error) string {
	switch {
	case errors.Is(err, ErrTruncated):
		return FailTruncated
	case err != nil && isTimeout(err):
		return FailTimeout
	case errors.Is(err, ErrNoTokens):
		return FailNoTokens
	case errors.Is(err, ErrStreamBroken):
		return FailStreamBroken
	case status == 429:
		return FailRateLimited
	case status >= 500:
		return FailServerError
	case status >= 400:
		if isContextOverflow(body) {
			return FailContextOverflow
		}
		return FailBadRequest
	case err != nil && status >= 200 && status < 300:
		// The headers arrived, then the body failed: a cut stream.
		return FailStreamBroken
	case err != nil:
		return FailConnection
	case status != 0 && (status < 200 || status >= 300):
		return FailBadRequest
	}
	return ""
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// errorBody covers both of vLLM's error layouts: {"error":{...}} and the
// older flat {"object":"error","message":...,"param":...}.
type errorBody struct {
	Message string     `json:"message"`
	Param   *string    `json:"param"`
	Error   *errorBody `json:"error"`
}

func isContextOverflow(body []byte) bool {
	var eb errorBody
	if json.Unmarshal(body, &eb) == nil {
		for e := &eb; e != nil; e = e.Error {
			if e.Param != nil && (*e.Param == "input_tokens" || *e.Param == "input_text") {
				return true
			}
			if overflowMessage.MatchString(e.Message) {
				return true
			}
		}
		return false
	}
	return overflowMessage.Match(body)
}
