package shape

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Kind is a setting's value type in the spec language.
type Kind int

// The kinds of settings.
const (
	Whole  Kind = iota + 1 // a whole number (a Go int)
	Number                 // a number (a Go float64)
	String                 // a string
	Bool                   // true or false
	List                   // a list of numbers, set by a block
)

// Role is what a setting changes.
type Role string

// The roles of settings.
const (
	// RoleLane settings change the lane's ID and what its runs do.
	RoleLane Role = "lane"
	// RoleDeployment settings change the server a lane runs on too.
	RoleDeployment Role = "deployment"
	// RoleReport settings change only what reports show.
	RoleReport Role = "report"
)

// Bound is a lower bound: Value, excluded when Strict.
type Bound struct {
	Value  float64
	Strict bool
	// Why explains an unusual bound in error messages.
	Why string
}

// Allows reports whether f is within the bound.
func (b Bound) Allows(f float64) bool {
	if b.Strict {
		return f > b.Value
	}
	return f >= b.Value
}

// String says the bound as error messages do: "greater than 0", "0 or
// more", "at least 0.001 (why)".
func (b Bound) String() string {
	v := strconv.FormatFloat(b.Value, 'f', -1, 64)
	var s string
	switch {
	case b.Strict:
		s = "greater than " + v
	case b.Value == 0:
		s = "0 or more"
	default:
		s = "at least " + v
	}
	if b.Why != "" {
		s += " (" + b.Why + ")"
	}
	return s
}

// Field is one declared setting, read from the tags of its Settings field.
type Field struct {
	// Name is the attribute's name in a shape block ("" when a block sets
	// it); JSON its name in plans and lane IDs.
	Name, JSON string
	// GoName is the struct field's name.
	GoName string
	Kind   Kind
	// Required settings must be set; Trace ones may be a trace percentile
	// and are decoded by the spec language itself.
	Required, Trace bool
	// Default is the value when unset, spelt as in HCL ("" with none:
	// the zero value).
	Default string
	// Min is the lower bound of a number (nil: none); Max its upper bound.
	Min *Bound
	Max float64
	// Choices are the values a string may take (nil: any).
	Choices []string
	// Doc is the sentence that explains the setting in error messages.
	Doc  string
	Role Role
	// OmitEmpty is true when the JSON tag has omitempty.
	OmitEmpty bool

	index []int
}

// namedMax are the upper bounds a max tag may name.
var namedMax = map[string]float64{"tokens": MaxTokens, "requests": MaxRequests, "seconds": MaxSeconds}

// Fields lists the declared settings in their Settings order (Options'
// after the others). A malformed tag panics: it is a programming error
// that the package's tests catch.
func Fields() []Field { return fields() }

var fields = sync.OnceValue(func() []Field {
	out, err := parseFields(reflect.TypeFor[Settings]())
	if err != nil {
		panic("shape: " + err.Error())
	}
	return out
})

// Attributes lists the settings that are attributes of a shape block.
func Attributes() []Field {
	var out []Field
	for _, f := range Fields() {
		if f.Name != "" {
			out = append(out, f)
		}
	}
	return out
}

// Lookup returns the setting whose HCL name is name.
func Lookup(name string) (Field, bool) {
	for _, f := range Fields() {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// parseFields reads the settings of struct type t, embedded structs
// flattened as encoding/json flattens them.
func parseFields(t reflect.Type) ([]Field, error) {
	var out []Field
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			inner, err := parseFields(sf.Type)
			if err != nil {
				return nil, err
			}
			for _, f := range inner {
				f.index = append([]int{i}, f.index...)
				out = append(out, f)
			}
			continue
		}
		f, err := parseField(sf)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", sf.Name, err)
		}
		f.index = []int{i}
		out = append(out, f)
	}
	return out, nil
}

func parseField(sf reflect.StructField) (Field, error) {
	f := Field{GoName: sf.Name, Doc: sf.Tag.Get("doc"), Default: sf.Tag.Get("default")}
	jsonName, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
	if jsonName == "" || jsonName == "-" {
		return f, fmt.Errorf("no json name")
	}
	f.JSON, f.OmitEmpty = jsonName, strings.Contains(","+opts+",", ",omitempty,")
	name, flags, _ := strings.Cut(sf.Tag.Get("hcl"), ",")
	if name == "" {
		return f, fmt.Errorf("no hcl tag (\"-\" when a block sets it)")
	}
	if name != "-" {
		f.Name = name
	}
	for fl := range strings.SplitSeq(flags, ",") {
		switch fl {
		case "":
		case "required":
			f.Required = true
		case "trace":
			f.Trace = true
		default:
			return f, fmt.Errorf("unknown hcl flag %q", fl)
		}
	}
	t := sf.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int:
		f.Kind = Whole
	case reflect.Float64:
		f.Kind = Number
	case reflect.String:
		f.Kind = String
	case reflect.Bool:
		f.Kind = Bool
	case reflect.Slice:
		f.Kind = List
	default:
		return f, fmt.Errorf("type %s is not a setting's", sf.Type)
	}
	if min := sf.Tag.Get("min"); min != "" {
		b, err := parseBound(min)
		if err != nil {
			return f, err
		}
		f.Min = &b
	}
	if max := sf.Tag.Get("max"); max != "" {
		v, ok := namedMax[max]
		if !ok {
			var err error
			if v, err = strconv.ParseFloat(max, 64); err != nil || v <= 0 {
				return f, fmt.Errorf("max %q is neither a positive number nor one of tokens, requests, seconds", max)
			}
		}
		f.Max = v
	}
	if (f.Kind == Whole || f.Kind == Number) && f.Name != "" && f.Max == 0 {
		return f, fmt.Errorf("a number needs a max")
	}
	if c := sf.Tag.Get("oneof"); c != "" {
		f.Choices = strings.Fields(c)
	}
	switch r := Role(sf.Tag.Get("role")); r {
	case RoleLane, RoleDeployment, RoleReport:
		f.Role = r
	default:
		return f, fmt.Errorf("role %q is not lane, deployment or report", r)
	}
	return f, nil
}

// parseBound reads a min tag: ">0", ">=0", ">=0.001 (why)".
func parseBound(s string) (Bound, error) {
	var b Bound
	s, why, _ := strings.Cut(s, " (")
	b.Why = strings.TrimSuffix(why, ")")
	switch {
	case strings.HasPrefix(s, ">="):
		s = s[2:]
	case strings.HasPrefix(s, ">"):
		s, b.Strict = s[1:], true
	default:
		return b, fmt.Errorf("min %q is not >N or >=N", s)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return b, fmt.Errorf("min %q: %w", s, err)
	}
	b.Value = v
	return b, nil
}

// Value returns the setting's value in s (the default for a nil pointer):
// an int, float64, string, bool or []float64.
func (f Field) Value(s *Settings) any {
	v := reflect.ValueOf(s).Elem().FieldByIndex(f.index)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return f.defaultValue()
		}
		v = v.Elem()
	}
	return v.Interface()
}

// Set stores x (an int, float64, string or bool as Value returns them) as
// the setting's value in s. A pointer setting stays nil when x is its
// default, so spelling the default out keeps a lane's ID.
func (f Field) Set(s *Settings, x any) {
	v := reflect.ValueOf(s).Elem().FieldByIndex(f.index)
	if v.Kind() == reflect.Pointer {
		if x == f.defaultValue() {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(reflect.ValueOf(x))
		v.Set(p)
		return
	}
	v.Set(reflect.ValueOf(x))
}

// defaultValue is the Default tag as a Go value of the setting's kind.
func (f Field) defaultValue() any {
	switch f.Kind {
	case Whole:
		n, _ := strconv.Atoi(f.Default)
		return n
	case Number:
		x, _ := strconv.ParseFloat(f.Default, 64)
		return x
	case Bool:
		return f.Default == "true"
	case String:
		return f.Default
	}
	return nil
}
