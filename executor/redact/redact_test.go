package redact

import (
	"bytes"
	"strings"
	"testing"
)

func TestSetRedacts(t *testing.T) {
	s := New("sk-live-123456", "short", `pa"ss\word9`)
	got := s.String(`key sk-live-123456 and short and "pa\"ss\\word9" and pa"ss\word9`)
	if strings.Contains(got, "sk-live") || strings.Contains(got, "word9") {
		t.Errorf("secret left in %q", got)
	}
	if !strings.Contains(got, "short") {
		t.Errorf("a value under MinLen was redacted: %q", got)
	}
	var nilSet *Set
	if nilSet.String("x") != "x" || !nilSet.Empty() {
		t.Error("a nil set must redact nothing")
	}
}

// TestLineWriterSplitSecret: a secret split across writes is still caught.
func TestLineWriterSplitSecret(t *testing.T) {
	var out bytes.Buffer
	w := New("topsecret-42").LineWriter(&out)
	for _, part := range []string{"log: tops", "ecret-", "42 done\nnext ", "topsecret-42"} {
		w.Write([]byte(part))
	}
	w.Close()
	if strings.Contains(out.String(), "topsecret") || out.String() != "log: (sensitive) done\nnext (sensitive)" {
		t.Errorf("got %q", out.String())
	}
}

func FuzzString(f *testing.F) {
	f.Add("abcdefgh", "xxabcdefghyy")
	f.Fuzz(func(t *testing.T, secret, text string) {
		if len(secret) < MinLen {
			return
		}
		got := New(secret).String(text)
		if strings.Contains(got, secret) && !strings.Contains(Marker, secret) {
			// The marker itself may form the secret with its neighbours only
			// if the secret overlaps the marker's text.
			if !strings.ContainsAny(secret, "()") {
				t.Errorf("secret %q left in %q", secret, got)
			}
		}
	})
}
