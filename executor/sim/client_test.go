package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseResult is what a test client saw of one streamed response.
type sseResult struct {
	status  int
	raw     [][]byte        // every data chunk except [DONE]
	times   []time.Duration // arrival of every chunk that carried a token
	text    string
	done    bool // saw data: [DONE]
	err     error
	body    []byte // non-streaming or error body
	started time.Time
}

// post sends a JSON body and reads the response fully, parsing SSE when the
// response is an event stream.
func post(t testing.TB, client *http.Client, url string, body any) sseResult {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	res := sseResult{started: time.Now()}
	resp, err := client.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		res.err = err
		return res
	}
	defer resp.Body.Close()
	res.status = resp.StatusCode
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		res.body, res.err = io.ReadAll(resp.Body)
		return res
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line without data prefix: %q", line)
		}
		if data == "[DONE]" {
			res.done = true
			continue
		}
		// Cheap detection of token-carrying chunks keeps the client light
		// enough for timing tests; JSON is decoded later, on demand.
		if strings.Contains(data, `"content":" `) || strings.Contains(data, `"text":" `) {
			res.times = append(res.times, time.Since(res.started))
		}
		res.raw = append(res.raw, []byte(data))
	}
	res.err = sc.Err()
	return res
}

// chunks decodes every data chunk and the streamed text.
func (r *sseResult) chunks(t testing.TB) []map[string]any {
	t.Helper()
	out := make([]map[string]any, 0, len(r.raw))
	r.text = ""
	for _, b := range r.raw {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("chunk is not JSON: %v: %q", err, b)
		}
		out = append(out, m)
		r.text += chunkText(m)
	}
	return out
}

// chunkText is the token text a chunk carries (chat delta content or
// completion text).
func chunkText(m map[string]any) string {
	choices, _ := m["choices"].([]any)
	if len(choices) == 0 {
		return ""
	}
	c := choices[0].(map[string]any)
	if d, ok := c["delta"].(map[string]any); ok {
		s, _ := d["content"].(string)
		return s
	}
	s, _ := c["text"].(string)
	return s
}

func usageOf(m map[string]any) (prompt, completion, total int) {
	u, _ := m["usage"].(map[string]any)
	if u == nil {
		return -1, -1, -1
	}
	return int(u["prompt_tokens"].(float64)), int(u["completion_tokens"].(float64)), int(u["total_tokens"].(float64))
}
