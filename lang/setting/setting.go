// Package setting reads settings declared as struct fields: each field's
// tags give the setting's HCL name, JSON name, type, bounds, default,
// choices, documentation and role. The blocks whose settings are declared
// this way (lang/shape's workload shape, lang/engine's runtime) parse their
// struct with Parse, and the spec language derives its attributes and
// their checks from the Fields.
//
// Tags: json the name in plans, state and IDs; hcl the attribute's name
// ("-": not an attribute) with flags required (must be set), trace (may be
// a trace percentile; the spec language decodes it itself), sensitive (may
// derive from a sensitive variable) and flag (the engine takes it as the
// command-line flag --NAME, underscores as dashes); min the lower bound
// (">0", ">=0", ">=0.001 (why)"); max the upper bound (a number or tokens,
// requests, seconds); default the value when unset; oneof the choices; doc
// the sentence that explains the setting in error messages; role what it
// changes: "lane" (the lane ID and the run), "deployment" (the server too)
// or "report" (only what reports show).
//
// The package imports nothing of the module, so every floor may use it.
package setting

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Kind is a setting's value type in the spec language.
type Kind int

// The kinds of settings.
const (
	Whole   Kind = iota + 1 // a whole number (a Go int)
	Number                  // a number (a Go float64)
	String                  // a string
	Bool                    // true or false
	List                    // a list of numbers, set by a block
	Strings                 // a list of strings
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

// Named upper bounds of numbers, named in max tags (the spec language's
// MaxTokens, MaxRequests and MaxSeconds are these).
const (
	// MaxTokens bounds token counts: a prompt, an output, a context.
	MaxTokens = 10_000_000
	// MaxRequests bounds the requests of a run or a search point.
	MaxRequests = 10_000_000
	// MaxSeconds bounds durations given in seconds (a day).
	MaxSeconds = 86_400
)

// Field is one declared setting, read from the tags of its struct field.
type Field struct {
	// Name is the attribute's name in its block ("" when a nested block
	// sets it); JSON its name in plans and IDs.
	Name, JSON string
	// GoName is the struct field's name.
	GoName string
	Kind   Kind
	// Required settings must be set; Trace ones may be a trace percentile
	// and are decoded by the spec language itself; Sensitive ones may
	// derive from a sensitive variable; Flag ones the engine takes as the
	// command-line flag FlagName.
	Required, Trace, Sensitive, Flag bool
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

// Parse reads the settings declared by the fields of struct type t, in
// their order, embedded structs flattened as encoding/json flattens them.
func Parse(t reflect.Type) ([]Field, error) { return parseFields(t) }

// MustParse is Parse for a package's own declaration, read once: a
// malformed tag panics, a programming error the package's tests catch.
func MustParse[T any]() func() []Field {
	return sync.OnceValue(func() []Field {
		out, err := Parse(reflect.TypeFor[T]())
		if err != nil {
			panic("setting: " + reflect.TypeFor[T]().String() + ": " + err.Error())
		}
		return out
	})
}

// Attributes lists the settings of fields that are attributes of a block.
func Attributes(fields []Field) []Field {
	var out []Field
	for _, f := range fields {
		if f.Name != "" {
			out = append(out, f)
		}
	}
	return out
}

// Lookup returns the setting of fields whose HCL name is name.
func Lookup(fields []Field, name string) (Field, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// FlagName is the engine's command-line flag of a Flag setting:
// "--max-num-seqs" for max_num_seqs.
func (f Field) FlagName() string { return "--" + strings.ReplaceAll(f.Name, "_", "-") }

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
		case "sensitive":
			f.Sensitive = true
		case "flag":
			f.Flag = true
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
		if t.Elem().Kind() == reflect.String {
			f.Kind = Strings
		}
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
		if f.Default != "" && !slices.Contains(f.Choices, f.Default) {
			return f, fmt.Errorf("default %q is not one of %q", f.Default, f.Choices)
		}
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

// Value returns the setting's value in *s, a pointer to the declaring
// struct (the default for a nil pointer): an int, float64, string, bool,
// []float64 or []string.
func (f Field) Value(s any) any {
	v := f.field(s)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return f.DefaultValue()
		}
		v = v.Elem()
	}
	return v.Interface()
}

// IsZero reports whether the setting's field in *s (a pointer to the
// declaring struct) holds its zero value, as omitempty leaves it out.
func (f Field) IsZero(s any) bool {
	v := f.field(s)
	if v.Kind() == reflect.Slice {
		return v.Len() == 0
	}
	return v.IsZero()
}

// field is the setting's field in *s.
func (f Field) field(s any) reflect.Value {
	return reflect.ValueOf(s).Elem().FieldByIndex(f.index)
}

// Set stores x (an int, float64, string, bool or []string as Value
// returns them) as the setting's value in *s, a pointer to the declaring
// struct. A pointer setting stays nil when x is its default, so spelling
// the default out keeps a lane's ID.
func (f Field) Set(s any, x any) {
	v := f.field(s)
	if v.Kind() == reflect.Pointer {
		if x == f.DefaultValue() {
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

// DefaultValue is the Default tag as a Go value of the setting's kind.
func (f Field) DefaultValue() any {
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
