package sim

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The simulated engine's tokenizer is deterministic and self-contained, so
// /tokenize, usage counts and the streamed text always agree:
//
//   - Token ids 0..255 are single bytes (the byte fallback).
//   - Every word of the built-in lowercase vocabulary (see Vocabulary) has
//     two tokens: the bare word (id 256+2i) and the word with one leading
//     space (id 257+2i).
//   - The chat-template markers <|im_start|>, <|im_end|> and <|endoftext|>
//     are one token each (the last ids).
//
// Text is split greedily from the left: a special marker is one token; a
// maximal run of ASCII letters, optionally preceded by one space, is one
// token when it is a vocabulary word and one token per byte otherwise;
// anything else is one token per byte. So "the cat sat" is 3 tokens, " the"
// is 1, "\n" is 1, and an unknown or capitalised word of n letters costs n
// tokens (n+1 with its leading space). Generated text is a sequence of
// " word" tokens, each exactly one token when tokenized again.

// Special tokens of the chat template.
const (
	ImStart   = "<|im_start|>"
	ImEnd     = "<|im_end|>"
	EndOfText = "<|endoftext|>"
)

var specials = []string{ImStart, ImEnd, EndOfText}

// vocabulary is the fixed word list; its order defines the token ids.
var vocabulary = strings.Fields(`
the of and to in is that for it as was with be by on not he this are or his
from at which but have an they you were her she there one all we their has
been if more when will would who so no out up into do any your what some can
time only could new them man other about than then its also two first may
like made these over did such our after most years way where many work those
must before through back much down should because each just people how being
state good under world last very own still see men make long between both
life last little year day might great three never old take here while last
system user assistant tool model token prompt request server engine cache
batch queue stream answer question reply data value number text word line
page book story river mountain city house garden window door table chair
light water fire stone tree leaf flower bird fish horse dog cat sun moon star
cloud rain snow wind sea ship road bridge market school office paper letter
music song voice color green blue red white black yellow small large quick
slow early late warm cold bright dark quiet loud simple clear open close
begin end start finish move turn carry bring hold keep find give tell ask
show call write read speak learn teach build grow plant walk run jump sing
play watch listen think know feel seem become leave meet follow change
happen allow remember forget believe understand explain describe measure
count compare choose decide plan test check study answer wonder travel visit
morning evening night summer winter spring autumn week month hour minute
second moment history science nature animal family friend child mother
father brother sister teacher student doctor farmer worker artist writer
north south east west left right center edge corner middle inside outside
above below behind between across around along near far always often
sometimes rarely soon today tomorrow yesterday together alone again almost
enough perhaps maybe indeed already yet even ever every nothing something
everything anything someone everyone power energy signal pattern reason
result method process problem solution example number field circle square
hello
`)

// vocabWords is the de-duplicated vocabulary in first-seen order.
var vocabWords = func() []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range vocabulary {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}()

const byteTokens = 256

// tokenTable is the simulated tokenizer's table of token ids, built once
// from vocabWords and specials (newTokenTable).
type tokenTable struct {
	// pieces[id] is the text of token id.
	pieces []string
	// wordIDs maps a word (with or without one leading space) to its id.
	wordIDs map[string]int
	// specialIDs maps a special marker to its id.
	specialIDs map[string]int
	// tokenJSON[id] is the JSON string literal of token id's text, computed
	// once so streaming a token allocates nothing.
	tokenJSON [][]byte
}

// vocab is the tokenizer's one table: a value computed from constants, not
// behaviour (the package starts nothing).
var vocab = newTokenTable()

// newTokenTable numbers the byte tokens, then each word bare and with a
// leading space, then the special markers.
func newTokenTable() tokenTable {
	v := tokenTable{pieces: make([]string, 0, byteTokens+2*len(vocabWords)+len(specials))}
	for b := 0; b < byteTokens; b++ {
		v.pieces = append(v.pieces, string([]byte{byte(b)}))
	}
	v.wordIDs = make(map[string]int, 2*len(vocabWords))
	for _, w := range vocabWords {
		v.wordIDs[w] = len(v.pieces)
		v.pieces = append(v.pieces, w)
		v.wordIDs[" "+w] = len(v.pieces)
		v.pieces = append(v.pieces, " "+w)
	}
	v.specialIDs = make(map[string]int, len(specials))
	for _, s := range specials {
		v.specialIDs[s] = len(v.pieces)
		v.pieces = append(v.pieces, s)
	}
	v.tokenJSON = make([][]byte, len(v.pieces))
	for i, p := range v.pieces {
		v.tokenJSON[i], _ = json.Marshal(p)
	}
	return v
}

// spacedWordID is the id of " "+vocabWords[i]: newTokenTable gives every word two
// consecutive ids after the byte tokens, the bare word's, then the spaced
// word's.
func spacedWordID(i int) int { return byteTokens + 2*i + 1 }

// Vocabulary returns the tokenizer's words in id order (a copy). Each word w
// is one token, and so is " "+w.
func Vocabulary() []string { return append([]string(nil), vocabWords...) }

// VocabSize is the number of token ids the tokenizer uses.
func VocabSize() int { return len(vocab.pieces) }

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// Tokenize splits text into token ids with the documented rules above.
func Tokenize(text string) []int {
	out := make([]int, 0, len(text)/4+1)
	return appendTokens(out, text)
}

// CountTokens is len(Tokenize(text)) without building the slice.
func CountTokens(text string) int {
	n := 0
	scanTokens(text, func(int) { n++ })
	return n
}

func appendTokens(out []int, text string) []int {
	scanTokens(text, func(id int) { out = append(out, id) })
	return out
}

func scanTokens(s string, emit func(int)) {
	for i := 0; i < len(s); {
		if s[i] == '<' {
			if id, n := matchSpecial(s[i:]); n > 0 {
				emit(id)
				i += n
				continue
			}
		}
		j := i
		if s[j] == ' ' && j+1 < len(s) && isLetter(s[j+1]) {
			j++
		}
		if isLetter(s[j]) {
			k := j
			for k < len(s) && isLetter(s[k]) {
				k++
			}
			if id, ok := vocab.wordIDs[s[i:k]]; ok {
				emit(id)
			} else {
				for ; i < k; i++ {
					emit(int(s[i]))
				}
			}
			i = k
			continue
		}
		emit(int(s[i]))
		i++
	}
}

func matchSpecial(s string) (id, n int) {
	for _, sp := range specials {
		if strings.HasPrefix(s, sp) {
			return vocab.specialIDs[sp], len(sp)
		}
	}
	return 0, 0
}

// Detokenize renders token ids back to text. It fails on an id outside the
// vocabulary, naming it.
func Detokenize(ids []int) (string, error) {
	var b strings.Builder
	for _, id := range ids {
		if id < 0 || id >= len(vocab.pieces) {
			return "", fmt.Errorf("token id %d is out of range; the simulated tokenizer has ids 0..%d", id, len(vocab.pieces)-1)
		}
		b.WriteString(vocab.pieces[id])
	}
	return b.String(), nil
}

// Message is one chat message as the OpenAI API sends it; Content is the
// text (the request's content parts are joined before it gets here).
type Message struct {
	Role    string
	Content string
}

// RenderChat applies the engine's fixed chat template (Qwen style): each
// message becomes "<|im_start|>ROLE\nCONTENT<|im_end|>\n", and with
// addGenerationPrompt the prompt ends with "<|im_start|>assistant\n". A
// message of a vocabulary role therefore costs 5 template tokens besides
// its content, and the generation prompt 3.
func RenderChat(msgs []Message, addGenerationPrompt bool) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(ImStart)
		b.WriteString(m.Role)
		b.WriteByte('\n')
		b.WriteString(m.Content)
		b.WriteString(ImEnd)
		b.WriteByte('\n')
	}
	if addGenerationPrompt {
		b.WriteString(ImStart)
		b.WriteString("assistant\n")
	}
	return b.String()
}
