package sim

import (
	"strings"
	"testing"
)

func TestTokenizeRules(t *testing.T) {
	cases := []struct {
		text string
		n    int
	}{
		{"", 0},
		{"the", 1},
		{" the", 1},
		{"the cat is on the table", 6},
		{"\n", 1},
		{"The", 3},      // capitalised: not in the vocabulary, one token per byte
		{"xyzzy", 5},    // unknown word
		{" xyzzy", 6},   // unknown word with its space
		{"the  cat", 3}, // a double space leaves one bare space
		{"<|im_start|>user\nhi<|im_end|>\n", 1 + 1 + 1 + 2 + 1 + 1},
		{"<|im_star", 6}, // "<", "|", "i", "m", "_", "star"
		{"héllo", 6},     // non-ASCII bytes are byte tokens
	}
	for _, c := range cases {
		if got := len(Tokenize(c.text)); got != c.n {
			t.Errorf("Tokenize(%q) has %d tokens, want %d", c.text, got, c.n)
		}
		if got := CountTokens(c.text); got != c.n {
			t.Errorf("CountTokens(%q) = %d, want %d", c.text, got, c.n)
		}
	}
}

func TestChatTemplateCost(t *testing.T) {
	one := RenderChat([]Message{{Role: "user", Content: ""}}, true)
	if n := CountTokens(one); n != 8 {
		t.Fatalf("an empty user message with the generation prompt costs %d tokens, want 5+3", n)
	}
	if n := CountTokens(RenderChat([]Message{{Role: "user", Content: "the cat"}}, false)); n != 7 {
		t.Fatalf("without the generation prompt: %d, want 5+2", n)
	}
}

func TestGeneratedTokensRetokenize(t *testing.T) {
	var b strings.Builder
	for k := 0; k < 500; k++ {
		b.WriteString(vocab.pieces[outputToken(42, k)])
	}
	if n := CountTokens(b.String()); n != 500 {
		t.Fatalf("500 generated tokens retokenize to %d", n)
	}
	if len(Vocabulary()) < 300 || VocabSize() != 256+2*len(Vocabulary())+3 {
		t.Fatalf("vocabulary %d words, size %d", len(Vocabulary()), VocabSize())
	}
}

// TestSpacedWordIDIsTheMapsID holds outputToken's arithmetic to the
// tokenizer's own table: every word's spaced id, and the generated text
// of a fixed seed unchanged (the sequence was once looked up by string).
func TestSpacedWordIDIsTheMapsID(t *testing.T) {
	for i, w := range vocabWords {
		if got, want := spacedWordID(i), vocab.wordIDs[" "+w]; got != want {
			t.Fatalf("spacedWordID(%d) = %d, vocab.wordIDs[%q] = %d", i, got, " "+w, want)
		}
	}
	for k := 0; k < 1000; k++ {
		s := uint64(7) + uint64(k)*0x9e3779b97f4a7c15
		if got, want := outputToken(7, k), vocab.wordIDs[" "+vocabWords[splitmix(&s)%uint64(len(vocabWords))]]; got != want {
			t.Fatalf("outputToken(7, %d) = %d, want %d", k, got, want)
		}
	}
}

// FuzzTokenize checks that tokenization is lossless (Detokenize inverts
// Tokenize), and that CountTokens agrees.
func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"the cat", " the", "<|im_start|>user\nhi<|im_end|>\n", "héllo wörld", "<|", "a  b\t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := Tokenize(s)
		back, err := Detokenize(ids)
		if err != nil || back != s {
			t.Fatalf("Detokenize(Tokenize(%q)) = %q, %v", s, back, err)
		}
		if CountTokens(s) != len(ids) {
			t.Fatalf("CountTokens(%q) = %d, Tokenize has %d", s, CountTokens(s), len(ids))
		}
	})
}
