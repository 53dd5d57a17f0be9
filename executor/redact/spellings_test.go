package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// TestDerivedSpellingsAreRedacted: text holding a secret in a spelling
// derived from it (a trimmed URL, the URL's password alone, its Basic
// credentials, JSON-escaped and URL-encoded forms) loses it; the callers
// add only the value (issue 25, defects 1, 3 and 4).
func TestDerivedSpellingsAreRedacted(t *testing.T) {
	const pass = "PASSWORD99"
	sensitiveURL := "http://user:" + pass + "@127.0.0.1:8000/v1"
	basic := base64.StdEncoding.EncodeToString([]byte("user:" + pass))
	key := "sk-live/ab+cd=ef<9>"
	plain := "PLANTED-FILE-7e8f9a"
	set := New(sensitiveURL, key, plain)
	for _, tc := range []struct{ name, text, leak string }{
		{"trimmed /v1", "Deployed tiny at http://user:" + pass + "@127.0.0.1:8000", pass},
		{"trimmed slash", "GET http://user:" + pass + "@127.0.0.1:8000/v1/models", pass},
		{"password alone", `{"detail":"bad password ` + pass + `"}`, pass},
		{"basic", "Authorization: Basic " + basic, basic},
		{"basic json", `{"headers":{"Authorization":"Basic ` + basic + `"}}`, basic[:12]},
		{"json slash", `{"echo":"sk-live\/ab+cd=ef\u003c9\u003e"}`, `ab+cd`},
		{"json u002f", `{"echo":"sk-live\u002fab+cd=ef<9>"}`, `ab+cd`},
		{"json in json", `{"body":"{\"echo\":\"sk-live\\\/ab+cd=ef<9>\"}"}`, `ab+cd`},
		{"query escaped", "key=" + url.QueryEscape(key), "ab%2Bcd"},
		{"path escaped", "/k/" + url.PathEscape(key), "ab+cd"},
		{"percent lower", "k=sk-live%2fab%2bcd%3def%3c9%3e", "ab%2bcd"},
		{"url-encoded password", "http://user:" + url.QueryEscape(pass) + "@h", pass},
		{"plain as password, basic", "Basic " + base64.StdEncoding.EncodeToString([]byte("someone:"+plain)), "Basic c29tZW9uZT"},
		{"plain in base64 url alphabet", base64.URLEncoding.EncodeToString([]byte("x" + plain + "yz")), "eA"},
	} {
		got := set.String(tc.text)
		if strings.Contains(got, tc.leak) || !strings.Contains(got, Marker) {
			t.Errorf("%s: %q became %q", tc.name, tc.text, got)
		}
		if b := set.Bytes([]byte(tc.text)); string(b) != got {
			t.Errorf("%s: Bytes gave %q, String %q", tc.name, b, got)
		}
	}
	// Values gives back what was added: a set made from them matches the
	// same spellings.
	if v := set.Values(); len(v) != 3 || v[0] != sensitiveURL {
		t.Errorf("Values() = %q", v)
	}
	// Unrelated text around a secret stays.
	if got := set.String("host 127.0.0.1:8000 answered"); got != "host 127.0.0.1:8000 answered" {
		t.Errorf("unrelated text changed: %q", got)
	}
}

// TestLineWriterLongLineHoldsBackASecretPrefix: a line longer than the
// writer holds is written in pieces, and a secret across the piece
// boundary is still caught (issue 25, defect 5).
func TestLineWriterLongLineHoldsBackASecretPrefix(t *testing.T) {
	var out bytes.Buffer
	w := New("topsecret-42").LineWriter(&out)
	w.Write(append(bytes.Repeat([]byte("x"), flushAt-5), "topse"...))
	w.Write([]byte("cret-42 and more\n"))
	w.Close()
	if strings.Contains(out.String(), "topse") || !strings.HasSuffix(out.String(), "x"+Marker+" and more\n") {
		t.Errorf("got ...%q", out.String()[max(0, out.Len()-40):])
	}
	if out.Len() != flushAt-5+len(Marker)+len(" and more\n") {
		t.Errorf("wrote %d bytes", out.Len())
	}
}

// FuzzSpellings: a secret written by common encoders, inside other text,
// does not survive in that encoding.
func FuzzSpellings(f *testing.F) {
	f.Add("sk-ab/cd+ef==", "pre ", " post", "someone")
	f.Add("p@ss wörd\"<&>", "", "", "u")
	f.Fuzz(func(t *testing.T, secret, pre, post, user string) {
		if len(secret) < MinLen || strings.ContainsAny(secret, "()") {
			return
		}
		set := New(secret)
		js, _ := json.Marshal(secret)
		for name, enc := range map[string]string{
			"raw":         secret,
			"json":        string(js[1 : len(js)-1]),
			"json slash":  strings.ReplaceAll(string(js[1:len(js)-1]), "/", `\/`),
			"query":       url.QueryEscape(secret),
			"path":        url.PathEscape(secret),
			"base64 std":  base64.StdEncoding.EncodeToString([]byte(user + ":" + secret)),
			"base64 url":  base64.RawURLEncoding.EncodeToString([]byte(pre + secret + post)),
			"base64 head": base64.StdEncoding.EncodeToString([]byte(secret + post)),
		} {
			if strings.HasPrefix(name, "base64") {
				if len(secret) < 12 {
					continue // too short for a fragment of 8 letters at every offset
				}
				if got := set.String(pre + " " + enc + " " + post); strings.Contains(got, enc) {
					t.Errorf("%s: %q left in %q", name, enc, got)
				}
				continue
			}
			if got := set.String(pre + enc + post); strings.Contains(got, enc) && !strings.Contains(pre+post, enc) {
				t.Errorf("%s: %q left in %q", name, enc, got)
			}
		}
	})
}
