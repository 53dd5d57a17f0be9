package sim

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequestBody sends arbitrary bodies to every POST endpoint of an
// instant engine: it must never panic, answer only statuses vLLM would, and
// end every successful stream with [DONE].
func FuzzRequestBody(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":"the cat","max_tokens":2,"ignore_eos":true}`,
		`{"prompt":[1,2,3],"max_tokens":1}`,
		`{"prompt":["a","b"]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"max_completion_tokens":2}`,
		`{"tokens":[5,6,7]}`,
		`{"prompt":"a","max_tokens":-1}`,
		`{"prompt":"a","min_tokens":9,"max_tokens":2}`,
		`{"prompt":"a","n":2}`,
		`{"prompt":"` + strings.Repeat(" the", 70) + `","max_tokens":3}`,
		`{"prompt":"` + strings.Repeat(" the", 60) + `","max_tokens":10,"ignore_eos":true,"stream":true}`,
		`{"prompt":"` + strings.Repeat(" the", 64) + `"}`,
		`{"prompt":"a","max_tokens":65}`,
		`{"messages":[{"role":"user","content":"a"}],"max_completion_tokens":9223372036854775807}`,
		`{"prompt":"a","max_tokens":-9223372036854775808}`,
		`not json`,
	} {
		f.Add(s)
	}
	e, err := NewEngine(Options{Model: "m", MaxModelLen: 64})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(e.Close)
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize"} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			e.ServeHTTP(rec, req)
			switch rec.Code {
			case 200, 400, 404:
			default:
				t.Fatalf("%s %q: status %d", path, body, rec.Code)
			}
			if rec.Code == 200 && strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") &&
				!bytes.HasSuffix(rec.Body.Bytes(), []byte("data: [DONE]\n\n")) {
				t.Fatalf("%s %q: a stream without [DONE]: %q", path, body, rec.Body.String())
			}
		}
	})
}
