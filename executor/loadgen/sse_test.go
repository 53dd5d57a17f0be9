package loadgen

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"testing/iotest"
)

func TestParseChunk(t *testing.T) {
	for _, c := range []struct {
		in               string
		tokens           int
		usage            bool
		prompt, complete int
		isErr            bool
	}{
		{`{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`, 0, false, 0, 0, false},
		{`{"choices":[{"index":0,"delta":{"content":" the"},"finish_reason":null}]}`, 1, false, 0, 0, false},
		{`{"choices":[{"delta":{"reasoning_content":"hm\"m"}}],"usage":null}`, 1, false, 0, 0, false},
		{`{"choices":[{"delta":{"reasoning":"x","content":null}}]}`, 1, false, 0, 0, false},
		{`{"choices":[{"text":" a","logprobs":null,"finish_reason":"length"}]}`, 1, false, 0, 0, false},
		{`{"choices":[],"usage":{"prompt_tokens":72,"total_tokens":88,"completion_tokens":16}}`, 0, true, 72, 16, false},
		{`{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}`, 2, false, 0, 0, false},
		{`{"error":{"message":"boom","type":"InternalServerError","code":500}}`, 0, false, 0, 0, true},
		{` { "choices" : [ { "delta" : { "tool_calls" : [ {"a": [1, 2.5e3, true, false, null]} ] } } ] } `, 0, false, 0, 0, false},
	} {
		var ci chunkInfo
		if err := parseChunk([]byte(c.in), &ci); err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if ci.tokens != c.tokens || ci.usage != c.usage || ci.promptTokens != c.prompt || ci.completionTokens != c.complete || ci.isError != c.isErr {
			t.Errorf("%s: got %+v", c.in, ci)
		}
	}
	for _, bad := range []string{``, `[`, `{"choices":[{"delta":{"content":"x"}`, `{"a":tru}`, `{"a" 1}`, `{"a":"\`} {
		var ci chunkInfo
		if err := parseChunk([]byte(bad), &ci); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestSSEReaderSplitsEvents(t *testing.T) {
	body := ": keep-alive\r\n\r\nevent: message\ndata: {\"a\":1}\r\n\r\ndata:{\"b\":2}\n\nid: 3\ndata: [DONE]"
	for _, r := range []io.Reader{bytes.NewReader([]byte(body)), iotest.OneByteReader(bytes.NewReader([]byte(body)))} {
		sr := newSSEReader(r, make([]byte, 4)) // tiny buffer: forces growth
		var got []string
		for {
			p, _, err := sr.next()
			if err != nil {
				if err != io.EOF {
					t.Fatal(err)
				}
				break
			}
			got = append(got, string(p))
		}
		want := []string{`{"a":1}`, `{"b":2}`, `[DONE]`}
		if len(got) != len(want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("event %d: %q, want %q", i, got[i], want[i])
			}
		}
	}
}

// referenceChunk decodes a chunk with encoding/json into generic values and
// reads them with exact key matches: the slow reference the fast parser must
// agree with.
func referenceChunk(b []byte) (tokens int, usage bool, prompt, completion int, ok bool) {
	var v map[string]any
	if json.Unmarshal(b, &v) != nil {
		return 0, false, 0, 0, false
	}
	nonEmpty := func(m map[string]any, k string) bool { s, _ := m[k].(string); return s != "" }
	if cs, _ := v["choices"].([]any); cs != nil {
		for _, c := range cs {
			cm, _ := c.(map[string]any)
			carries := nonEmpty(cm, "text")
			for _, dk := range []string{"delta", "message"} {
				if d, _ := cm[dk].(map[string]any); d != nil {
					carries = carries || nonEmpty(d, "content") || nonEmpty(d, "reasoning_content") || nonEmpty(d, "reasoning")
				}
			}
			if carries {
				tokens++
			}
		}
	}
	if u, _ := v["usage"].(map[string]any); u != nil {
		p, _ := u["prompt_tokens"].(float64)
		c, _ := u["completion_tokens"].(float64)
		return tokens, true, int(p), int(c), true
	}
	return tokens, false, 0, 0, true
}

// FuzzSSE feeds arbitrary bodies through the SSE reader (in reads of every
// size) and the chunk parser: nothing may panic, the events must not depend
// on how the bytes were split, and on well-formed chunks the fast parser
// must agree with encoding/json.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"text\":\"\\u00e9\"}]}\r\n\r\n: ping\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"x\"}}\n"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\\\"b\"}}],\"usage\":{\"prompt_tokens\":1e2}}\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		whole := collect(t, bytes.NewReader(body))
		split := collect(t, iotest.HalfReader(bytes.NewReader(body)))
		one := collect(t, iotest.OneByteReader(bytes.NewReader(body)))
		if len(whole) != len(split) || len(whole) != len(one) {
			t.Fatalf("events depend on read sizes: %d, %d, %d", len(whole), len(split), len(one))
		}
		for i, p := range whole {
			if p != split[i] || p != one[i] {
				t.Fatalf("event %d differs by read size: %q %q %q", i, p, split[i], one[i])
			}
			var ci chunkInfo
			_ = parseChunk([]byte(p), &ci) // must not panic on anything
			// Compare on the canonical form (no duplicate keys) of objects.
			var generic map[string]any
			if json.Unmarshal([]byte(p), &generic) != nil || generic == nil {
				continue
			}
			q, _ := json.Marshal(generic)
			if err := parseChunk(q, &ci); err != nil {
				t.Fatalf("%s: valid JSON rejected: %v", q, err)
			}
			tok, usage, pr, co, _ := referenceChunk(q)
			if ci.tokens != tok || ci.usage != usage || (usage && isInt(string(q)) && (ci.promptTokens != pr || ci.completionTokens != co)) {
				t.Fatalf("%s: fast parser %+v, reference tokens=%d usage=%v %d/%d", q, ci, tok, usage, pr, co)
			}
		}
	})
}

// isInt reports whether the payload has no fractional or exponent numbers
// (where the fast parser keeps only the integer part).
func isInt(p string) bool { return !bytes.ContainsAny([]byte(p), ".eE") }

func collect(t *testing.T, r io.Reader) []string {
	sr := newSSEReader(r, make([]byte, 8))
	var out []string
	for {
		p, _, err := sr.next()
		if err != nil {
			return out
		}
		out = append(out, string(p))
	}
}
