package executor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Resolve returns an executor block's attributes as the executor will run
// with them: every attribute the block leaves out that has a Default gets
// it (lowered by its DefaultCap), and every duration is written in one
// canonical form ("1h30m", "20ms", "0s"), so a plan shows each value the
// executor will use and the same settings always read the same. Values
// Check would reject are left as given, for Check to report.
func (s Schema) Resolve(a Attrs) Attrs {
	out := make(Attrs, len(s.Attributes))
	for k, v := range a {
		out[k] = v
	}
	for _, at := range s.Attributes {
		if _, set := out[at.Name]; !set && at.Default != nil && at.DefaultCap == nil {
			out[at.Name] = copyJSON(at.Default)
		}
	}
	// Caps read the other attributes' resolved values.
	for _, at := range s.Attributes {
		if _, set := out[at.Name]; set || at.Default == nil || at.DefaultCap == nil {
			continue
		}
		def := copyJSON(at.Default)
		other, valid := out[at.DefaultCap.Attr], false
		for _, o := range s.Attributes {
			valid = valid || (o.Name == at.DefaultCap.Attr && o.CheckValue(other) == nil)
		}
		// A cap from a value Check rejects would only add a second error.
		if capped, ok := s.capped(at, def, other); ok && valid {
			def = capped
		}
		out[at.Name] = def
	}
	for _, at := range s.Attributes {
		if str, ok := out[at.Name].(string); ok && at.Type == AttrDuration {
			if d, err := time.ParseDuration(str); err == nil {
				out[at.Name] = FormatDuration(d)
			}
		}
	}
	return out
}

// capped is min(def, cap.Share x other) for a number or duration, or ok
// false when other is not one.
func (s Schema) capped(at Attribute, def, other any) (any, bool) {
	share := at.DefaultCap.Share
	switch at.Type {
	case AttrDuration:
		ds, ok1 := def.(string)
		os, ok2 := other.(string)
		if !ok1 || !ok2 {
			return nil, false
		}
		d, err1 := time.ParseDuration(ds)
		o, err2 := time.ParseDuration(os)
		if err1 != nil || err2 != nil {
			return nil, false
		}
		c := time.Duration(math.Round(float64(o)*share/float64(time.Millisecond))) * time.Millisecond
		return FormatDuration(min(d, c)), true
	case AttrNumber:
		d, ok1 := def.(float64)
		o, ok2 := other.(float64)
		if !ok1 || !ok2 {
			return nil, false
		}
		return math.Min(d, o*share), true
	}
	return nil, false
}

// FormatDuration writes d as a Go duration without trailing zero units:
// "24h", "1h30m", "1m", "500ms", "0s".
func FormatDuration(d time.Duration) string {
	s := d.String()
	for _, z := range []string{"m0s", "h0m"} {
		if strings.HasSuffix(s, z) {
			s = strings.TrimSuffix(s, z[1:])
		}
	}
	return s
}

// DecodeSettings decodes a lane's resolved executor settings (the plan's
// executor_settings: Schema.Resolve of the block) into out, a pointer to
// the executor's settings struct, whose fields are tagged with the
// schema's attribute names (`json:"timeout"`); a duration attribute's
// field is a time.Duration. It is strict: an attribute the schema does not
// declare, a value of the wrong type or out of bounds, and a defaulted
// attribute that is missing (the planner resolves every one, so an
// executor keeps no defaults of its own) are errors, an *AttrError when
// one attribute is at fault.
func DecodeSettings(typ string, s Schema, settings map[string]any, out any) error {
	if err := fieldsMatch(s, out); err != nil {
		return err
	}
	if err := Attrs(settings).Check(typ, s); err != nil {
		return err
	}
	m := make(map[string]any, len(settings))
	for _, at := range s.Attributes {
		v, ok := settings[at.Name]
		if !ok {
			if at.Default != nil {
				return AttrErrorf(at.Name, "executor type %q got no value, but the plan resolves every executor setting (this one's default is %s); make the plan again with this infercrane", typ, showJSON(at.Default))
			}
			continue
		}
		if at.Type == AttrDuration && v != nil {
			d, _ := time.ParseDuration(v.(string)) // Check parsed it
			v = int64(d)
		}
		m[at.Name] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("executor type %q: decode its settings: %w", typ, err)
	}
	return nil
}

// EncodeSettings is the inverse of DecodeSettings: the settings a typed
// settings struct holds, in the plan's form (durations as canonical
// strings, unset attributes without a default left out when zero). A test
// compares it with the plan's settings to show an executor runs with
// exactly those.
func EncodeSettings(s Schema, v any) (map[string]any, error) {
	if err := fieldsMatch(s, v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, at := range s.Attributes {
		x, ok := raw[at.Name]
		if !ok {
			continue
		}
		if at.Type == AttrDuration {
			if f, isNum := x.(float64); isNum {
				x = FormatDuration(time.Duration(f))
			}
		}
		if at.Default == nil && isZeroJSON(x) {
			continue
		}
		out[at.Name] = x
	}
	return out, nil
}

// fieldsMatch checks that the settings struct out points to has one field
// per schema attribute, tagged with its name, and no other: a programming
// error otherwise, which every executor's test would hit.
func fieldsMatch(s Schema, out any) error {
	t := reflect.TypeOf(out)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return fmt.Errorf("executor settings must decode into a struct, not %v", reflect.TypeOf(out))
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			fields[name] = t.Field(i).Type
		}
	}
	var problems []string
	for _, at := range s.Attributes {
		ft, ok := fields[at.Name]
		switch {
		case !ok:
			problems = append(problems, "no field for attribute "+at.Name)
		case at.Type == AttrDuration && ft != reflect.TypeOf(time.Duration(0)):
			problems = append(problems, "field for duration "+at.Name+" is not a time.Duration")
		}
		delete(fields, at.Name)
	}
	for name := range fields {
		problems = append(problems, "field "+name+" is no attribute")
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("settings struct %v does not match its schema: %s", t, strings.Join(problems, "; "))
	}
	return nil
}

func copyJSON(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyJSON(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyJSON(e)
		}
		return out
	case int:
		return float64(x)
	}
	return v
}

func isZeroJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case float64:
		return x == 0
	case bool:
		return !x
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// showJSON writes a default for messages ("30m" quoted, 1 bare).
func showJSON(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// DefaultText describes the attribute's default for listings ("default
// \"30m\"", "default \"20m\", at most 2/3 of timeout"); "" when it has none.
func (at Attribute) DefaultText() string {
	if at.Default == nil {
		return ""
	}
	s := "default " + showJSON(at.Default)
	if c := at.DefaultCap; c != nil {
		s += fmt.Sprintf(", at most %s of %s", fraction(c.Share), c.Attr)
	}
	return s
}

// fraction writes x as a small fraction ("2/3") when it is one.
func fraction(x float64) string {
	for den := 1; den <= 12; den++ {
		num := math.Round(x * float64(den))
		if num > 0 && math.Abs(num/float64(den)-x) < 1e-9 {
			if den == 1 {
				return strconv.FormatFloat(num, 'f', -1, 64) + " times"
			}
			return fmt.Sprintf("%d/%d", int(num), den)
		}
	}
	return strconv.FormatFloat(x, 'g', 4, 64) + " times"
}
