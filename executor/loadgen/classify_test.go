package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestClassify(t *testing.T) {
	vllmNew := `{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens","type":"BadRequestError","param":"input_tokens","code":400}}`
	vllmParamOnly := `{"error":{"message":"prompt rejected","type":"BadRequestError","param":"input_text","code":400}}`
	vllmOld := `{"object":"error","message":"The context length is only 4096 tokens","type":"BadRequestError","param":null,"code":400}`
	tooLarge := `{"object":"error","message":"Input is too large for the model","type":"BadRequestError"}`
	plain := `prompt plus max_tokens: maximum context length exceeded`
	other400 := `{"error":{"message":"max_tokens must be at least 1","type":"BadRequestError","param":"max_tokens","code":400}}`
	for _, c := range []struct {
		status int
		body   string
		err    error
		want   string
	}{
		{200, "", nil, ""},
		{400, vllmNew, nil, FailContextOverflow},
		{400, vllmParamOnly, nil, FailContextOverflow},
		{400, vllmOld, nil, FailContextOverflow},
		{400, tooLarge, nil, FailContextOverflow},
		{413, plain, nil, FailContextOverflow},
		{400, other400, nil, FailBadRequest},
		{400, `{"error":{"message":"max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)","type":"BadRequestError","param":"max_tokens","code":400}}`, nil, FailContextOverflow},
		{400, `{"object":"error","message":"max_tokens must be at least 1, got -46771.","type":"BadRequestError","code":400}`, nil, FailContextOverflow},
		{400, `{"error":{"message":"This model's maximum context length is 1024 tokens. However, your prompt contains at least 1025 input tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=1025)","type":"BadRequestError","param":"input_tokens","code":400}}`, nil, FailContextOverflow},
		{400, `{"error":{"message":"max_tokens=2000 cannot be greater than max_model_len=1024. Please request fewer output tokens. (parameter=max_tokens, value=2000)","type":"BadRequestError","param":"max_tokens","code":400}}`, nil, FailBadRequest},
		{200, "", fmt.Errorf("%w: 24 of 100", ErrTruncated), FailTruncated},
		{404, `{"error":{"message":"model not found","param":"model"}}`, nil, FailBadRequest},
		{429, "", nil, FailRateLimited},
		{500, "", nil, FailServerError},
		{503, "", nil, FailServerError},
		{0, "", errors.New("dial tcp: connection refused"), FailConnection},
		{0, "", fmt.Errorf("post: %w", context.DeadlineExceeded), FailTimeout},
		{200, "", io.ErrUnexpectedEOF, FailStreamBroken},
		{200, "", ErrStreamBroken, FailStreamBroken},
		{200, "", ErrNoTokens, FailNoTokens},
		{302, "", nil, FailBadRequest},
	} {
		if got := Classify(c.status, []byte(c.body), c.err); got != c.want {
			t.Errorf("Classify(%d, %q, %v) = %q, want %q", c.status, c.body, c.err, got, c.want)
		}
	}
}
