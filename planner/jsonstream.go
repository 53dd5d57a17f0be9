package planner

import (
	"bytes"
	"encoding"
	"encoding/json"
	"io"
	"reflect"
	"strings"
)

// jsonStream writes the bytes encode gives for a value a part at a time: a
// struct field by field, a slice element by element. A plan of 20,000 lanes
// is then digested (or marshalled) holding one lane's JSON at a time rather
// than the whole plan's, and its buffers do not double past it. A slice's
// elements are each encoded in one piece (splitting them further costs
// more time than it saves memory). Anything
// whose encoding depends on more than its parts (a Marshaler, an embedded
// struct, a tag option other than omitempty) is encoded whole.
type jsonStream struct {
	w   io.Writer
	buf bytes.Buffer
	enc *json.Encoder
	err error
	// field, when set, is called before each field of the outermost
	// struct is written (before its comma), with the field's JSON name.
	field func(name string)
	depth int // structs open
}

func newJSONStream(w io.Writer) *jsonStream {
	s := &jsonStream{w: w}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	return s
}

// encode writes v's compact JSON, byte for byte what encode(v) returns.
func (s *jsonStream) encode(v any) error {
	s.value(reflect.ValueOf(v))
	return s.err
}

func (s *jsonStream) write(b []byte) {
	if s.err == nil {
		_, s.err = s.w.Write(b)
	}
}

func (s *jsonStream) whole(v reflect.Value) {
	if s.err != nil {
		return
	}
	s.buf.Reset()
	x := v.Interface()
	if v.CanAddr() {
		x = v.Addr().Interface() // as encoding/json sees an addressable value: pointer methods too
	}
	if s.err = s.enc.Encode(x); s.err == nil {
		s.write(bytes.TrimSuffix(s.buf.Bytes(), []byte{'\n'}))
	}
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func marshals(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler) || p.Implements(jsonMarshaler) || p.Implements(textMarshaler)
}

func (s *jsonStream) value(v reflect.Value) {
	if !v.IsValid() {
		s.write([]byte("null")) // a nil interface
		return
	}
	switch {
	case marshals(v.Type()):
		s.whole(v)
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			s.write([]byte("null"))
			return
		}
		s.value(v.Elem())
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() != reflect.Uint8:
		if v.IsNil() {
			s.write([]byte("null"))
			return
		}
		s.write([]byte{'['})
		for i := range v.Len() {
			if i > 0 {
				s.write([]byte{','})
			}
			s.whole(v.Index(i)) // one element at a time, each in one piece
		}
		s.write([]byte{']'})
	case v.Kind() == reflect.Struct && streamable(v.Type()):
		s.write([]byte{'{'})
		first := true
		t := v.Type()
		s.depth++
		for i := range t.NumField() {
			f := t.Field(i)
			name, omitEmpty, ok := jsonField(f)
			if !ok || omitEmpty && emptyJSON(v.Field(i)) {
				continue
			}
			if s.field != nil && s.depth == 1 {
				s.field(name)
			}
			if !first {
				s.write([]byte{','})
			}
			first = false
			s.whole(reflect.ValueOf(name))
			s.write([]byte{':'})
			s.value(v.Field(i))
		}
		s.depth--
		s.write([]byte{'}'})
	default:
		s.whole(v)
	}
}

// jsonField is the field's JSON name and whether it is left out when
// empty; ok is false for a field encoding/json does not write.
func jsonField(f reflect.StructField) (name string, omitEmpty, ok bool) {
	tag := f.Tag.Get("json")
	if tag == "-" || !f.IsExported() {
		return "", false, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, opts == "omitempty", true
}

// streamable reports whether a struct's JSON is its fields' JSON in order:
// no embedded field, and no tag option but omitempty.
func streamable(t reflect.Type) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return false
		}
		if _, opts, _ := strings.Cut(f.Tag.Get("json"), ","); opts != "" && opts != "omitempty" {
			return false
		}
	}
	return true
}

// emptyJSON is encoding/json's omitempty test.
func emptyJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
