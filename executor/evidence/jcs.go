package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonicalize returns the RFC 8785 (JSON Canonicalization Scheme) form of
// the JSON text in data: no insignificant whitespace, object members sorted
// by the UTF-16 code units of their names, numbers in ECMAScript's shortest
// round-trip form and strings escaped as JSON.stringify escapes them.
//
// It rejects what RFC 8785 cannot represent: duplicate member names, numbers
// outside the IEEE 754 double range, invalid UTF-8 and trailing data.
func Canonicalize(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("canonical JSON: trailing data after the JSON value; pass exactly one document")
	}
	var buf bytes.Buffer
	buf.Grow(len(data))
	if err := writeCanonical(&buf, v); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// member is one object member in input order.
type member struct {
	name  string
	value any
}

// object is a parsed JSON object keeping its members until they are sorted.
type object []member

// parseValue reads one JSON value from dec as nil, bool, json.Number,
// string, []any or object.
func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, errors.New("unexpected end of input")
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var obj object
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				name := kt.(string)
				if seen[name] {
					return nil, fmt.Errorf("duplicate member name %q; RFC 8785 requires unique names", name)
				}
				seen[name] = true
				val, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				obj = append(obj, member{name, val})
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return obj, nil
		case '[':
			arr := []any{}
			for dec.More() {
				val, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, val)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %q", t)
	default:
		return t, nil // nil, bool, json.Number, string
	}
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return fmt.Errorf("number %s is outside the IEEE 754 double range", t)
		}
		s, err := FormatNumber(f)
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case string:
		return writeString(buf, t)
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case object:
		sorted := make(object, len(t))
		copy(sorted, t)
		keys := make([][]uint16, len(sorted))
		for i, m := range sorted {
			keys[i] = utf16.Encode([]rune(m.name))
		}
		idx := make([]int, len(sorted))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return lessUTF16(keys[idx[a]], keys[idx[b]]) })
		buf.WriteByte('{')
		for i, j := range idx {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeString(buf, sorted[j].name); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := writeCanonical(buf, sorted[j].value); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("unsupported value of type %T", v)
	}
	return nil
}

// lessUTF16 orders two strings by their UTF-16 code units, as RFC 8785
// section 3.2.3 requires.
func lessUTF16(a, b []uint16) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

// writeString writes s as JSON.stringify does: the two-character escapes
// for \b \t \n \f \r " and \, \u00xx (lower-case hex) for the remaining
// control characters, everything else as literal UTF-8.
func writeString(buf *bytes.Buffer, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("string %q is not valid UTF-8", s)
	}
	buf.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\t':
			buf.WriteString(`\t`)
		case '\n':
			buf.WriteString(`\n`)
		case '\f':
			buf.WriteString(`\f`)
		case '\r':
			buf.WriteString(`\r`)
		default:
			if c < 0x20 {
				const hex = "0123456789abcdef"
				buf.WriteString(`\u00`)
				buf.WriteByte(hex[c>>4])
				buf.WriteByte(hex[c&0xf])
			} else {
				buf.WriteByte(c)
			}
		}
	}
	buf.WriteByte('"')
	return nil
}

// FormatNumber formats f as ECMAScript's Number.prototype.toString does
// (the number serialisation RFC 8785 prescribes): the shortest digits that
// round-trip, plain notation for decimal exponents in [-6, 21), exponent
// notation ("1e+21", "5e-324") outside. NaN and the infinities are errors.
func FormatNumber(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("number %v cannot be represented in JSON", f)
	}
	if f == 0 {
		return "0", nil // also -0
	}
	var sb strings.Builder
	if f < 0 {
		sb.WriteByte('-')
		f = -f
	}
	// Shortest round-trip digits and exponent: d.ddddde±x.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expStr, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expStr)
	k := len(digits)
	n := exp + 1 // position of the decimal point relative to the digits
	switch {
	case k <= n && n <= 21:
		sb.WriteString(digits)
		sb.WriteString(strings.Repeat("0", n-k))
	case 0 < n && n <= 21:
		sb.WriteString(digits[:n])
		sb.WriteByte('.')
		sb.WriteString(digits[n:])
	case -6 < n && n <= 0:
		sb.WriteString("0.")
		sb.WriteString(strings.Repeat("0", -n))
		sb.WriteString(digits)
	default:
		sb.WriteByte(digits[0])
		if k > 1 {
			sb.WriteByte('.')
			sb.WriteString(digits[1:])
		}
		sb.WriteByte('e')
		if n-1 >= 0 {
			sb.WriteByte('+')
		}
		sb.WriteString(strconv.Itoa(n - 1))
	}
	return sb.String(), nil
}
