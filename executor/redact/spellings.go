package redact

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// minFragment is the shortest base64 fragment of a secret treated as a
// spelling of it (see base64Fragments): shorter runs of base64 letters
// are too common in unrelated text.
const minFragment = 8

// spelling is one way a secret may appear in text.
type spelling struct {
	text string
	// b64 marks a fragment of a base64 encoding: a match removes the whole
	// run of base64 letters around it (the token the fragment is part of).
	b64 bool
}

// Spellings returns every spelling of secret the redactor matches, secret
// itself first: what a URL holding it derives (its userinfo's user and
// password apart, decoded and encoded, the URL trimmed of its trailing
// slashes and path segments, the HTTP Basic credentials it makes), and
// for each of those its JSON-escaped forms (Go's, with `\/`, `\u002f`,
// ASCII-only, once more escaped as a JSON string inside JSON),
// URL-encoded and percent-encoded forms, and the fragments any base64
// encoding of a text holding it must contain. Spellings shorter than
// MinLen are left out (base64 fragments shorter than 8 letters too).
func Spellings(secret string) []string {
	var out []string
	for _, s := range spellings(secret) {
		out = append(out, s.text)
	}
	return out
}

func spellings(secret string) []spelling {
	seen := map[string]bool{}
	var out []spelling
	add := func(t string, b64 bool) {
		if len(t) >= MinLen && !seen[t] && (!b64 || len(t) >= minFragment) {
			seen[t] = true
			out = append(out, spelling{t, b64})
		}
	}
	bases := []string{secret}
	var basic []string // user:password pairs sent as HTTP Basic
	if u, err := url.Parse(secret); err == nil && u.Scheme != "" && u.Host != "" {
		bases = append(bases, trimmedURLs(secret)...)
		if u.User != nil {
			raw, _, _ := strings.Cut(strings.TrimPrefix(secret[len(u.Scheme):], "://"), "@")
			user, pass, _ := strings.Cut(raw, ":")
			dpass, _ := u.User.Password()
			bases = append(bases, raw, user, pass, u.User.Username(), dpass)
			basic = append(basic, u.User.Username()+":"+dpass)
		}
	}
	for _, b := range bases {
		for _, e := range encodings(b) {
			add(e, false)
		}
	}
	for _, b := range basic {
		add(base64.StdEncoding.EncodeToString([]byte(b)), true)
	}
	for _, b := range bases {
		if len(b) < MinLen {
			continue
		}
		for _, f := range base64Fragments(b) {
			add(f, true)
		}
	}
	return out
}

// trimmedURLs are the forms of the URL s a client derives by trimming it:
// without trailing slashes, without its query or fragment, and cut back
// one path segment at a time (".../v1" becomes "..."), each with and
// without a trailing slash.
func trimmedURLs(s string) []string {
	var out []string
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
		out = append(out, s)
	}
	root := strings.Index(s, "://") + 3
	if i := strings.IndexByte(s[root:], '/'); i >= 0 {
		root += i
	} else {
		root = len(s)
	}
	for {
		t := strings.TrimRight(s, "/")
		out = append(out, t, t+"/")
		if len(t) <= root {
			break
		}
		s = t[:strings.LastIndexByte(t, '/')]
	}
	return out
}

// encodings are s and its escaped forms: as JSON string contents (several
// encoders' conventions, and JSON inside a JSON string) and URL-encoded.
func encodings(s string) []string {
	out := []string{s}
	seen := map[string]bool{s: true}
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	var jsons []string
	for _, slash := range []string{"/", `\/`, `\u002f`, `\u002F`} {
		for _, html := range []bool{false, true} {
			for _, ascii := range []bool{false, true} {
				j := jsonEscape(s, slash, html, ascii)
				if !seen[j] {
					jsons = append(jsons, j)
				}
				add(j)
			}
		}
	}
	for _, j := range jsons {
		for _, slash := range []string{"/", `\/`} {
			add(jsonEscape(j, slash, false, false))
			add(jsonEscape(j, slash, true, false))
		}
	}
	add(url.QueryEscape(s))
	add(url.PathEscape(s))
	add(url.User(s).String())
	add(percentAll(s, "%%%02X"))
	add(percentAll(s, "%%%02x"))
	return out
}

// jsonEscape writes s as the contents of a JSON string: slash is how '/'
// is written, html escapes <, > and & as Go does, ascii writes every
// non-ASCII rune as \uXXXX as Python does.
func jsonEscape(s, slash string, html, ascii bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '/':
			b.WriteString(slash)
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (html && (r == '<' || r == '>' || r == '&')) || r == 0x2028 || r == 0x2029 || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04x`, r)
		case ascii && r > 0x7e:
			if r > 0xffff {
				r1, r2 := surrogates(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// percentAll percent-encodes every byte of s but the unreserved ones.
func percentAll(s, format string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, format, c)
		}
	}
	return b.String()
}

// base64Fragments are the letters that any base64 encoding (standard or
// URL alphabet) of a text holding s must contain, for each of the three
// offsets s may start at: the letters whose six bits all come from s.
func base64Fragments(s string) []string {
	var out []string
	for off := 0; off < 3; off++ {
		buf := append(make([]byte, off), s...)
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			e := enc.EncodeToString(buf)
			first := (8*off + 5) / 6
			last := 8 * (off + len(s)) / 6 // letters [first, last) hold only bits of s
			if last-first >= minFragment {
				out = append(out, e[first:last])
			}
		}
	}
	return out
}

// isBase64Letter reports whether c belongs to either base64 alphabet.
func isBase64Letter(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
}
